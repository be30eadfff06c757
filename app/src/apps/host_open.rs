//! `host/open` (SPEC §6): a page asks the host to open a console place by path or id; the
//! host builds the URL. Never a URL from the page: `//evil.example`, `/\evil`, schemes and
//! their percent-encoded variants are refused.

/// A console place named by id.
pub fn place_for_id(id: &str) -> Option<String> {
    let slug_ok = |s: &str| crate::servers::is_valid_slug(s);
    match id.split_once(':') {
        None if id == "home" => Some("/".into()),
        None if id == "tokens" => Some("/tokens".into()),
        Some(("app", slug)) if slug_ok(slug) => Some(format!("/apps/{slug}")),
        Some(("server", slug)) if slug_ok(slug) => Some(format!("/servers/{slug}")),
        _ => None,
    }
}

/// The path, when it is a console place: one leading `/`, no backslash, no control or
/// space characters, no scheme or authority — checked on the text and again after one
/// round of percent-decoding (a browser or a proxy may decode once). Sign-in and server
/// function routes are not places.
pub fn console_path(path: &str) -> Option<String> {
    if path.len() > 2048 || !is_plain_path(path) {
        return None;
    }
    let decoded = percent_decode(path)?;
    if !is_plain_path(&decoded) {
        return None;
    }
    let lower = decoded.to_ascii_lowercase();
    if ["/auth/", "/api/", "/pkg/"]
        .iter()
        .any(|prefix| lower.starts_with(prefix))
        || lower == "/auth"
        || lower == "/api"
    {
        return None;
    }
    Some(path.to_owned())
}

fn is_plain_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.first() == Some(&b'/')
        && !matches!(bytes.get(1), Some(b'/') | Some(b'\\'))
        && !path
            .chars()
            .any(|c| c == '\\' || c.is_control() || c.is_whitespace())
}

/// One round of percent-decoding; `None` for a malformed escape or invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_paths_are_accepted() {
        for path in [
            "/",
            "/apps/clock",
            "/servers/budget?tab=tools",
            "/apps/clock#item-3",
            "/audit?kind=app_change",
        ] {
            assert_eq!(console_path(path).as_deref(), Some(path), "{path}");
        }
    }

    #[test]
    fn urls_and_their_disguises_are_refused() {
        for path in [
            "",
            "apps/clock",
            "https://evil.example",
            "javascript:alert(1)",
            "data:text/html,x",
            "//evil.example",
            "///evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "/%2Fevil.example",
            "/%2fevil.example",
            "/%5Cevil.example",
            "/%5cevil.example",
            "%2F%2Fevil.example",
            "/%0a/evil",
            "/%09/evil",
            "/ evil",
            "/x\\y",
            "/\u{0}x",
            "/%zz",
            "/%",
            "/%ff%fe",
            "/auth/sign-out",
            "/AUTH/local?code=x",
            "/api/people",
            "/%61uth/login",
            "/pkg/strad.js",
        ] {
            assert_eq!(console_path(path), None, "{path:?}");
        }
    }

    #[test]
    fn ids_name_places_and_nothing_else() {
        assert_eq!(place_for_id("home").as_deref(), Some("/"));
        assert_eq!(place_for_id("app:clock").as_deref(), Some("/apps/clock"));
        assert_eq!(
            place_for_id("server:budget-2").as_deref(),
            Some("/servers/budget-2")
        );
        for id in [
            "",
            "app:",
            "app:Clock",
            "app:../x",
            "app://evil",
            "url:https://evil.example",
            "server:a/b",
        ] {
            assert_eq!(place_for_id(id), None, "{id}");
        }
    }
}
