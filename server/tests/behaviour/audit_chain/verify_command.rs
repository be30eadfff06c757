//! `strad audit verify` and the audit page's chain check: what they say of a good, a
//! tampered and an empty chain, and their exit codes.

use super::*;

/// Runs `strad audit verify` against the test database with nothing else configured, and
/// with the listen address already taken, so a command that tried to serve would fail.
async fn audit_verify(pool: &PgPool, args: &[&str]) -> Output {
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .unwrap();
    let mut url = url::Url::parse(
        &std::env::var("DATABASE_URL").expect("DATABASE_URL is set for sqlx::test"),
    )
    .unwrap();
    url.set_path(&database);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = std::env::temp_dir();
    tokio::task::spawn_blocking({
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let bind = taken.local_addr().unwrap().to_string();
        move || {
            let output = Command::new(env!("CARGO_BIN_EXE_strad"))
                .args(&args)
                .current_dir(dir)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("DATABASE_URL", url.as_str())
                .env("STRAD_BIND", bind)
                .env("RUST_LOG", "warn")
                .output()
                .expect("strad runs");
            drop(taken);
            output
        }
    })
    .await
    .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[sqlx::test(migrations = false)]
async fn strad_audit_verify_says_intact_and_exits_0_on_a_good_chain(pool: PgPool) {
    migrated(&pool).await;
    five_rows(&pool).await;
    let (id, hash) = head(&pool).await;
    let output = audit_verify(&pool, &["audit", "verify"]).await;
    assert_eq!(
        stdout(&output),
        format!("audit log intact: 5 rows\nhead: row {id}, sha256 {hash}\n")
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[sqlx::test(migrations = false)]
async fn strad_audit_verify_names_the_broken_row_and_exits_1_on_a_tampered_chain(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("UPDATE audit_log SET payload = '{}' WHERE id = $1")
        .bind(ids[3])
        .execute(&pool)
        .await
        .unwrap();
    let (id, hash) = head(&pool).await;
    let output = audit_verify(&pool, &["audit", "verify"]).await;
    assert_eq!(
        stdout(&output),
        format!(
            "audit log broken at row {}\nhead: row {id}, sha256 {hash}\n",
            ids[3]
        )
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
}

#[sqlx::test(migrations = false)]
async fn strad_audit_verify_says_an_empty_log_has_no_head(pool: PgPool) {
    migrated(&pool).await;
    let output = audit_verify(&pool, &["audit", "verify"]).await;
    assert_eq!(
        stdout(&output),
        "audit log intact: 0 rows\nhead: none (the log is empty)\n"
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[sqlx::test(migrations = false)]
async fn the_chain_check_of_the_audit_page_names_the_head(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (id, hash) = head(&app.pool).await;
    let report: Value = server_fn(&app, &admin, "audit/verify", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(report["first_broken"], Value::Null, "{report}");
    assert_eq!(report["head"], json!({"id": id, "hash": hash}), "{report}");
}

#[sqlx::test(migrations = false)]
async fn strad_with_unknown_arguments_prints_usage_and_exits_2(pool: PgPool) {
    for args in [&["audit"][..], &["audit", "check"], &["--verify"]] {
        let output = audit_verify(&pool, args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("usage: strad"),
            "{args:?}: {output:?}"
        );
    }
}
