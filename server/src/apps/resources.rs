//! POST /apps/<slug>/resources/read: the bridge's `resources/read`, `ui://` app resources
//! only; and the read path it shares with `download.rs`, the `ui://` rule its parameter.

use app::servers::Capability;
use app::servers::ssr::discovery::app_resource;
use app::servers::ssr::failure::upstream_failure;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tower_sessions::Session;

use super::{Refused, browser_session, entitled, require_json};
use crate::state::ServerState;

#[derive(Deserialize)]
pub struct ReadBody {
    pub uri: String,
}

/// Which of its server's resources a page may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readable {
    /// `ui://` resources, checked as discovery checks an app resource: what a page embeds.
    AppResources,
    /// Any resource the server serves: a file the person downloads, after approving it.
    Any,
}

/// This server's `ui://` resources only, checked as discovery checks them.
pub async fn resources_read(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    Json(body): Json<ReadBody>,
) -> Result<Response, Refused> {
    read(
        &state,
        &session,
        &headers,
        &slug,
        &body.uri,
        Readable::AppResources,
    )
    .await
}

/// `uri` of `slug` for the signed-in, entitled person of a browser session, when the server
/// is approved for apps and `readable` allows it: the server's `ReadResourceResult`.
pub async fn read(
    state: &ServerState,
    session: &Session,
    headers: &HeaderMap,
    slug: &str,
    uri: &str,
    readable: Readable,
) -> Result<Response, Refused> {
    require_json(headers)?;
    let (ctx, server) = entitled(state, session, slug).await?;
    browser_session(&ctx)?;
    let allowed = match readable {
        Readable::AppResources => uri.starts_with("ui://"),
        Readable::Any => true,
    };
    if !allowed || !server.approves(Capability::Apps) {
        let only = match readable {
            Readable::AppResources => "Only this server's ui:// resources can be read.",
            Readable::Any => "This server is not approved for apps.",
        };
        return Err(Refused::Status(StatusCode::FORBIDDEN, only.into()));
    }
    let Some(endpoint) = server.endpoint() else {
        return Err(Refused::Status(
            StatusCode::BAD_GATEWAY,
            "The server has no endpoint.".into(),
        ));
    };
    let hub = &state.app.hub;
    let read = match hub.read_resource(slug, &endpoint, uri).await {
        Ok(read) => read,
        Err(error) => {
            let what = format!("resources/read {uri}");
            let reference = upstream_failure(slug, &what, ctx.user.id, &error.to_string());
            return Err(Refused::Status(
                StatusCode::BAD_GATEWAY,
                format!("The server could not read it (reference {reference})."),
            ));
        }
    };
    if readable == Readable::AppResources
        && let Err(problem) = app_resource(uri, None, &read, hub.settings().resource_limit)
    {
        return Err(Refused::Status(
            StatusCode::BAD_GATEWAY,
            format!("The resource is not a valid app resource: {problem}"),
        ));
    }
    Ok(Json(read).into_response())
}
