//! What the server hands the console on every request (provided as Leptos context).

use leptos::config::LeptosOptions;
use std::sync::Arc;

use sqlx::PgPool;

use crate::servers::ssr::client::Hub;

/// How people sign in to this console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignInMode {
    /// An OpenID Connect issuer; `provider` is the name shown on the sign-in button.
    Oidc { provider: String },
    /// No issuer: loopback only, one-time links printed by the server.
    Local,
}

#[derive(Clone, axum::extract::FromRef)]
pub struct AppState {
    /// Shared: the state is cloned for every request.
    pub leptos_options: Arc<LeptosOptions>,
    pub pool: PgPool,
    pub sign_in: SignInMode,
    /// The MCP client shared by every request.
    pub hub: Arc<Hub>,
    /// `scheme://host[:port]` people reach the console at (for CSP sources).
    pub public_origin: String,
    /// Signs the app sessions issued for frame loads (each frame document is served once).
    pub frame_tickets: Arc<crate::apps::ssr::tickets::FrameTickets>,
    /// The origin app frames are served from when it is not the console's own
    /// (`STRAD_SANDBOX_ORIGIN`, another site, so the browser isolates frames in their own
    /// process).
    pub sandbox_origin: Option<String>,
    /// Live login tokens one person may hold (`auth.tokens_per_person`).
    pub tokens_per_person: u32,
    /// Pin row versions whose bytes were found intact (`pins::get_checked`).
    pub checked_pins: Arc<crate::apps::ssr::pins::Checked>,
}

impl AppState {
    /// The origin app frames load from: the sandbox origin, or the console's own.
    pub fn frame_origin(&self) -> &str {
        self.sandbox_origin
            .as_deref()
            .unwrap_or(&self.public_origin)
    }

    /// The state of the current request. Call it before any `.await`.
    pub fn from_context() -> Result<Self, crate::error::AppError> {
        leptos::prelude::use_context::<AppState>()
            .ok_or_else(|| crate::error::AppError::internal("AppState is not in the context"))
    }
}
