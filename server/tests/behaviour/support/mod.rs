//! The test harness: a real strad on a loopback port over a fresh database, an HTTP client
//! that keeps cookies and does not follow redirects, and (for sign-in tests) a real OpenID
//! Connect issuer — `oidc-provider` from npm — started on its own loopback port.

pub mod mcp;

mod apps;
mod audit;
mod browsers;
mod logs;
mod oidc;
mod server_fns;

pub use apps::*;
pub use audit::*;
pub use browsers::*;
pub use logs::*;
pub use oidc::*;
pub use server_fns::*;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use strad_server::auth::local::LocalLinks;
use strad_server::config::Config;
use strad_server::startup::Application;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub struct TestApp {
    pub base: String,
    /// The test's own pool on the test database, for assertions.
    pub pool: PgPool,
    pub client: reqwest::Client,
    pub local: Option<Arc<LocalLinks>>,
    /// What the server remembers of authority.
    pub memos: Arc<strad_server::authority_cache::Memos>,
    /// The audit writer of tool calls.
    #[allow(dead_code, reason = "the benchmarks read it; they share this harness")]
    pub audit: app::audit::ssr::appender::Appender,
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
    logs::capture_logs();
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
    // The demo server is this binary on stdio; a test binary is not strad.
    env.insert("STRAD_DEMO".into(), "off".into());
    // Frames on the console's origin unless a test asks for the sandbox origin.
    env.insert("STRAD_SANDBOX_ORIGIN".into(), "off".into());
    for (key, value) in extra_env {
        env.insert(key.to_string(), value.to_string());
    }
    let config = Config::from_sources(file, &env).expect("config");
    let connect = (*pool.connect_options()).clone();
    let listener = listener.into_std().expect("std listener");
    type Ready = (
        Option<Arc<LocalLinks>>,
        Arc<strad_server::authority_cache::Memos>,
        app::audit::ssr::appender::Appender,
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
