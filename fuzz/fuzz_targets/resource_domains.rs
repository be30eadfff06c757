//! The filter of declared `_meta.ui.csp.resourceDomains` and the frame CSP built from it.
//! Every kept entry is a bare `https://` origin strad rebuilt; no entry, however spelled,
//! adds, removes or reorders a directive of the policy.
#![no_main]

use app::apps::ssr::csp::{frame_csp, resource_origin, resource_origins};
use libfuzzer_sys::fuzz_target;

const DIRECTIVES: [&str; 13] = [
    "sandbox",
    "default-src",
    "script-src",
    "style-src",
    "img-src",
    "font-src",
    "media-src",
    "connect-src",
    "object-src",
    "frame-src",
    "form-action",
    "base-uri",
    "frame-ancestors",
];

fn assert_bare_origin(origin: &str) {
    let rest = origin.strip_prefix("https://").expect("an https:// origin");
    assert!(!rest.is_empty(), "{origin:?}");
    assert!(
        rest.bytes().all(|b| b.is_ascii_lowercase()
            || b.is_ascii_digit()
            || matches!(b, b'.' | b'-' | b':' | b'*')),
        "{origin:?} has a character outside a host and port"
    );
    // `*` only as the whole leftmost label, and a port only at the end.
    assert!(!rest[1..].contains('*'), "{origin:?}");
    assert!(
        !rest.starts_with('*') || rest.starts_with("*."),
        "{origin:?}"
    );
    assert!(rest.matches(':').count() <= 1, "{origin:?}");
    // Rebuilt: the filter keeps its own output as it is.
    assert_eq!(resource_origin(origin).as_deref(), Some(origin));
}

fuzz_target!(|data: &[u8]| {
    // A declared list as a server sends it (a JSON array of strings), or one entry.
    let declared: Vec<String> = match serde_json::from_slice(data) {
        Ok(list) => list,
        Err(_) => vec![String::from_utf8_lossy(data).into_owned()],
    };
    let kept = resource_origins(&declared);
    for (i, origin) in kept.iter().enumerate() {
        assert_bare_origin(origin);
        assert!(!kept[..i].contains(origin), "duplicate {origin}");
    }
    for entry in &declared {
        if let Some(origin) = resource_origin(entry) {
            assert!(kept.contains(&origin));
        }
    }
    let hashes = ["sha256-abc=".to_string()];
    let csp = frame_csp("https://strad.example.com", &hashes, &declared);
    let directives: Vec<&str> = csp.split("; ").collect();
    assert_eq!(csp.matches(';').count(), DIRECTIVES.len() - 1, "{csp}");
    assert_eq!(directives.len(), DIRECTIVES.len(), "{csp}");
    for (directive, name) in directives.iter().zip(DIRECTIVES) {
        assert_eq!(directive.split(' ').next(), Some(name), "{csp}");
    }
    // The quotes are the policy's own keywords and hash: none comes from an entry.
    assert_eq!(csp.matches('\'').count(), 16, "{csp}");
    assert!(!csp.contains('"'), "{csp}");
    assert!(!csp.chars().any(|c| c.is_control() || c == ','), "{csp:?}");
    // The policy is the one built from the kept origins alone.
    assert_eq!(csp, frame_csp("https://strad.example.com", &hashes, &kept));
});
