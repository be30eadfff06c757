//! What a request may reach: its caller, the servers entitled to them (and named in
//! `?servers=`), and the upstream sessions of its client session.

use std::sync::Arc;

use app::servers::Capability;
use app::servers::ssr::registry::ServerRow;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::{Caller, Relay, denied, internal, sessions_only};

impl Relay {
    /// The caller and the slugs this request may reach (entitled, enabled, and among
    /// `?servers=` when given).
    pub(super) async fn scope<'c>(
        &self,
        context: &'c RequestContext<RoleServer>,
    ) -> Result<(&'c Caller, Vec<ServerRow>), McpError> {
        if context.meta.protocol_version().is_some() {
            return Err(sessions_only());
        }
        let parts = parts_of(context)?;
        let caller = caller_of(context)?;
        let servers = self.reachable(caller, parts.uri.query()).await?;
        Ok((caller, servers))
    }

    /// The slugs `caller` may reach on a request of `query` (entitled, enabled, and among
    /// `?servers=` when given).
    pub(super) async fn reachable(
        &self,
        caller: &Caller,
        query: Option<&str>,
    ) -> Result<Vec<ServerRow>, McpError> {
        let asked: Option<Vec<String>> = query.and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "servers")
                .map(|(_, v)| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
        });
        self.state
            .memos
            .reachable(
                &self.state.app.pool,
                &caller.ctx.user.email,
                asked.as_deref(),
            )
            .await
            .map_err(internal)
    }

    /// The upstream sessions of the client session this request is in.
    pub(super) fn hub(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<app::servers::ssr::client::Hub>, McpError> {
        self.state
            .mcp_open
            .named_by(&parts_of(context)?.headers)
            .map(|open| open.hub.clone())
            .ok_or_else(|| internal("no open session"))
    }
}

/// The endpoint of `slug` among the caller's `servers` when it is approved for `capability`;
/// otherwise `missing`, the same answer whether the slug is unknown, not the caller's, or
/// not approved.
pub(super) fn approved(
    servers: &[ServerRow],
    slug: &str,
    capability: Capability,
    missing: &str,
) -> Result<app::servers::ssr::client::Endpoint, McpError> {
    let server = servers
        .iter()
        .find(|s| s.slug == slug && s.approves(capability))
        .ok_or_else(|| denied(missing))?;
    server.endpoint().ok_or_else(|| internal("no endpoint"))
}

/// The HTTP request rmcp put on the request's context.
pub(super) fn parts_of(
    context: &RequestContext<RoleServer>,
) -> Result<&axum::http::request::Parts, McpError> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .ok_or_else(|| internal("no request parts"))
}

/// The caller `authenticate` put on the HTTP request.
pub(super) fn caller_of(context: &RequestContext<RoleServer>) -> Result<&Caller, McpError> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .ok_or_else(|| internal("no caller"))
}
