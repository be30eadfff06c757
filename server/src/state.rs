//! What every route that is not a Leptos page can reach: the console's state, the
//! configuration, sign-in, and what the busy routes remember.

use std::sync::Arc;

use app::state::AppState;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use crate::auth::local::LocalLinks;
use crate::auth::oidc::Oidc;
use crate::config::Config;

/// What every non-Leptos route can reach, behind one pointer: axum clones the state for
/// each middleware and handler of each request, and cloning the fields themselves would
/// count two dozen references and copy the console's origin strings each time (8% of a
/// console-origin frame load's CPU in a profile; docs/benchmarks.md).
#[derive(Clone)]
pub struct ServerState(Arc<Shared>);

impl ServerState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for ServerState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state's fields.
pub struct Shared {
    pub app: AppState,
    pub config: Arc<Config>,
    pub oidc: Option<Arc<Oidc>>,
    pub local: Option<Arc<LocalLinks>>,
    /// Pinned apps prepared for the frame route.
    pub frames: Arc<crate::apps::FrameCache>,
    /// Each person's budget of tool calls from the console (apps, playground, opening calls).
    pub call_rates: Arc<crate::relay::RateLimits>,
    /// Who is over that budget now (each burst is audited once).
    pub call_bursts: Arc<crate::tool_call::Bursts>,
    /// Each person's budget of app log lines (beyond it lines are dropped).
    pub log_rates: Arc<crate::relay::RateLimits>,
    /// Each person's request budget on `/mcp`, all their login tokens together.
    pub mcp_rates: Arc<crate::relay::RateLimits>,
    /// Each person's budget of new client sessions on `/mcp`, all their tokens together.
    pub mcp_sessions: Arc<crate::relay::RateLimits>,
    /// `/mcp`'s open client sessions (each holds upstream sessions), at most as many as
    /// configured.
    pub mcp_open: Arc<crate::relay::sessions::Sessions>,
    /// Whose each recent session was, to read ahead on busy routes.
    pub hints: Arc<crate::prefetch::SessionHints>,
    /// What authority is read from, remembered while every change to it is heard.
    pub memos: Arc<crate::authority_cache::Memos>,
    /// Audit rows of tool calls, written together when they arrive together.
    pub audit: app::audit::ssr::appender::Appender,
    /// The key approvals of writing tools are signed with (SPEC §8). Never sent to a page.
    pub approval_secret: Arc<app::apps::ssr::approvals::ApprovalSecret>,
}

impl FromRef<ServerState> for LeptosOptions {
    fn from_ref(state: &ServerState) -> Self {
        (*state.app.leptos_options).clone()
    }
}
