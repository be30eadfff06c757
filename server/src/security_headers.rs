//! Headers every console response carries.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use tower_http::set_header::SetResponseHeaderLayer;

/// Nothing frames the console, nothing sniffs types, referrers stay on this origin.
/// (The per-app CSP of `/apps/<slug>` is built by the app surface.)
pub fn layers() -> [SetResponseHeaderLayer<HeaderValue>; 4] {
    [
        SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("content-security-policy"),
            HeaderValue::from_static(
                "frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'",
            ),
        ),
        SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("x-frame-options"),
            HeaderValue::from_static("DENY"),
        ),
        SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("x-content-type-options"),
            HeaderValue::from_static("nosniff"),
        ),
        SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("referrer-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ]
}

/// Nothing the console answers is kept by a browser or a proxy (`Cache-Control: no-store`)
/// but the compiled site under `/pkg/`: pages show a person's data, and `/api/` answers
/// carry it, a minted login token among them, which must never reach a disk cache. A route
/// that sets its own `Cache-Control` keeps it.
pub async fn no_store(request: Request, next: Next) -> Response {
    let cacheable = request.uri().path().starts_with("/pkg/");
    let mut response = next.run(request).await;
    if !cacheable && !response.headers().contains_key(header::CACHE_CONTROL) {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
