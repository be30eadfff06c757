//! Headers every console response carries.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The console's headers on every response of its router (`console`).
pub async fn layer(request: Request, next: Next) -> Response {
    let cacheable = request.uri().path().starts_with("/pkg/");
    let mut response = next.run(request).await;
    console(response.headers_mut(), cacheable);
    response
}

/// Nothing frames the console, nothing sniffs types, referrers stay on this origin, and
/// nothing is kept by a browser or a proxy (`Cache-Control: no-store`) but what is
/// `cacheable` (the compiled site under `/pkg/`): pages show a person's data, and `/api/`
/// answers carry it, a minted login token among them, which must never reach a disk cache.
/// A response that sets one of these headers itself keeps its own (the per-app CSP of
/// `/apps/<slug>`, the frame's `X-Frame-Options: SAMEORIGIN`) but `nosniff`, which every
/// response gets. The console's router sets them through `layer`; the frame route on the
/// console's origin, answered before routing (`frame_loads`), calls this itself.
pub fn console(h: &mut HeaderMap, cacheable: bool) {
    unless_set(
        h,
        header::CONTENT_SECURITY_POLICY,
        "frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'",
    );
    unless_set(h, header::X_FRAME_OPTIONS, "DENY");
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    unless_set(h, header::REFERRER_POLICY, "same-origin");
    if !cacheable {
        unless_set(h, header::CACHE_CONTROL, "no-store");
    }
}

/// Sets `name` to `value` unless the response set it itself.
pub fn unless_set(h: &mut HeaderMap, name: HeaderName, value: &'static str) {
    if !h.contains_key(&name) {
        h.insert(name, HeaderValue::from_static(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_keeps_the_headers_it_set_but_always_says_nosniff() {
        let mut own = HeaderMap::new();
        own.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("x"),
        );
        own.insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("SAMEORIGIN"),
        );
        own.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        own.insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=1"));
        own.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("other"),
        );
        console(&mut own, false);
        assert_eq!(own[header::CONTENT_SECURITY_POLICY], "x");
        assert_eq!(own[header::X_FRAME_OPTIONS], "SAMEORIGIN");
        assert_eq!(own[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(own[header::CACHE_CONTROL], "max-age=1");
        assert_eq!(own[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }

    #[test]
    fn a_bare_response_gets_every_header_and_no_store_unless_cacheable() {
        let mut bare = HeaderMap::new();
        console(&mut bare, false);
        assert!(
            bare[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .starts_with("frame-ancestors 'none'")
        );
        assert_eq!(bare[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(bare[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(bare[header::REFERRER_POLICY], "same-origin");
        assert_eq!(bare[header::CACHE_CONTROL], "no-store");
        let mut site_file = HeaderMap::new();
        console(&mut site_file, true);
        assert!(!site_file.contains_key(header::CACHE_CONTROL));
        assert_eq!(site_file[header::X_FRAME_OPTIONS], "DENY");
    }
}
