//! `host/open`'s path check (`host_open::console_path`), fed any text a page could send.
//! Whatever it accepts, a browser resolves against the console to a same-origin URL that
//! is a console page (not `/auth`, `/api`, `/pkg` or the frame route, however spelled),
//! with no credential parameter; and the rebuilt URL is accepted again as it stands.
#![no_main]

use app::apps::host_open::{console_path, place_for_id};
use libfuzzer_sys::fuzz_target;
use url::Url;

const CONSOLE: &str = "https://console.example";
const CREDENTIALS: [&str; 13] = [
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "code",
    "state",
    "session",
    "session_id",
    "sid",
    "ticket",
    "password",
    "secret",
    "api_key",
];

/// One round of percent-decoding, lossy: enough to name the route a segment reaches.
fn decoded(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = segment
            .get(i + 1..i + 3)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn assert_console_page(path: &str, input: &str) {
    assert!(path.starts_with('/'), "{input:?} -> {path:?}");
    assert!(
        !path.starts_with("//") && !path.starts_with("/\\"),
        "{input:?} -> {path:?}"
    );
    assert!(
        !path
            .chars()
            .any(|c| c == '\\' || c.is_control() || c.is_whitespace()),
        "{input:?} -> {path:?}"
    );
    // As a browser reads it, against the console's origin.
    let base = Url::parse(CONSOLE).unwrap();
    let url = base.join(path).expect("joins");
    assert_eq!(url.origin(), base.origin(), "{input:?} -> {url}");
    let segments: Vec<String> = url.path_segments().unwrap().map(decoded).collect();
    let is = |i: usize, name: &str| {
        segments
            .get(i)
            .is_some_and(|s| s.eq_ignore_ascii_case(name))
    };
    for reserved in ["auth", "api", "pkg"] {
        assert!(!is(0, reserved), "{input:?} -> {url}");
    }
    assert!(!(is(0, "apps") && is(2, "frame")), "{input:?} -> {url}");
    assert!(
        !segments
            .iter()
            .any(|s| s == "." || s == ".." || s.contains(['/', '\\'])),
        "{input:?} -> {url}"
    );
    for (key, _) in url.query_pairs() {
        assert!(
            !CREDENTIALS.iter().any(|c| key.eq_ignore_ascii_case(c)),
            "{input:?} -> {url} carries {key}"
        );
    }
    assert_eq!(
        console_path(path).as_deref(),
        Some(path),
        "not stable: {input:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(path) = console_path(text) {
        assert_console_page(&path, text);
    }
    if let Some(place) = place_for_id(text) {
        assert_console_page(&place, text);
    }
});
