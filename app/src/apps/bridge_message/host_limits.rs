//! What the host does with a valid request: the links it opens, the heights it takes.

/// A `host/resize` height kept inside the container's bounds (NaN and infinities were
/// refused already).
pub fn clamp_height(height: f64, min: f64, max: f64) -> f64 {
    height.clamp(min, max)
}

/// Whether `ui/open-link` may open `url`: an absolute `http:` or `https:` URL only.
pub fn is_openable_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| {
        !rest.is_empty()
            && !rest.starts_with('/')
            && !url.chars().any(|c| c.is_control() || c == '\\')
    }) && url.trim_start() == url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heights_are_clamped() {
        assert_eq!(clamp_height(10.0, 120.0, 2000.0), 120.0);
        assert_eq!(clamp_height(1e9, 120.0, 2000.0), 2000.0);
        assert_eq!(clamp_height(500.0, 120.0, 2000.0), 500.0);
    }

    #[test]
    fn only_http_and_https_links_open() {
        for url in [
            "https://example.com",
            "http://example.com/a?b#c",
            "HTTPS://EXAMPLE.COM",
        ] {
            assert!(is_openable_link(url), "{url}");
        }
        for url in [
            "javascript:alert(1)",
            "data:text/html,x",
            "file:///etc/passwd",
            "/relative",
            "//evil.example",
            "https:///x",
            "https://",
            " https://example.com",
            "https://example.com\\@evil",
            "https://ex\nample.com",
            "blob:https://x",
        ] {
            assert!(!is_openable_link(url), "{url:?}");
        }
    }
}
