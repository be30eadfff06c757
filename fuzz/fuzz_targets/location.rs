//! The host's location rules: what it forwards to the frame as query, what it writes to the
//! address bar when an app reports a search or a hash, and when a report pushes history.
#![no_main]

use app::apps::location::{
    HOST_PARAMS, HashAction, HashHistory, MAX_LOCATION_PART, encode_query, frame_query,
    mirrored_search, normalize_hash, parse_query,
};
use libfuzzer_sys::fuzz_target;

/// An app's hash report, and whether Back or Forward moved to `shown` just before it.
#[derive(Debug)]
struct Report {
    hash: String,
    shown: String,
    push: bool,
    activated: bool,
    traversed: bool,
}

/// The input's fields, separated by the byte 0xFF (never part of UTF-8 text): the frame's
/// `uri`, the host's search, the app's search, then per report its hash, the hash shown and
/// a byte of flags (push, activated, traversed).
struct Input {
    uri: String,
    host_search: String,
    app_search: String,
    reports: Vec<Report>,
}

impl Input {
    fn read(data: &[u8]) -> Input {
        let mut parts = data.split(|&b| b == 0xFF).map(String::from_utf8_lossy);
        let mut next = || parts.next().map(|p| p.into_owned()).unwrap_or_default();
        let (uri, host_search, app_search) = (next(), next(), next());
        let mut reports = Vec::new();
        loop {
            let (hash, shown, flags) = (next(), next(), next());
            if hash.is_empty() && shown.is_empty() && flags.is_empty() {
                break;
            }
            let flag = |bit: u8| flags.bytes().next().is_some_and(|f| f & bit != 0);
            reports.push(Report {
                hash,
                shown,
                push: flag(1),
                activated: flag(2),
                traversed: flag(4),
            });
        }
        Input {
            uri,
            host_search,
            app_search,
            reports,
        }
    }
}

/// What a canonical query is made of: `key=value` pairs of percent-encoded bytes.
fn is_canonical(query: &str) -> bool {
    query
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~%=&".contains(&b))
}

fuzz_target!(|data: &[u8]| {
    let input = Input::read(data);
    let host = parse_query(&input.host_search);
    let app = parse_query(&input.app_search);

    // The frame's query: the host's uri first, then the host's params but its own.
    let query = frame_query(&input.uri, &input.host_search);
    assert!(is_canonical(&query), "{query}");
    let forwarded = parse_query(&query);
    let mut expected = vec![("uri".to_string(), input.uri.clone())];
    expected.extend(
        host.iter()
            .filter(|(k, _)| !HOST_PARAMS.contains(&k.as_str()))
            .cloned(),
    );
    assert_eq!(forwarded, expected);

    // The address bar after an app's search: the host's first uri, then the app's params.
    let search = mirrored_search(&input.host_search, &input.app_search);
    if !search.is_empty() {
        assert!(
            search.starts_with('?') && is_canonical(&search[1..]),
            "{search}"
        );
    }
    let written = parse_query(&search);
    let host_uri = host.iter().find(|(k, _)| k == "uri");
    let from_app: Vec<_> = written
        .iter()
        .skip(usize::from(host_uri.is_some()))
        .collect();
    assert_eq!(written.first().filter(|(k, _)| k == "uri"), host_uri);
    assert!(
        from_app
            .iter()
            .all(|(k, _)| !HOST_PARAMS.contains(&k.as_str())),
        "{search}"
    );
    assert_eq!(
        from_app.len(),
        app.iter()
            .filter(|(k, _)| !HOST_PARAMS.contains(&k.as_str()))
            .count()
    );

    // Encoding round-trips exactly.
    let pairs: Vec<(&str, &str)> = app.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(parse_query(&encode_query(pairs.iter().copied())), app);

    // Hashes and history.
    let mut history = HashHistory::default();
    for (i, report) in input.reports.iter().take(64).enumerate() {
        let normalized = normalize_hash(&report.hash);
        if let Some(hash) = &normalized {
            assert!(
                hash.is_empty() || (hash.starts_with('#') && hash.len() > 1),
                "{hash:?}"
            );
            assert!(hash.len() <= MAX_LOCATION_PART + 1);
            assert!(!hash.chars().any(char::is_control));
            if hash.len() <= MAX_LOCATION_PART {
                assert_eq!(normalize_hash(hash).as_ref(), Some(hash), "stable");
            }
        } else {
            assert!(
                report.hash.len() > MAX_LOCATION_PART || report.hash.chars().any(char::is_control)
            );
        }
        if report.traversed {
            history.traversed(&report.hash, &report.shown);
        }
        let action = history.report(&report.hash, &report.shown, report.push, report.activated);
        if report.hash == report.shown {
            assert_eq!(action, HashAction::Ignore);
        }
        if action == HashAction::Push {
            assert!(report.push && report.activated && i > 0, "{report:?}");
        }
    }
});
