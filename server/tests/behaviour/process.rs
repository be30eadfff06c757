//! The `strad` binary itself: it creates its database, prints the local sign-in link, stops
//! cleanly on SIGTERM, and refuses a configuration that would expose local mode.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn database_exists(name: &str) -> bool {
    let out = Command::new("psql")
        .args([
            ADMIN_URL,
            "-tAc",
            &format!("SELECT 1 FROM pg_database WHERE datname = '{name}'"),
        ])
        .output()
        .expect("psql");
    String::from_utf8_lossy(&out.stdout).trim() == "1"
}

fn drop_database(name: &str) {
    let _ = Command::new("psql")
        .args([ADMIN_URL, "-qc", &format!("DROP DATABASE IF EXISTS {name}")])
        .status();
}

#[test]
fn strad_creates_its_database_prints_a_link_and_stops_on_sigterm() {
    let port = free_port();
    let database = format!("strad_process_{}_{port}", std::process::id());
    drop_database(&database);
    let mut child = Command::new(env!("CARGO_BIN_EXE_strad"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("STRAD_BIND", format!("127.0.0.1:{port}"))
        .env(
            "DATABASE_URL",
            format!("postgres://postgres@127.0.0.1:5432/{database}"),
        )
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("strad starts");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).expect("a line on stdout");
    assert!(
        line.starts_with(&format!(
            "strad local mode: sign in (one time) at http://127.0.0.1:{port}/auth/local?code="
        )),
        "{line}"
    );
    assert!(database_exists(&database), "the database was created");

    let ready = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://127.0.0.1:{port}/readyz"),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ready.stdout), "200");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "strad stops within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "a clean exit: {exit}");
    drop_database(&database);
}

fn start_with(env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strad"))
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("strad runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn strad_refuses_to_serve_local_mode_beyond_loopback() {
    let (code, stderr) = start_with(&[
        ("STRAD_BIND", "0.0.0.0:3000"),
        ("STRAD_PUBLIC_URL", "http://127.0.0.1:3000"),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("STRAD_BIND"), "{stderr}");
    assert!(stderr.contains("without an OIDC issuer"), "{stderr}");
}

#[test]
fn strad_names_a_missing_setting_and_prints_no_secret() {
    let (code, stderr) = start_with(&[
        ("STRAD_OIDC_ISSUER", "https://id.example.com"),
        ("STRAD_OIDC_CLIENT_ID", "strad"),
        ("STRAD_OIDC_CLIENT_SECRET", "do-not-print-me"),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("STRAD_ALLOWED_DOMAINS"), "{stderr}");
    assert!(!stderr.contains("do-not-print-me"), "{stderr}");
}
