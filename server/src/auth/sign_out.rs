use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use tower_sessions::Session;

use app::audit::ssr::writer;
use app::auth::ssr::context::RequestContext;

use crate::startup::ServerState;

/// POST /auth/sign-out: deletes the session row and its cookie. Refused when the request
/// comes from another site (a cross-site form could otherwise sign people out).
pub async fn sign_out(
    State(state): State<ServerState>,
    headers: HeaderMap,
    session: Session,
) -> Response {
    if !is_same_origin(&headers, &state.config.http.public_origin()) {
        return (StatusCode::FORBIDDEN, "cross-site request refused").into_response();
    }
    // Who is leaving, for the audit log; an anonymous sign-out records nothing.
    if let Ok(Some(ctx)) = RequestContext::from_session(&state.app.pool, &session).await {
        if let Err(err) = writer::append_alone(
            &state.app.pool,
            &ctx.actor(),
            "sign_out",
            None,
            &serde_json::json!({}),
        )
        .await
        {
            tracing::error!(error.message = %err, "could not record the sign-out");
        }
    }
    if let Err(err) = session.flush().await {
        tracing::error!(error.message = %err, "could not delete the session");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    Redirect::to("/sign-in").into_response()
}

/// A state-changing request must come from this console: `Sec-Fetch-Site`, when the
/// browser sends it, is `same-origin` (or `none`, typed by the person); `Origin`, when
/// present, is ours.
pub fn is_same_origin(headers: &HeaderMap, public_origin: &str) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let fetch_site_ok =
        header("sec-fetch-site").is_none_or(|site| matches!(site, "same-origin" | "none"));
    let origin_ok = header("origin").is_none_or(|origin| origin == public_origin);
    fetch_site_ok && origin_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    const ORIGIN: &str = "https://strad.example.com";

    #[test]
    fn same_origin_requests_pass() {
        assert!(is_same_origin(&headers(&[]), ORIGIN));
        assert!(is_same_origin(
            &headers(&[("sec-fetch-site", "same-origin"), ("origin", ORIGIN)]),
            ORIGIN
        ));
    }

    #[test]
    fn cross_site_requests_are_refused() {
        for pairs in [
            vec![("sec-fetch-site", "cross-site")],
            vec![("sec-fetch-site", "same-site")],
            vec![("origin", "https://evil.example")],
            vec![("origin", "null")],
            vec![("origin", "https://strad.example.com.evil.example")],
        ] {
            assert!(!is_same_origin(&headers(&pairs), ORIGIN), "{pairs:?}");
        }
    }
}
