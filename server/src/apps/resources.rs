//! POST /apps/<slug>/resources/read: the bridge's `resources/read`.

use app::servers::Capability;
use app::servers::ssr::discovery::app_resource;
use app::servers::ssr::failure::upstream_failure;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tower_sessions::Session;

use super::{Refused, entitled, require_json};
use crate::state::ServerState;

#[derive(Deserialize)]
pub struct ReadBody {
    uri: String,
}

/// This server's `ui://` resources only, checked as discovery checks them.
pub async fn resources_read(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    Json(body): Json<ReadBody>,
) -> Result<Response, Refused> {
    require_json(&headers)?;
    let (ctx, server) = entitled(&state, &session, &slug).await?;
    if !body.uri.starts_with("ui://") || !server.approves(Capability::Apps) {
        return Err(Refused::Status(
            StatusCode::FORBIDDEN,
            "Only this server's ui:// resources can be read.".into(),
        ));
    }
    let Some(endpoint) = server.endpoint() else {
        return Err(Refused::Status(
            StatusCode::BAD_GATEWAY,
            "The server has no endpoint.".into(),
        ));
    };
    let hub = &state.app.hub;
    let read = match hub.read_resource(&slug, &endpoint, &body.uri).await {
        Ok(read) => read,
        Err(error) => {
            let what = format!("resources/read {}", body.uri);
            let reference = upstream_failure(&slug, &what, ctx.user.id, &error.to_string());
            return Err(Refused::Status(
                StatusCode::BAD_GATEWAY,
                format!("The server could not read it (reference {reference})."),
            ));
        }
    };
    if let Err(problem) = app_resource(&body.uri, None, &read, hub.settings().resource_limit) {
        return Err(Refused::Status(
            StatusCode::BAD_GATEWAY,
            format!("The resource is not a valid app resource: {problem}"),
        ));
    }
    Ok(Json(read).into_response())
}
