//! Pinned apps prepared for the frame route, in memory: the bytes as served and their CSP,
//! each valid for one version of its pin row.

use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// A pinned app ready to serve: the bytes with `<base target>`, and their CSP.
pub struct PreparedFrame {
    pub(super) body: Bytes,
    pub(super) csp: HeaderValue,
}

impl PreparedFrame {
    /// The frame's response; on the sandbox origin the CSP's `frame-ancestors` alone names
    /// the console (`X-Frame-Options` cannot name another origin).
    pub(super) fn response(&self, on_sandbox: bool) -> Response {
        let mut response = self.body.clone().into_response();
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        h.insert(header::CONTENT_SECURITY_POLICY, self.csp.clone());
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        // Framed by the console only (the CSP's frame-ancestors says the same).
        if !on_sandbox {
            h.insert(
                header::X_FRAME_OPTIONS,
                HeaderValue::from_static("SAMEORIGIN"),
            );
        }
        response
    }
}

/// Prepared frames by (person, server, resource), each valid for one version of its pin row
/// (Postgres' `xmin`: any write to the row, a refresh or a tampering, makes a new one).
/// Bounded by total bytes; past it, everything is dropped and prepared again on demand.
#[derive(Default)]
pub struct FrameCache(std::sync::Mutex<(Frames, usize)>);

/// (person, server, resource) → (the pin row's version, the frame prepared from it).
type Frames = std::collections::HashMap<
    (uuid::Uuid, String, String),
    (String, std::sync::Arc<PreparedFrame>),
>;

const FRAME_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl FrameCache {
    pub(super) fn get(
        &self,
        user: uuid::Uuid,
        slug: &str,
        uri: &str,
        version: &str,
    ) -> Option<std::sync::Arc<PreparedFrame>> {
        let held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        held.0
            .get(&(user, slug.to_owned(), uri.to_owned()))
            .filter(|(v, _)| v == version)
            .map(|(_, prepared)| prepared.clone())
    }

    pub(super) fn put(
        &self,
        user: uuid::Uuid,
        slug: &str,
        uri: &str,
        version: String,
        prepared: std::sync::Arc<PreparedFrame>,
    ) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let size = prepared.body.len();
        if held.1 + size > FRAME_CACHE_BYTES {
            held.0.clear();
            held.1 = 0;
        }
        if let Some((_, old)) = held
            .0
            .insert((user, slug.to_owned(), uri.to_owned()), (version, prepared))
        {
            held.1 = held.1.saturating_sub(old.body.len());
        }
        held.1 += size;
    }
}
