//! The audit writer of tool calls: rows written together chain like rows written alone, in
//! their own transaction, flushed as told, and the writer outlives a lost connection.

use super::*;

/// Tool calls' rows arrive together and are written together (`appender::Appender`): each
/// caller gets its own row's id once committed, and the chain holds as if each had been
/// appended alone, interleaved with rows appended alone.
#[sqlx::test(migrations = false)]
async fn rows_appended_together_chain_like_rows_appended_alone(pool: PgPool) {
    migrated(&pool).await;
    let appender = appender::Appender::spawn(pool.clone(), writer::Flush::default());
    let calls = (0..64).map(|n| {
        let appender = appender.clone();
        let pool = pool.clone();
        async move {
            let event = call_row(n);
            if n % 8 == 0 {
                let actor = writer::Actor::system();
                writer::append_alone(&pool, &actor, &event, None)
                    .await
                    .unwrap()
            } else {
                appender
                    .append(writer::Event {
                        actor: writer::Actor::person(uuid::Uuid::new_v4(), "a@example.com"),
                        event,
                        slug: Some("s".into()),
                    })
                    .await
                    .unwrap()
            }
        }
    });
    let mut ids = futures::future::join_all(calls).await;
    let stored: Vec<(i64, i64)> =
        sqlx::query_as("SELECT id, (payload->>'bytes_in')::bigint FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(stored.len(), 64);
    for (n, id) in ids.iter().enumerate() {
        assert!(
            stored.contains(&(*id, n as i64)),
            "row {n} is the one its caller was told"
        );
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 64);
    assert_eq!(first_broken_row(&pool).await, None);
}

/// A tool call's row, told apart from the others by `n` (its `bytes_in`).
fn call_row(n: u32) -> AuditEvent {
    AuditEvent::ToolCall(ToolCallRow {
        surface: Surface::App,
        tool: "t".into(),
        arguments_sha256: "a".into(),
        outcome: "ok".into(),
        bytes_in: n as usize,
        bytes_out: 0,
        token_id: None,
        reference: None,
    })
}

fn together(n: u32) -> writer::Event {
    writer::Event {
        actor: writer::Actor::system(),
        event: call_row(n),
        slug: None,
    }
}

/// Group commit: while tool calls are running, a row waits for theirs, and the rows go in
/// one commit as soon as the last running call has appended (long before the wait is up).
#[sqlx::test(migrations = false)]
async fn a_row_waits_for_the_rows_of_calls_still_running(pool: PgPool) {
    migrated(&pool).await;
    let appender = appender::Appender::spawn_lingering(pool.clone(), Duration::from_secs(60));
    let (first, second) = (appender.running(), appender.running());
    let mut early = tokio::spawn(first.append(together(1)));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut early)
            .await
            .is_err(),
        "the first row waits while another call runs"
    );
    assert_eq!(appender.written_so_far(), (0, 0));
    let late = tokio::time::timeout(Duration::from_secs(20), second.append(together(2)))
        .await
        .expect("the last running call's row ends the wait");
    late.unwrap();
    early.await.unwrap().unwrap();
    assert_eq!(appender.written_so_far(), (1, 2), "one commit, two rows");
    assert_eq!(first_broken_row(&pool).await, None);
}

/// A row with no call running is committed at once, whatever the wait; so is a row whose
/// fellow call ended without a row (refused, failed, cancelled); and a call that runs on
/// and on holds others' rows for the wait at most.
#[sqlx::test(migrations = false)]
async fn a_row_waits_for_nobody_when_no_call_runs(pool: PgPool) {
    migrated(&pool).await;
    let appender = appender::Appender::spawn_lingering(pool.clone(), Duration::from_secs(60));
    let soon = Duration::from_secs(20);
    tokio::time::timeout(soon, appender.append(together(1)))
        .await
        .expect("nothing runs: no wait")
        .unwrap();
    let alone = appender.running();
    tokio::time::timeout(soon, alone.append(together(2)))
        .await
        .expect("the only running call's own row does not wait for itself")
        .unwrap();
    let (gone, own) = (appender.running(), appender.running());
    let pending = tokio::spawn(own.append(together(3)));
    drop(gone);
    tokio::time::timeout(soon, pending)
        .await
        .expect("a call that ended without a row ends the wait")
        .unwrap()
        .unwrap();
    assert_eq!(appender.written_so_far(), (3, 3));

    let short = appender::Appender::spawn_lingering(pool.clone(), Duration::from_millis(200));
    let _runs_on = short.running();
    tokio::time::timeout(soon, short.append(together(4)))
        .await
        .expect("a call that runs on holds others' rows for the wait at most")
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, None);
}

/// Tool calls' rows are committed before their callers are answered, and flushed to disk
/// in the background unless strad is told to wait for the disk (`writer::Flush`): the
/// statement that appends them sets that for its own transaction only.
#[sqlx::test(migrations = false)]
async fn rows_written_together_are_flushed_as_told_in_their_own_transaction(pool: PgPool) {
    migrated(&pool).await;
    let setting = |flush| {
        let pool = pool.clone();
        async move {
            use sqlx::Connection;
            let mut connection = pool.acquire().await.unwrap();
            let show = "SHOW synchronous_commit";
            let mut tx = connection.begin().await.unwrap();
            let before: String = sqlx::query_scalar(show).fetch_one(&mut *tx).await.unwrap();
            let event = together(1);
            writer::append_many(&mut tx, &[&event], flush)
                .await
                .unwrap();
            let during: String = sqlx::query_scalar(show).fetch_one(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
            let after: String = sqlx::query_scalar(show)
                .fetch_one(&mut *connection)
                .await
                .unwrap();
            (before, during, after)
        }
    };
    let on = || "on".to_string();
    assert_eq!(
        setting(writer::Flush::Background).await,
        (on(), "off".to_string(), on())
    );
    assert_eq!(
        setting(writer::Flush::BeforeAnswer).await,
        (on(), on(), on())
    );
    let appender = appender::Appender::spawn(pool.clone(), writer::Flush::Background);
    let id = appender.append(together(2)).await.unwrap();
    let committed: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(committed, 1, "the row is committed when its caller is told");
    assert_eq!(first_broken_row(&pool).await, None);
}

/// The writer keeps one connection; when that connection is lost, the row written on it is
/// reported as not appended (its caller answers with an error, never a silent loss), and
/// the next row goes in on a new connection.
#[sqlx::test(migrations = false)]
async fn the_writer_takes_a_new_connection_when_its_own_is_lost(pool: PgPool) {
    migrated(&pool).await;
    let appender = appender::Appender::spawn(pool.clone(), writer::Flush::default());
    appender.append(together(1)).await.unwrap();
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query LIKE '%audit_chain_head%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(ended, [true], "the writer's one connection was ended");
    assert!(appender.append(together(2)).await.is_err());
    appender.append(together(3)).await.unwrap();
    let rows: Vec<i64> =
        sqlx::query_scalar("SELECT (payload->>'bytes_in')::bigint FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(rows, [1, 3]);
    assert_eq!(first_broken_row(&pool).await, None);
}
