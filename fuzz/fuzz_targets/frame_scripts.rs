//! The frame route's document step: `<base target="_blank">` injected, inline scripts
//! hashed. Any document: the base element is inserted once and nothing else changes, the
//! scripts (and so their hashes) are the same before and after, and hashing is a function.
#![no_main]

use app::apps::ssr::scripts::{hash_source, inline_scripts, script_hashes, with_base_target};
use libfuzzer_sys::fuzz_target;

const BASE: &str = "<base target=\"_blank\">";

fuzz_target!(|data: &[u8]| {
    let Ok(html) = std::str::from_utf8(data) else {
        return;
    };
    let served = with_base_target(html);
    // The document with the base element spliced in at one place, and nothing else.
    assert_eq!(served.len(), html.len() + BASE.len());
    let (served_bytes, html_bytes, base) = (served.as_bytes(), html.as_bytes(), BASE.as_bytes());
    let differs = served_bytes
        .iter()
        .zip(html_bytes)
        .position(|(a, b)| a != b)
        .unwrap_or(html.len());
    let spliced_at = |i: usize| {
        served_bytes[i..].starts_with(base)
            && served_bytes[..i] == html_bytes[..i]
            && served_bytes[i + base.len()..] == html_bytes[i..]
    };
    assert!((0..=differs).any(spliced_at), "{html:?} -> {served:?}");

    let scripts = inline_scripts(html);
    let hashes = script_hashes(html);
    assert_eq!(hashes, script_hashes(html), "hashing is deterministic");
    assert!(hashes.len() <= scripts.len());
    for (i, hash) in hashes.iter().enumerate() {
        assert!(
            hash.starts_with("sha256-") && hash.len() == 7 + 44,
            "{hash}"
        );
        assert!(!hashes[..i].contains(hash));
        assert!(scripts.iter().any(|s| &hash_source(s) == hash));
    }
    // Scripts are not touched by the base element, so their hashes hold.
    assert_eq!(inline_scripts(&served), scripts, "{html:?}");
});
