//! Appends make one chain, even concurrently; the database refuses to change rows, and any
//! edit, deletion or swap made behind its back is found at the right row.

use super::*;

#[sqlx::test(migrations = false)]
async fn appended_rows_verify_with_nothing_broken(pool: PgPool) {
    migrated(&pool).await;
    assert_eq!(
        first_broken_row(&pool).await,
        None,
        "an empty log is intact"
    );
    five_rows(&pool).await;
    assert_eq!(first_broken_row(&pool).await, None);
}

/// The database error of a statement the append-only triggers refused.
fn refused_as_append_only(result: Result<sqlx::postgres::PgQueryResult, sqlx::Error>) {
    let err = result.expect_err("the statement is refused");
    let db = err.as_database_error().expect("a database error");
    assert_eq!(db.constraint(), Some("audit_log_append_only"), "{err}");
}

#[sqlx::test(migrations = false)]
async fn the_database_refuses_to_update_delete_or_truncate_audit_rows(pool: PgPool) {
    migrated(&pool).await;
    let ids = five_rows(&pool).await;
    // The pool strad's own statements run on: the same role as the application's.
    let strads = strad_server::db::pool_options()
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    refused_as_append_only(
        sqlx::query("UPDATE audit_log SET payload = '{}' WHERE id = $1")
            .bind(ids[2])
            .execute(&strads)
            .await,
    );
    refused_as_append_only(
        sqlx::query("DELETE FROM audit_log WHERE id = $1")
            .bind(ids[4])
            .execute(&strads)
            .await,
    );
    refused_as_append_only(sqlx::query("TRUNCATE audit_log").execute(&strads).await);
    strads.close().await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 5);
    assert_eq!(first_broken_row(&pool).await, None);
    append(&pool, &alice(), "sign_in", None, json!({})).await;
    assert_eq!(first_broken_row(&pool).await, None, "appending still works");
}

#[sqlx::test(migrations = false)]
async fn an_edited_payload_is_found_at_exactly_that_row(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("UPDATE audit_log SET payload = '{\"tool\": \"delete_everything\", \"n\": 1}' WHERE id = $1")
        .bind(ids[2])
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, Some(ids[2]));
}

#[sqlx::test(migrations = false)]
async fn an_edited_actor_kind_slug_or_time_is_found_at_that_row(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    for edit in [
        "UPDATE audit_log SET actor_email = 'mallory@example.com' WHERE id = $1",
        "UPDATE audit_log SET actor_id = gen_random_uuid() WHERE id = $1",
        "UPDATE audit_log SET kind = 'nothing_happened' WHERE id = $1",
        "UPDATE audit_log SET slug = 'other' WHERE id = $1",
        "UPDATE audit_log SET at = at - interval '1 microsecond' WHERE id = $1",
    ] {
        sqlx::query("TRUNCATE audit_log")
            .execute(&pool)
            .await
            .unwrap();
        let ids = five_rows(&pool).await;
        sqlx::query(edit).bind(ids[2]).execute(&pool).await.unwrap();
        assert_eq!(first_broken_row(&pool).await, Some(ids[2]), "{edit}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_deleted_middle_row_is_found_at_the_row_after_it(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("DELETE FROM audit_log WHERE id = $1")
        .bind(ids[2])
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, Some(ids[3]));
}

#[sqlx::test(migrations = false)]
async fn a_deleted_first_row_is_found_at_the_new_first_row(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("DELETE FROM audit_log WHERE id = $1")
        .bind(ids[0])
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, Some(ids[1]));
}

#[sqlx::test(migrations = false)]
async fn two_swapped_rows_are_found_at_the_first_of_them(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    // Every column the hash covers, plus the stored hashes, trade places between two ids.
    sqlx::query(
        "UPDATE audit_log a
         SET at = b.at, actor_id = b.actor_id, actor_email = b.actor_email, kind = b.kind,
             slug = b.slug, payload = b.payload, prev_hash = b.prev_hash, hash = b.hash
         FROM (SELECT * FROM audit_log WHERE id IN ($1, $2)) b
         WHERE a.id IN ($1, $2) AND b.id <> a.id",
    )
    .bind(ids[1])
    .bind(ids[3])
    .execute(&pool)
    .await
    .unwrap();
    let kinds: Vec<String> = sqlx::query_scalar("SELECT kind FROM audit_log ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(kinds[1], "revocation", "the swap happened");
    assert_eq!(first_broken_row(&pool).await, Some(ids[1]));
}

#[sqlx::test(migrations = false)]
async fn five_hundred_concurrent_audited_changes_make_one_unbroken_chain(pool: PgPool) {
    migrated(&pool).await;
    let connect = (*pool.connect_options()).clone();
    // sqlx::test runs on one thread; the writers get a runtime with several, and a pool of
    // their own on it, so appends truly race for the lock.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(8)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let writers = sqlx::postgres::PgPoolOptions::new()
                .max_connections(16)
                .connect_with(connect)
                .await
                .unwrap();
            let tasks: Vec<_> = (0..500)
                .map(|n| {
                    let writers = writers.clone();
                    tokio::spawn(async move {
                        let actor = Actor::person(Uuid::new_v4(), &format!("p{n}@example.com"));
                        let mut tx = writers.begin().await.unwrap();
                        // The audited change itself, in the same transaction as its row.
                        sqlx::query("SELECT pg_sleep(0.001)")
                            .execute(&mut *tx)
                            .await
                            .unwrap();
                        let event = AuditEvent::HostAction {
                            action: "download",
                            decision: "approved",
                            detail: json!({"n": n}),
                        };
                        writer::append(&mut tx, &actor, &event, Some("github"))
                            .await
                            .unwrap();
                        tx.commit().await.unwrap();
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("every append succeeds");
            }
            writers.close().await;
        });
    })
    .join()
    .expect("the writers finish");

    let links: Vec<(Vec<u8>, Vec<u8>)> =
        sqlx::query_as("SELECT prev_hash, hash FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(links.len(), 500);
    let mut prev = GENESIS.to_vec();
    for (i, (prev_hash, hash)) in links.iter().enumerate() {
        assert_eq!(prev_hash, &prev, "row {i} links to the row before it");
        prev = hash.clone();
    }
    let distinct: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT payload->'detail'->'n') FROM audit_log")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(distinct, 500, "every change has its own row");
    assert_eq!(first_broken_row(&pool).await, None);
}

/// Every writer takes the chain's lock, `writer::AUDIT_LOCK`: while another transaction holds
/// it (strad on another instance, or a tool appending through `audit_append`), an append
/// waits on exactly that lock, and goes on, chained, once it is released.
#[sqlx::test(migrations = false)]
async fn an_append_waits_while_another_transaction_holds_the_chains_lock(pool: PgPool) {
    migrated(&pool).await;
    let mut holder = pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(writer::AUDIT_LOCK)
        .execute(&mut *holder)
        .await
        .unwrap();
    let appending = tokio::spawn({
        let pool = pool.clone();
        async move {
            let event = AuditEvent::HostAction {
                action: "download",
                decision: "approved",
                detail: json!({}),
            };
            writer::append_alone(&pool, &Actor::system(), &event, None).await
        }
    });
    // PostgreSQL lists the append's request for the lock, not granted: it waits on that key.
    // Advisory locks are per database; other tests' databases take the same key.
    eventually(10, "the append to wait for the chain's lock", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND classid = ($1 >> 32)::oid AND objid = ($1 & 4294967295)::oid AND objsubid = 1",
        )
        .bind(writer::AUDIT_LOCK)
        .fetch_one(&pool)
        .await
        .unwrap();
        (waiting == 1).then_some(())
    })
    .await;
    assert!(!appending.is_finished(), "no row while the lock is held");
    holder.commit().await.unwrap();
    appending
        .await
        .unwrap()
        .expect("appended once the lock is free");
    assert_eq!(first_broken_row(&pool).await, None);
}
