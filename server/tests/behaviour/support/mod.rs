//! The test harness: a real strad on a loopback port over a fresh database, an HTTP client
//! that keeps cookies and does not follow redirects, and (for sign-in tests) a real OpenID
//! Connect issuer — `oidc-provider` from npm — started on its own loopback port.

#![allow(dead_code)]

pub mod mcp;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::LOCATION;
use sqlx::PgPool;
use strad_server::auth::local::LocalLinks;
use strad_server::config::Config;
use strad_server::startup::Application;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

pub const CLIENT_ID: &str = "strad-test";
pub const CLIENT_SECRET: &str = "test-secret-!@#";

pub struct TestApp {
    pub base: String,
    /// The test's own pool on the test database, for assertions.
    pub pool: PgPool,
    pub client: reqwest::Client,
    pub local: Option<Arc<LocalLinks>>,
    /// What the server remembers of authority.
    pub memos: Arc<strad_server::memo::Memos>,
    /// The audit writer of tool calls.
    pub audit: app::audit::ssr::writer::Appender,
    stop: Option<oneshot::Sender<()>>,
    server: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// Returns once the server has heard every change committed before the call: for a
    /// test that changes authority in the database behind strad's back, as another
    /// instance or the command line would.
    pub async fn caught_up(&self) {
        for _ in 0..50 {
            let heard = tokio::time::timeout(
                std::time::Duration::from_millis(200),
                self.memos.caught_up(&self.pool),
            );
            if let Ok(sent) = heard.await {
                sent.expect("pg_notify");
                return;
            }
        }
        panic!("the server did not hear its changes within 10 s");
    }

    /// A second browser: its own cookie jar.
    pub fn new_browser(&self) -> reqwest::Client {
        client()
    }

    /// Stops the server the way SIGTERM does and waits for it to finish.
    pub async fn shut_down(mut self) -> std::io::Result<()> {
        self.stop_server()
    }

    fn stop_server(&mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.server.take() {
            Some(server) => server.join().expect("the server thread does not panic"),
            None => Ok(()),
        }
    }
}

impl Drop for TestApp {
    /// Stops the server and waits, so its connections are closed before sqlx::test drops
    /// the test database.
    fn drop(&mut self) {
        let _ = self.stop_server();
    }
}

/// A browser on the console's own pages: it says `Sec-Fetch-Site: same-origin` as a
/// browser's fetch from a console page does, so its writes pass the write gate. A test of
/// another site's request sets its own `Sec-Fetch-Site` or `Origin`.
pub fn client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "sec-fetch-site",
        reqwest::header::HeaderValue::from_static("same-origin"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// Binds a loopback port for strad before anything else, so the issuer can be told the
/// exact redirect URI.
pub async fn bind() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    (listener, base)
}

/// Runs strad the way production does: its own multi-threaded runtime (on a thread of its
/// own, with its own pool on the test database), not the test's single-threaded one.
pub async fn spawn_app_on(
    pool: PgPool,
    listener: TcpListener,
    base: String,
    extra_env: &[(&str, &str)],
) -> TestApp {
    spawn_app_with(pool, listener, base, extra_env, None).await
}

/// strad in local mode with a strad.toml.
pub async fn spawn_app_with_file(pool: PgPool, file: &str, extra_env: &[(&str, &str)]) -> TestApp {
    let (listener, base) = bind().await;
    spawn_app_with(pool, listener, base, extra_env, Some(file)).await
}

/// The name of the test server's threads (the benchmark counts their CPU time).
pub const STRAD_THREAD: &str = "strad-server";

pub async fn spawn_app_with(
    pool: PgPool,
    listener: TcpListener,
    base: String,
    extra_env: &[(&str, &str)],
    file: Option<&str>,
) -> TestApp {
    capture_logs();
    let mut env: HashMap<String, String> = HashMap::new();
    env.insert(
        "STRAD_BIND".into(),
        listener.local_addr().unwrap().to_string(),
    );
    env.insert("STRAD_PUBLIC_URL".into(), base.clone());
    env.insert(
        "STRAD_SITE_ROOT".into(),
        "target/site-absent-in-tests".into(),
    );
    for (key, value) in extra_env {
        env.insert(key.to_string(), value.to_string());
    }
    let config = Config::from_sources(file, &env).expect("config");
    let connect = (*pool.connect_options()).clone();
    let listener = listener.into_std().expect("std listener");
    type Ready = (
        Option<Arc<LocalLinks>>,
        Arc<strad_server::memo::Memos>,
        app::audit::ssr::writer::Appender,
    );
    let (ready, is_ready) = oneshot::channel::<Ready>();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        // The runtime the binary starts (`TOKIO_WORKER_THREADS`, else one fewer than the cores).
        let runtime = strad_server::runtime::build(STRAD_THREAD).expect("runtime");
        runtime.block_on(async move {
            let pool = strad_server::db::pool_options()
                .max_connections(8)
                .connect_with(connect)
                .await
                .expect("the server connects to the test database");
            let listener = TcpListener::from_std(listener).expect("listener");
            let app = Application::build_with(config, pool, listener)
                .await
                .expect("build");
            let _ = ready.send((app.local_links(), app.memos(), app.audit()));
            app.run_until(async {
                let _ = stopped.await;
            })
            .await
        })
    });
    let (local, memos, audit) = is_ready.await.expect("strad starts");
    TestApp {
        base,
        pool,
        client: client(),
        local,
        memos,
        audit,
        stop: Some(stop),
        server: Some(server),
    }
}

/// strad in local mode (no issuer).
pub async fn spawn_app(pool: PgPool) -> TestApp {
    spawn_app_with_env(pool, &[]).await
}

/// strad on a port of its own, with `extra_env` over the test settings.
pub async fn spawn_app_with_env(pool: PgPool, extra_env: &[(&str, &str)]) -> TestApp {
    let (listener, base) = bind().await;
    spawn_app_on(pool, listener, base, extra_env).await
}

/// A real OpenID Connect issuer (`end2end/support/oidc-issuer.mjs`).
pub struct Issuer {
    pub url: String,
    child: Child,
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
        Issuer { url, child }
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

/// Signs in through a local one-time link.
pub async fn sign_in_locally(app: &TestApp, client: &reqwest::Client) {
    let link = app.local.as_ref().expect("local mode").mint();
    let response = client.get(&link).send().await.unwrap();
    assert_eq!(location(&response), "/");
}

/// The home page's body; panics unless it is a 200.
pub async fn home_page(app: &TestApp, client: &reqwest::Client) -> String {
    let response = client.get(app.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 200, "home page");
    response.text().await.unwrap()
}

/// Whether this browser is signed in: the home page renders instead of redirecting.
pub async fn is_signed_in(app: &TestApp, client: &reqwest::Client) -> bool {
    let response = client.get(app.url("/")).send().await.unwrap();
    match response.status().as_u16() {
        200 => true,
        302 | 303 | 307 => {
            assert!(location(&response).starts_with("/sign-in"));
            false
        }
        other => panic!("home answered {other}"),
    }
}

pub async fn session_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session")
        .fetch_one(pool)
        .await
        .unwrap()
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

static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();

#[derive(Clone)]
struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends every log line of this test process (all the strads it runs) to a buffer that
/// tests can search.
fn capture_logs() {
    LOGS.get_or_init(|| {
        let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = LogWriter(buffer.clone());
        let _ = tracing_subscriber::fmt()
            .with_env_filter("warn,strad_app=info,strad_server=info")
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        buffer
    });
}

/// Every log line so far that contains all of `needles`.
pub fn log_lines(needles: &[&str]) -> Vec<String> {
    let logs = LOGS.get().expect("logs captured").lock().unwrap();
    String::from_utf8_lossy(&logs)
        .lines()
        .filter(|line| needles.iter().all(|n| line.contains(n)))
        .map(str::to_owned)
        .collect()
}

/// Polls `check` until it returns `Some`, or panics after `seconds`.
pub async fn eventually<T, F, Fut>(seconds: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Calls a server function the way the hydrated console does (form body, JSON answer).
pub async fn server_fn(
    app: &TestApp,
    client: &reqwest::Client,
    name: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let path = format!("/api/{name}");
    let request = if reads(&path) {
        client.get(app.url(&path)).query(form)
    } else {
        client.post(app.url(&path)).form(form)
    };
    request.send().await.unwrap()
}

/// Whether the server function at `path` is a read (GET): the console's reading functions
/// are, and everything else writes.
pub fn reads(path: &str) -> bool {
    leptos::server_fn::axum::server_fn_paths().any(|(p, method)| p == path && method == "GET")
}

/// The paths of every server function that writes (any method but GET), as registered.
pub fn writing_server_fns() -> Vec<String> {
    let mut paths: Vec<String> = leptos::server_fn::axum::server_fn_paths()
        .filter(|(_, method)| method != "GET")
        .map(|(p, _)| p.to_owned())
        .collect();
    paths.sort();
    paths
}

/// A browser signed in as local mode's admin, then left with only `roles` (and member).
pub async fn signed_in_with(app: &TestApp, roles: &[&str]) -> reqwest::Client {
    let browser = app.new_browser();
    sign_in_locally(app, &browser).await;
    sqlx::query("DELETE FROM user_roles WHERE NOT (role = ANY($1)) AND role <> 'member'")
        .bind(roles.iter().map(|r| r.to_string()).collect::<Vec<_>>())
        .execute(&app.pool)
        .await
        .unwrap();
    browser
}

/// A browser signed in as local mode's admin (every role).
pub async fn signed_in_admin(app: &TestApp) -> reqwest::Client {
    let browser = app.new_browser();
    sign_in_locally(app, &browser).await;
    browser
}

/// Makes the audit log refuse rows of `kind` (a trigger that raises), as a database that
/// cannot take them would; `audit_rows_accepted_again` undoes it.
pub async fn audit_refuses_rows_of(pool: &PgPool, kind: &str) {
    sqlx::raw_sql(&format!(
        "CREATE FUNCTION refuse_audit_rows() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'the audit log refuses this row'; END $$;
         CREATE TRIGGER refuse_audit_rows BEFORE INSERT ON audit_log FOR EACH ROW
         WHEN (NEW.kind = '{kind}') EXECUTE FUNCTION refuse_audit_rows();"
    ))
    .execute(pool)
    .await
    .unwrap();
}

pub async fn audit_rows_accepted_again(pool: &PgPool) {
    sqlx::raw_sql("DROP TRIGGER refuse_audit_rows ON audit_log")
        .execute(pool)
        .await
        .unwrap();
}

/// The outcomes of the audit rows of `kind`, oldest first.
pub async fn audit_outcomes(pool: &PgPool, kind: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT payload->>'outcome' FROM audit_log WHERE kind = $1 ORDER BY id")
        .bind(kind)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// Registers a Streamable HTTP server through the server function (tools approved, and apps
/// when `apps`).
pub async fn register_server(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
    url: &str,
    apps: bool,
) {
    let capabilities: &[&str] = if apps { &["tools", "apps"] } else { &["tools"] };
    register_server_for(app, admin, slug, url, capabilities).await;
}

/// Registers a server approved for exactly `capabilities` (`tools`, `prompts`,
/// `resources`, `apps`).
pub async fn register_server_for(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
    url: &str,
    capabilities: &[&str],
) {
    let fields: Vec<String> = capabilities.iter().map(|c| format!("cap_{c}")).collect();
    let mut form = vec![("slug", slug), ("display_name", slug), ("url", url)];
    form.extend(fields.iter().map(|field| (field.as_str(), "on")));
    let response = server_fn(app, admin, "servers/register", &form).await;
    assert_eq!(
        response.status(),
        200,
        "register {slug}: {}",
        response.text().await.unwrap()
    );
}

/// The admin's view of one server.
pub async fn server_detail(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
) -> serde_json::Value {
    let response = server_fn(app, admin, "servers/get", &[("slug", slug)]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// Runs discovery now; the refresh outcome.
pub async fn refresh_server(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
) -> serde_json::Value {
    let response = server_fn(app, admin, "servers/refresh", &[("slug", slug)]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}
