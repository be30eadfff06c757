//! The compiled site under `/pkg/` (the console's wasm, JavaScript and CSS): served from
//! the files `./x dist` compressed ahead of time (`.br`, `.gz`, chosen by the request's
//! `Accept-Encoding`), and kept by browsers for a year when the file's name carries its
//! content's hash (cargo-leptos `hash-files`), since such a name never changes meaning.
//! Any other file there is revalidated on every use (`Last-Modified`).

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::path::{Path, PathBuf};

use leptos::config::LeptosOptions;
use tower_http::services::ServeDir;

/// Kept for a year and never revalidated: the name changes with the content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Kept, but asked about before each use.
const REVALIDATE: &str = "no-cache";

/// The site's list of content hashes, when its file names carry them: `hash.txt` in the site
/// root (where `./x dist` puts it, so the list travels with the files it names), else beside
/// the running binary (where cargo-leptos writes it). The console's pages link the hashed
/// names it lists.
pub fn hash_list(site_root: &Path) -> Option<PathBuf> {
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(HASH_LIST)));
    std::iter::once(site_root.join(HASH_LIST))
        .chain(beside_binary)
        .find(|path| path.is_file())
}

const HASH_LIST: &str = "hash.txt";

/// `/pkg/` of the site `options` names, as a router to merge into the console's.
pub fn routes<S: Clone + Send + Sync + 'static>(options: &LeptosOptions) -> Router<S> {
    let dir = Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    let files = ServeDir::new(dir).precompressed_br().precompressed_gzip();
    Router::new().nest_service(
        &format!("/{}", options.site_pkg_dir),
        Router::new()
            .fallback_service(files)
            .layer(axum::middleware::from_fn(cache_headers)),
    )
}

async fn cache_headers(request: Request, next: Next) -> Response {
    let policy = cache_control(request.uri().path());
    let mut response = next.run(request).await;
    if response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED {
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(policy));
        // The same URL answers in several encodings.
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// The caching of the file at `path`: immutable only when its name carries a content hash
/// as cargo-leptos writes it (`<name>.<22 base64url characters>.<extension>`).
pub fn cache_control(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or_default();
    let mut parts = name.split('.');
    let (Some(stem), Some(hash), Some(extension), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return REVALIDATE;
    };
    let is_hash = hash.len() == 22
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !stem.is_empty() && !extension.is_empty() && is_hash {
        IMMUTABLE
    } else {
        REVALIDATE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_carrying_a_content_hash_are_immutable() {
        for hashed in [
            "/strad.Dq1rC0sN3-PZ_6yZl0AbcQ.wasm",
            "strad.Dq1rC0sN3-PZ_6yZl0AbcQ.js",
            "/pkg/strad.Dq1rC0sN3-PZ_6yZl0AbcQ.css",
        ] {
            assert_eq!(cache_control(hashed), IMMUTABLE, "{hashed}");
        }
        for plain in [
            "/strad.wasm",
            "/strad.js",
            "/strad.css",
            "/strad.Dq1rC0sN3-PZ_6yZl0AbcQ.wasm.br",
            "/strad.short.js",
            "/strad.Dq1rC0sN3+PZ/6yZl0AbcQ.js",
            "/snippets/strad-app-0123/inline0.js",
            "/.Dq1rC0sN3-PZ_6yZl0AbcQ.js",
            "",
        ] {
            assert_eq!(cache_control(plain), REVALIDATE, "{plain}");
        }
    }
}
