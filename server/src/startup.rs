//! Building the application: database, sessions, sign-in, the Leptos console, and the
//! listener; then serving until SIGTERM or Ctrl-C.

use std::future::Future;
use std::sync::Arc;

use app::apps::ssr::approval_store;
use app::apps::ssr::approvals::ApprovalSecret;
use app::servers::ssr::client::{Hub, HubSettings};
use app::state::{AppState, SignInMode};
use app::{App, shell};
use axum::Router;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

use crate::auth::local::{self, LocalLinks};
use crate::auth::oidc::{self, Oidc};
use crate::auth::sign_out;
use crate::config::Config;
use crate::frame_loads::FrameLoads;
use crate::sandbox::Sandbox;
use crate::session_store::{CookieSessions, RememberingStore};
use crate::state::ServerState;
use crate::{db, health, security_headers};

/// Name of the session cookie over plain HTTP (local mode, tests).
pub const SESSION_COOKIE: &str = "strad_session";
/// Name of the session cookie over HTTPS. The `__Host-` prefix makes the browser refuse it
/// unless it is `Secure`, for `Path=/` and without `Domain`, so no sibling subdomain or
/// plain-HTTP page can set or overwrite it.
pub const SECURE_SESSION_COOKIE: &str = "__Host-strad_session";

/// The session cookie's name for a console served at `public_url`.
pub fn session_cookie(https: bool) -> &'static str {
    if https {
        SECURE_SESSION_COOKIE
    } else {
        SESSION_COOKIE
    }
}

pub struct Application {
    listener: TcpListener,
    router: Router,
    state: ServerState,
}

impl Application {
    /// Connects to (and creates, and migrates) the database, binds the configured address.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let pool = db::connect_and_migrate(&config.database).await?;
        let listener = TcpListener::bind(config.http.bind)
            .await
            .map_err(|e| anyhow::anyhow!("cannot bind {}: {e}", config.http.bind))?;
        let app = Self::build_with(config, pool, listener).await?;
        if let Some(links) = &app.state.local {
            local::announce(&links.mint());
        }
        Ok(app)
    }

    /// Builds on a pool and a listener the caller made (tests bind port 0 and use a fresh
    /// database). Migrates the pool.
    pub async fn build_with(
        config: Config,
        pool: PgPool,
        listener: TcpListener,
    ) -> anyhow::Result<Self> {
        db::migrate(&pool).await?;
        let mut config = config;
        let demo = config.demo && crate::servers::declare_demo(&mut config.servers);
        let config = Arc::new(config);
        let approval_secret = match &config.approvals.secret {
            Some(secret) => ApprovalSecret::new(secret.expose().as_bytes().to_vec())
                .ok_or_else(|| anyhow::anyhow!("the approval secret is too short"))?,
            None => approval_store::shared_secret(&pool).await?,
        };
        let oidc = match &config.auth.oidc {
            Some(oidc_config) => {
                let oidc = Oidc::new(oidc_config.clone(), &config.http.public_url)?;
                // Fetch the issuer's metadata now, so a misconfiguration shows at start-up;
                // a failure is retried on the first sign-in rather than stopping strad.
                if let Err(err) = oidc.client().await {
                    tracing::warn!(error.message = %err, "OpenID Connect discovery failed; will retry");
                }
                Some(Arc::new(oidc))
            }
            None => None,
        };
        let local = config
            .auth
            .oidc
            .is_none()
            .then(|| Arc::new(LocalLinks::new(&config.http.public_url)));
        let sign_in = match &oidc {
            Some(oidc) => SignInMode::Oidc {
                provider: oidc.provider_name().to_owned(),
            },
            None => SignInMode::Local,
        };
        let hashes = crate::site_files::hash_list(&config.site.root);
        let leptos_options = LeptosOptions::builder()
            .output_name("strad")
            .site_root(config.site.root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .site_addr(config.http.bind)
            .hash_files(hashes.is_some())
            // Leptos joins this to the binary's directory; an absolute path replaces it.
            .hash_file(
                hashes.map_or_else(|| "hash.txt".into(), |path| path.to_string_lossy().into()),
            )
            .build();
        crate::servers::sync_declared(&pool, &config.servers).await?;
        if demo {
            crate::servers::settle_demo_policy(&pool).await?;
        }
        let (changes, changed) = tokio::sync::mpsc::unbounded_channel();
        let hub = Arc::new(Hub::new(
            HubSettings {
                request_timeout: config.discovery.request_timeout,
                resource_limit: config.discovery.resource_limit_bytes,
                direct_tool_calls: config.discovery.direct_tool_calls,
                stdio_children: config.discovery.stdio_children_max,
                stdio_env: crate::servers::declared_env(&config.servers),
                ..HubSettings::default()
            },
            changes,
        ));
        crate::servers::spawn_discovery(
            pool.clone(),
            hub.clone(),
            changed,
            config.discovery.interval,
        );
        let memos = Arc::new(crate::authority_cache::Memos::new(
            crate::authority_cache::FRESH_FOR,
        ));
        crate::authority_cache::spawn_listener(pool.clone(), memos.clone());
        let instance = uuid::Uuid::new_v4();
        let instances = crate::instances::Live::default();
        crate::instances::start_heartbeat(
            pool.clone(),
            instance,
            config.http.instance.clone(),
            instances.clone(),
        )
        .await;
        let frame_tickets = Arc::new(app::apps::ssr::tickets::FrameTickets::new(
            &approval_secret,
            instance,
            config.frames_unloaded_per_person as usize,
        ));
        if !frame_tickets
            .ask_others(pool.clone(), crate::instances::ALIVE)
            .await
        {
            tracing::warn!(
                "not hearing other instances yet; frame tickets they hold are refused until heard"
            );
        }
        tokio::spawn(prune_expired_tickets(frame_tickets.clone()));
        let state = ServerState::new(crate::state::Shared {
            app: AppState {
                leptos_options: Arc::new(leptos_options),
                pool: pool.clone(),
                sign_in,
                hub: hub.clone(),
                public_origin: config.http.public_origin(),
                frame_tickets,
                sandbox_origin: config.http.sandbox(),
                tokens_per_person: config.auth.tokens_per_person,
                checked_pins: Arc::default(),
            },
            config: config.clone(),
            oidc,
            local,
            frames: Arc::default(),
            hints: Arc::default(),
            memos: memos.clone(),
            audit: app::audit::ssr::appender::Appender::spawn(
                pool.clone(),
                config.audit_calls_flush,
            ),
            approval_secret: Arc::new(approval_secret),
            call_rates: Arc::new(
                crate::relay::RateLimits::new(config.calls_per_second).shared(&instances),
            ),
            call_bursts: Arc::default(),
            log_rates: Arc::new(crate::relay::RateLimits::per_second(
                crate::apps::LOG_LINES_PER_SECOND,
            )),
            mcp_rates: Arc::new(
                crate::relay::RateLimits::new(config.mcp_rate_per_second).shared(&instances),
            ),
            mcp_sessions: Arc::new(
                crate::relay::RateLimits::per_minute(config.mcp_sessions_per_minute)
                    .shared(&instances),
            ),
            mcp_open: crate::relay::sessions::Sessions::new(
                hub.clone(),
                config.mcp_sessions_max as usize,
                crate::relay::sessions::IDLE,
                config.http.instance.as_deref(),
            ),
        });
        let router = router(state.clone(), pool);
        Ok(Self {
            listener,
            router,
            state,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// What this instance remembers of authority (tests wait for it to hear a change).
    pub fn memos(&self) -> Arc<crate::authority_cache::Memos> {
        self.state.memos.clone()
    }

    /// The audit writer busy routes append through (the benchmark reads its batch sizes).
    pub fn audit(&self) -> app::audit::ssr::appender::Appender {
        self.state.audit.clone()
    }

    /// Local mode's link minter (tests mint a link instead of reading stdout).
    pub fn local_links(&self) -> Option<Arc<LocalLinks>> {
        self.state.local.clone()
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    /// Serves until `signal` completes, then finishes the requests in flight, giving them
    /// `SHUTDOWN_GRACE` at most (a hung upstream must not keep the process alive forever).
    pub async fn run_until(
        self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let addr = self.listener.local_addr()?;
        tracing::info!(http.addr = %addr, http.public_url = %self.state.config.http.public_url, "strad listening");
        let (stopping, mut stop_seen) = tokio::sync::watch::channel(false);
        let signal = async move {
            signal.await;
            let _ = stopping.send(true);
        };
        // Answers go out as written: with Nagle's algorithm, the later pieces of a streamed
        // answer (an SSE event after its headers) waited for the client's delayed ACK.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(error.message = %error, "could not set TCP_NODELAY");
            }
        });
        // The peer's address, for `/metrics` (open to loopback peers).
        let router = self
            .router
            .into_make_service_with_connect_info::<std::net::SocketAddr>();
        let server = axum::serve(listener, router).with_graceful_shutdown(signal);
        let deadline = async move {
            let _ = stop_seen.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            served = server.into_future() => served?,
            _ = deadline => tracing::warn!("requests still in flight after {SHUTDOWN_GRACE:?}; stopping anyway"),
        }
        tracing::info!("strad stopped");
        Ok(())
    }
}

/// How long requests in flight may run on after SIGTERM.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

fn router(state: ServerState, pool: PgPool) -> Router {
    let config = &state.config;
    let store = PostgresStore::new(pool.clone());
    tokio::spawn(delete_expired_sessions(store.clone()));
    let store = RememberingStore::new(store, state.memos.clone());
    let cookie = session_cookie(config.http.is_https());
    let expiry = Expiry::OnInactivity(config.auth.session_idle);
    let frame_loads = Arc::new(FrameLoads::new(
        state.clone(),
        config.http.sandbox_origin.as_ref().map(Sandbox::new),
        CookieSessions::new(store.clone(), cookie, expiry),
    ));
    let sessions = SessionManagerLayer::new(store)
        .with_name(cookie)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(config.http.is_https())
        .with_path("/")
        .with_expiry(expiry);

    let routes = route_list();
    let leptos_options = (*state.app.leptos_options).clone();
    let app_state = state.app.clone();
    let context = move || {
        provide_context(app_state.clone());
        provide_context(app::tokens::TakenThisRequest::default());
    };

    let console = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/auth/login", get(oidc::login))
        .route("/auth/callback", get(oidc::callback))
        .route("/auth/local", get(local::sign_in))
        .route("/auth/sign-out", post(sign_out::sign_out))
        .merge(crate::audit_export::routes())
        .merge(crate::apps::routes())
        .merge(crate::relay::routes(state.clone()))
        .merge(crate::site_files::routes(&leptos_options))
        .leptos_routes_with_context(&state, routes, context.clone(), {
            let options = leptos_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            ServerState,
            _,
        >(context, shell))
        .layer(axum::middleware::from_fn_with_state(
            state.memos.clone(),
            crate::authority_cache::forget_after_writes,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::token_session::token_sign_in,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::write_gate::write_gate,
        ))
        .layer(sessions)
        .layer(axum::middleware::from_fn(security_headers::layer))
        .layer(TraceLayer::new_for_http())
        .merge(crate::metrics::routes(&state))
        .layer(axum::middleware::from_fn(crate::metrics::track_http))
        .with_state(state);
    // Frame loads, and every request for the sandbox origin, never reach the console's
    // router or layers (its session above all, on the sandbox origin): they are told apart
    // before any routing (a layer of the console's own router would run after it had
    // matched the path).
    Router::new()
        .fallback_service(console)
        .layer(axum::middleware::from_fn_with_state(
            frame_loads,
            crate::frame_loads::dispatch,
        ))
}

/// The console's routes, generated once per process. Generating runs the app with resource
/// loading suppressed through a process-wide flag (leptos_server's `SuppressResourceLoad`);
/// doing it again while another `Application` in the same process serves (as the tests run
/// several) would stall that one's pages, so it happens exactly once.
fn route_list() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> =
        std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

/// Forgets the frame tickets this instance holds once they have expired, every minute.
async fn prune_expired_tickets(tickets: Arc<app::apps::ssr::tickets::FrameTickets>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        tickets.prune();
    }
}

async fn delete_expired_sessions(store: PostgresStore) {
    use tower_sessions::ExpiredDeletion;
    if let Err(err) = store
        .continuously_delete_expired(std::time::Duration::from_secs(300))
        .await
    {
        tracing::error!(error.message = %err, "expired-session deletion stopped");
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received; finishing requests in flight");
}
