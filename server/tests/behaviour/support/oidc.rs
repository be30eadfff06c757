//! A real OpenID Connect issuer — `oidc-provider` from npm — on its own loopback port, and
//! the steps of a sign-in through it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use reqwest::header::LOCATION;
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{TestApp, bind, spawn_app_on};

pub const CLIENT_ID: &str = "strad-test";
pub const CLIENT_SECRET: &str = "test-secret-!@#";

/// A real OpenID Connect issuer (`end2end/support/oidc-issuer.mjs`).
pub struct Issuer {
    pub url: String,
    _child: Child,
}

impl Issuer {
    pub async fn start(redirect_uri: &str) -> Issuer {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let script = root.join("end2end/support/oidc-issuer.mjs");
        assert!(
            root.join("end2end/node_modules/oidc-provider").exists(),
            "end2end/node_modules is missing: run `npm ci --prefix end2end` (the test command does)"
        );
        let mut child = Command::new("node")
            .arg(&script)
            .env("PORT", "0")
            .env("CLIENT_ID", CLIENT_ID)
            .env("CLIENT_SECRET", CLIENT_SECRET)
            .env("REDIRECT_URI", redirect_uri)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the issuer");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the issuer starts within 30 s")
            .expect("read")
            .expect("the issuer prints its address");
        let ready: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
        let url = ready["issuer"].as_str().expect("issuer").to_owned();
        Issuer { url, _child: child }
    }

    /// Chooses the account the issuer signs in as next.
    pub async fn next_account(&self, sub: &str) {
        let status = reqwest::Client::new()
            .post(format!("{}/test/next-account?sub={sub}", self.url))
            .send()
            .await
            .expect("issuer control")
            .status();
        assert_eq!(status, 204, "the issuer knows {sub}");
    }
}

/// strad with OIDC against a fresh issuer. Allowed domains: example.com and corp.test.
pub async fn spawn_app_with_issuer(pool: PgPool, extra_env: &[(&str, &str)]) -> (TestApp, Issuer) {
    let (listener, base) = bind().await;
    let issuer = Issuer::start(&format!("{base}/auth/callback")).await;
    let mut env = vec![
        ("STRAD_OIDC_ISSUER", issuer.url.as_str()),
        ("STRAD_OIDC_CLIENT_ID", CLIENT_ID),
        ("STRAD_OIDC_CLIENT_SECRET", CLIENT_SECRET),
        ("STRAD_ALLOWED_DOMAINS", "example.com,corp.test"),
    ];
    env.extend_from_slice(extra_env);
    let app = spawn_app_on(pool, listener, base, &env).await;
    (app, issuer)
}

pub fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(LOCATION)
        .unwrap_or_else(|| {
            panic!(
                "a redirect, got {} from {}",
                response.status(),
                response.url()
            )
        })
        .to_str()
        .unwrap()
        .to_owned()
}

/// Follows redirects (keeping cookies) until one points at `stop_prefix`; returns that URL
/// without requesting it.
pub async fn follow_until(client: &reqwest::Client, start: &str, stop_prefix: &str) -> String {
    let mut url = start.to_owned();
    for _ in 0..10 {
        if url.starts_with(stop_prefix) {
            return url;
        }
        let response = client.get(&url).send().await.expect("request");
        assert!(
            response.status().is_redirection(),
            "{} answered {}",
            url,
            response.status()
        );
        let next = location(&response);
        url = reqwest::Url::parse(&url)
            .unwrap()
            .join(&next)
            .unwrap()
            .to_string();
    }
    panic!("too many redirects from {start}");
}

/// Starts a sign-in at strad; returns the issuer authorization URL strad redirected to.
pub async fn start_sign_in(app: &TestApp, client: &reqwest::Client) -> String {
    let response = client
        .get(app.url("/auth/login?next=/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    location(&response)
}

/// Runs the issuer's part of a sign-in; returns the callback URL (code, state, iss).
pub async fn callback_url(app: &TestApp, client: &reqwest::Client, authorize_url: &str) -> String {
    follow_until(client, authorize_url, &app.url("/auth/callback")).await
}

/// Requests the callback; returns where strad sent the browser.
pub async fn finish(client: &reqwest::Client, callback: &str) -> String {
    let response = client.get(callback).send().await.unwrap();
    assert_eq!(response.status(), 303, "the callback redirects");
    location(&response)
}

/// Signs in through the issuer as `sub`; returns where strad sent the browser.
pub async fn sign_in_as(
    app: &TestApp,
    issuer: &Issuer,
    client: &reqwest::Client,
    sub: &str,
) -> String {
    issuer.next_account(sub).await;
    let authorize = start_sign_in(app, client).await;
    let callback = callback_url(app, client, &authorize).await;
    finish(client, &callback).await
}

pub fn with_query(url: &str, key: &str, value: &str) -> String {
    let mut parsed = reqwest::Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == key {
                value.to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.to_string()
}

pub fn query_param(url: &str, key: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}
