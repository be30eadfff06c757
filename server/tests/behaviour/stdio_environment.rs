//! A stdio server starts with a clean environment: strad's own settings and secrets
//! (`DATABASE_URL`, the OIDC client secret, whatever else its environment holds) stay with
//! strad; the child gets `PATH`, `HOME`, `LANG` and `TZ` from strad, and the `env` its
//! `[[servers]]` entry declares.

use std::collections::HashMap;
use std::time::Duration;

use crate::support::*;
use sqlx::PgPool;

/// A stdio "server" that writes its environment, as JSON, to the file named by its argument
/// and exits. Discovery starts it at start-up.
const REPORT_ENVIRONMENT: &str =
    "require('fs').writeFileSync(process.argv[1], JSON.stringify(process.env))";

async fn read_report(path: &std::path::Path) -> HashMap<String, String> {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(env) = serde_json::from_str(&text)
        {
            let _ = std::fs::remove_file(path);
            return env;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the stdio server did not report its environment within 10 s");
}

#[sqlx::test(migrations = false)]
async fn a_stdio_server_gets_only_the_allowed_variables_and_its_declared_env(pool: PgPool) {
    let strads: HashMap<String, String> = std::env::vars().collect();
    assert!(
        strads.contains_key("DATABASE_URL"),
        "strad's environment (this process's) holds the database's address and credentials"
    );
    let report = std::env::temp_dir().join(format!("strad-env-{}.json", uuid::Uuid::new_v4()));
    let file = format!(
        r#"
[[servers]]
slug = "env-report"
command = ["node", "-e", "{REPORT_ENVIRONMENT}", "{}"]
capabilities = ["tools"]
env = {{ GREETING = "hello", LANG = "C.UTF-8" }}
"#,
        report.display()
    );
    let app = spawn_app_with_file(pool, &file, &[("STRAD_DISCOVERY_INTERVAL_SECONDS", "0")]).await;
    let child = read_report(&report).await;
    app.shut_down().await.unwrap();

    assert!(!child.contains_key("DATABASE_URL"), "{child:?}");
    let allowed = ["PATH", "HOME", "LANG", "TZ", "GREETING"];
    let mut unexpected: Vec<&String> = child
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    unexpected.sort();
    assert!(
        unexpected.is_empty(),
        "strad's environment reached the child: {unexpected:?}"
    );
    assert_eq!(child.get("GREETING").map(String::as_str), Some("hello"));
    assert_eq!(
        child.get("LANG").map(String::as_str),
        Some("C.UTF-8"),
        "a declared variable wins over strad's own"
    );
    for inherited in ["PATH", "HOME", "TZ"] {
        assert_eq!(child.get(inherited), strads.get(inherited), "{inherited}");
    }
}
