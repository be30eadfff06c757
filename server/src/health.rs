use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;

use crate::state::ServerState;

/// GET /healthz: the process is up. Touches nothing else.
pub async fn healthz() -> impl IntoResponse {
    (StatusCode::OK, "ok")
}

/// GET /readyz: the database is reachable and fully migrated.
pub async fn readyz(State(state): State<ServerState>) -> impl IntoResponse {
    match crate::db::is_ready(&state.app.pool).await {
        Ok(()) => (StatusCode::OK, "ready"),
        Err(reason) => {
            tracing::warn!(readiness = %reason, "not ready");
            (StatusCode::SERVICE_UNAVAILABLE, "not ready")
        }
    }
}
