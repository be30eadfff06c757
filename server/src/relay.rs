//! `/mcp` (SPEC §9): the servers a person is entitled to, relayed to any MCP client under
//! their login token. Built on rmcp's Streamable HTTP server. Every request is authenticated
//! by `Authorization: Bearer <login token>` (401 with `WWW-Authenticate` otherwise);
//! `?servers=a,b` selects slugs (all entitled ones when absent); names are namespaced per slug
//! (`<slug>__<tool>`, `ui://<slug>/<rest>` for app resources, `strad://<slug>/<uri>` for the
//! rest) and mapped back on the way in; entitlements and the tool policy apply exactly as in
//! the console (surface "MCP client": visibility must include "model"); every call is audited
//! as `mcp_tool_call`. A call's progress notifications come back under the caller's token,
//! and a cancelled call is cancelled upstream.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::response::Response;
use rmcp::ErrorData as McpError;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use uuid::Uuid;

use crate::state::ServerState;

mod authenticate;
mod fast;
mod in_flight;
mod namespacing;
mod rate_limits;
mod relayed_call;
mod scope;
mod server_handler;
pub mod sessions;

pub use namespacing::{
    SEPARATOR, namespaced, original_resource_uri, original_uri, relayed_resource_uri, relayed_uri,
    split_name,
};
pub use rate_limits::RateLimits;

/// Who is calling: the owner of a valid login token, as the console would see them (their
/// session kind is "browser": a login token on /mcp is the surface the token is for; the
/// surface itself says MCP client).
#[derive(Clone, Debug)]
pub struct Caller {
    pub token_id: Uuid,
    pub ctx: app::auth::ssr::context::RequestContext,
}

impl Caller {
    /// The caller as every tool call knows it.
    fn caller(&self) -> crate::tool_call::Caller {
        crate::tool_call::Caller {
            user_id: self.ctx.user.id,
            email: self.ctx.user.email.clone(),
            token_id: Some(self.token_id),
            session_binding: None,
        }
    }
}

pub fn routes(state: ServerState) -> Router<ServerState> {
    let origin = state.config.http.public_origin();
    let authority = origin
        .split_once("://")
        .map(|(_, a)| a.to_owned())
        .unwrap_or_default();
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map(|(h, _)| h.to_owned())
        .unwrap_or_else(|| authority.clone());
    let gate = fast::Gate {
        hosts: [host.clone(), authority.clone()],
        origin: origin.clone(),
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts([host, authority])
        .with_allowed_origins([origin]);
    let relay = Relay {
        state: Arc::new(state.clone()),
    };
    let sessions = state.mcp_open.clone();
    let factory = relay.clone();
    let service = StreamableHttpService::new(move || Ok(factory.clone()), sessions, config);
    let front = Arc::new(Front { relay, gate });
    Router::new()
        .nest_service("/mcp", Shared(Arc::new(service)))
        .layer(axum::middleware::from_fn_with_state(
            front,
            authenticate::authenticate,
        ))
}

/// What every `/mcp` request is checked and answered with, shared (one reference counted
/// per request, not the state's every field).
struct Front {
    relay: Relay,
    gate: fast::Gate,
}

/// rmcp's service behind one `Arc`: axum clones a service for every request, and rmcp's
/// clone copies its configuration (the allowed hosts and origins) each time.
#[derive(Clone)]
struct Shared(Arc<StreamableHttpService<Relay, sessions::Sessions>>);

impl tower::Service<Request> for Shared {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { Ok(service.handle(request).await.map(axum::body::Body::new)) })
    }
}

#[derive(Clone)]
pub(crate) struct Relay {
    state: Arc<ServerState>,
}

fn denied(message: &str) -> McpError {
    McpError::invalid_params(message.to_owned(), None)
}

/// `/mcp` serves client sessions (`initialize`, protocol 2025-11-25 and before): each has
/// its own upstream sessions, closed with it, and counts against the token's sessions. A
/// request of the stateless revision (2026-07-28, its protocol version in its own `_meta`)
/// would open and drop all of that on every call, so it is refused with a clear error, and
/// `server/discover` is answered as a server of the session revisions answers it: the
/// method is not found, and a client that can falls back to `initialize`.
fn sessions_only() -> McpError {
    McpError::invalid_request(
        "strad's /mcp serves MCP sessions: connect with initialize (protocol 2025-11-25 or before)",
        None,
    )
}

fn internal(error: impl std::fmt::Display) -> McpError {
    tracing::error!(error.message = %error, "the relay failed");
    McpError::internal_error("strad could not answer", None)
}
