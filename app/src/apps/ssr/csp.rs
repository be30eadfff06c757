//! The frame's Content-Security-Policy (SPEC §6) and the filter its declared resource
//! domains pass through. A declared domain is kept only as a bare `https://` origin that
//! strad rebuilds itself; anything else is dropped, never spliced into the header.

/// `https://host[:port]`, lower-cased, when `entry` is exactly that (one trailing `/`
/// tolerated), with an optional `*.` leftmost label; `None` otherwise.
pub fn resource_origin(entry: &str) -> Option<String> {
    let rest = entry.strip_prefix("https://").or_else(|| {
        // The scheme is case-insensitive; nothing else about the entry is.
        entry
            .get(..8)
            .filter(|s| s.eq_ignore_ascii_case("https://"))
            .map(|_| &entry[8..])
    })?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    if let Some(port) = port {
        let valid = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
        if !valid || port.parse::<u32>().map_or(true, |p| p == 0 || p > 65535) {
            return None;
        }
    }
    let host = host.to_ascii_lowercase();
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host.as_str()),
    };
    let labels: Vec<&str> = name.split('.').collect();
    // A wildcard needs a registrable-looking name under it: `*.com` would be every site.
    let enough = if wildcard {
        labels.len() >= 2
    } else {
        labels.len() >= 2 || name == "localhost"
    };
    let labels_ok = labels.iter().all(|l| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if !enough || !labels_ok || name.len() > 253 {
        return None;
    }
    Some(match port {
        Some(port) => format!("https://{host}:{port}"),
        None => format!("https://{host}"),
    })
}

/// The declared domains that survive the filter, without duplicates, in order.
pub fn resource_origins(declared: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for origin in declared.iter().filter_map(|d| resource_origin(d)) {
        if !kept.contains(&origin) {
            kept.push(origin);
        }
    }
    kept
}

/// The frame's CSP: sandboxed without `allow-same-origin` (an opaque origin, framed or
/// opened directly), no network, only the pinned inline scripts, media from `data:`,
/// `blob:` and the filtered domains, framed by the console alone.
///
/// `script_hashes` are `sha256-<base64>` sources; `console_origin` is strad's public origin.
pub fn frame_csp(
    console_origin: &str,
    script_hashes: &[String],
    resource_domains: &[String],
) -> String {
    let media = {
        let mut sources = vec!["data:".to_string(), "blob:".to_string()];
        sources.extend(resource_origins(resource_domains));
        sources.join(" ")
    };
    let scripts = if script_hashes.is_empty() {
        "'none'".to_string()
    } else {
        script_hashes
            .iter()
            .map(|h| format!("'{h}'"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    [
        "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox".to_string(),
        "default-src 'none'".to_string(),
        format!("script-src {scripts}"),
        format!("style-src 'unsafe-inline' {media}"),
        format!("img-src {media}"),
        format!("font-src {media}"),
        format!("media-src {media}"),
        "connect-src 'none'".to_string(),
        "object-src 'none'".to_string(),
        "frame-src 'none'".to_string(),
        "form-action 'none'".to_string(),
        "base-uri 'none'".to_string(),
        format!("frame-ancestors {console_origin}"),
    ]
    .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_https_origins_are_kept_and_normalised() {
        for (entry, kept) in [
            ("https://cdn.example.com", "https://cdn.example.com"),
            ("https://CDN.Example.com", "https://cdn.example.com"),
            ("HTTPS://cdn.example.com", "https://cdn.example.com"),
            ("https://cdn.example.com/", "https://cdn.example.com"),
            (
                "https://cdn.example.com:8443",
                "https://cdn.example.com:8443",
            ),
            ("https://*.example.com", "https://*.example.com"),
            ("https://a-b.c-d.example", "https://a-b.c-d.example"),
            ("https://10.0.0.1", "https://10.0.0.1"),
            ("https://localhost:8443", "https://localhost:8443"),
        ] {
            assert_eq!(resource_origin(entry).as_deref(), Some(kept), "{entry}");
        }
    }

    #[test]
    fn anything_that_is_not_a_bare_https_origin_is_dropped() {
        for entry in [
            "",
            "cdn.example.com",
            "http://cdn.example.com",
            "//cdn.example.com",
            "wss://cdn.example.com",
            "data:",
            "blob:",
            "*",
            "https://*",
            "https://*.com",
            "https://a.*.example.com",
            "https://*example.com",
            "https://cdn.example.com/path",
            "https://cdn.example.com//",
            "https://cdn.example.com?x=1",
            "https://cdn.example.com#x",
            "https://user@cdn.example.com",
            "https://cdn.example.com:0",
            "https://cdn.example.com:65536",
            "https://cdn.example.com:80a",
            "https://cdn.example.com:",
            "https://cdn.example.com; script-src *",
            "https://cdn.example.com 'unsafe-inline'",
            "https://cdn.example.com'",
            "https://cdn.example.com\"",
            "https://cdn.example.com\n",
            "https://cdn.example.com\tx",
            " https://cdn.example.com",
            "https://cdn.example.com,https://evil.example",
            "https://-bad.example.com",
            "https://bad-.example.com",
            "https://exa_mple.com",
            "https://ex%61mple.com",
            "https://xn--bcher-kva.example\u{0}",
            "https://[::1]",
            "https://com",
            "'self'",
            "'unsafe-eval'",
        ] {
            assert_eq!(resource_origin(entry), None, "{entry:?}");
        }
    }

    #[test]
    fn kept_domains_are_deduplicated_in_order() {
        let declared: Vec<String> = [
            "https://b.example.com",
            "https://a.example.com",
            "https://B.example.com/",
            "bad",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            resource_origins(&declared),
            ["https://b.example.com", "https://a.example.com"]
        );
    }

    #[test]
    fn the_frame_csp_is_exactly_the_specified_policy() {
        let csp = frame_csp(
            "https://strad.example.com",
            &["sha256-abc=".to_string(), "sha256-def=".to_string()],
            &[
                "https://cdn.example.com".to_string(),
                "https://evil.example; script-src *".to_string(),
            ],
        );
        assert_eq!(
            csp,
            "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox; default-src 'none'; \
             script-src 'sha256-abc=' 'sha256-def='; \
             style-src 'unsafe-inline' data: blob: https://cdn.example.com; \
             img-src data: blob: https://cdn.example.com; font-src data: blob: https://cdn.example.com; \
             media-src data: blob: https://cdn.example.com; connect-src 'none'; object-src 'none'; \
             frame-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors https://strad.example.com"
        );
    }

    #[test]
    fn the_frame_csp_never_allows_same_origin_eval_or_inline_script() {
        let csp = frame_csp("https://s.example", &[], &[]);
        assert!(csp.contains("script-src 'none'"));
        for forbidden in [
            "allow-same-origin",
            "unsafe-eval",
            "'unsafe-inline' 'sha",
            "script-src 'unsafe-inline'",
            "*",
        ] {
            assert!(!csp.contains(forbidden), "{forbidden} in {csp}");
        }
    }

    #[test]
    fn a_dropped_domain_cannot_add_a_directive() {
        let csp = frame_csp(
            "https://s.example",
            &[],
            &["https://x.example; script-src 'unsafe-inline'".into()],
        );
        assert_eq!(csp.matches("script-src").count(), 1);
        assert!(!csp.contains("x.example"));
    }
}
