//! POST /apps/<slug>/download: the bridge's `ui/download-file` for a resource of the page's
//! own server, any URI it serves (not only `ui://`). The host asks the person before it
//! posts here, and audits their answer through `host-actions`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use tower_sessions::Session;

use super::Refused;
use super::resources::{ReadBody, Readable, read};
use crate::state::ServerState;

/// The resource's `ReadResourceResult`, under the same checks as `resources/read` but its
/// `ui://` rule.
pub async fn download(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    Json(body): Json<ReadBody>,
) -> Result<Response, Refused> {
    read(&state, &session, &headers, &slug, &body.uri, Readable::Any).await
}
