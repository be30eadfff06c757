//! `host/open` (SPEC §6): a page asks the host to open a console place by path or id; the
//! host builds the URL from the parsed path and query. Never a URL from the page, and never
//! authority: a login token in the query would sign the person's browser in as someone else.

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

/// Query parameters that carry authority (compared without case): dropped, so a page cannot
/// open the console signed in as someone else, or replay a sign-in.
const CREDENTIAL_PARAMS: [&str; 13] = [
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

/// Top-level routes that are not places: sign-in, server functions, the site's files.
const NOT_PLACES: [&str; 3] = ["auth", "api", "pkg"];

/// The URL of the console place `path` names, rebuilt from its parts; `None` when it is not
/// one. The text must be one `/`-rooted path with no backslash, control or space character;
/// each segment is percent-decoded once (a segment still encoded after that, or holding a
/// `/`, is refused) and dot segments are resolved before the route check, so no spelling
/// reaches `/auth`, `/api`, `/pkg` or the frame route. Credential parameters are dropped.
pub fn console_path(path: &str) -> Option<String> {
    if path.len() > 2048 || !is_plain_path(path) {
        return None;
    }
    let (rest, fragment) = path.split_once('#').unwrap_or((path, ""));
    let (raw_path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let segments = resolve(raw_path)?;
    if !is_place(&segments) {
        return None;
    }
    let mut url = String::new();
    for segment in &segments {
        url.push('/');
        encode_segment(segment, &mut url);
    }
    let query = without_credentials(query);
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query);
    }
    if !fragment.is_empty() {
        // Never sent to the server, and already free of what a browser strips or folds.
        url.push('#');
        url.push_str(fragment);
    }
    // The rebuilt URL must still be a path on this console, as sign-in's `next` must.
    crate::auth::safe_next_path(&url).map(str::to_owned)
}

/// One leading `/` (a second one, as in `//evil`, is an empty segment that `resolve`
/// refuses) and nothing a browser would strip, fold or read as a separator.
fn is_plain_path(path: &str) -> bool {
    path.starts_with('/')
        && !path
            .chars()
            .any(|c| c == '\\' || c.is_control() || c.is_whitespace())
}

/// The decoded segments of `/`-rooted `path` with `.` and `..` resolved; a trailing one
/// leaves an empty last segment, as a browser does. `None` for a `..` above the root, an
/// empty segment before the last (`/.//evil` would become `//evil`), or a segment that
/// decodes to a `/`, a backslash, a space, a control character or another escape.
fn resolve(path: &str) -> Option<Vec<String>> {
    let raw: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let last = raw.len() - 1;
    let mut segments = Vec::with_capacity(raw.len());
    for (i, raw) in raw.into_iter().enumerate() {
        let segment = percent_decode(raw)?;
        if segment
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '%') || c.is_control() || c.is_whitespace())
        {
            return None;
        }
        match segment.as_str() {
            "." | ".." => {
                if segment == ".." {
                    segments.pop()?;
                }
                if i == last {
                    segments.push(String::new());
                }
            }
            "" if i != last => return None,
            _ => segments.push(segment),
        }
    }
    Some(segments)
}

/// Whether resolved `segments` name a page: not sign-in, server functions or the site's
/// files, and not the frame route (`/apps/<slug>/frame/…`), which runs only inside the host.
fn is_place(segments: &[String]) -> bool {
    let is = |i: usize, name: &str| {
        segments
            .get(i)
            .is_some_and(|s| s.eq_ignore_ascii_case(name))
    };
    let reserved = NOT_PLACES.iter().any(|name| is(0, name));
    let frame_route = is(0, "apps") && is(2, "frame");
    !(reserved || frame_route)
}

/// The query without credential parameters, re-encoded.
fn without_credentials(query: &str) -> String {
    let mut kept = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if !CREDENTIAL_PARAMS
            .iter()
            .any(|name| key.eq_ignore_ascii_case(name))
        {
            kept.append_pair(&key, &value);
        }
    }
    kept.finish()
}

/// Appends `segment` percent-encoded: everything but unreserved characters, sub-delimiters,
/// `:` and `@` (RFC 3986 `pchar`).
fn encode_segment(segment: &str, out: &mut String) {
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}

/// One round of percent-decoding; `None` for a malformed escape or invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
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
            "/%+a",
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
    fn dot_segments_and_encodings_are_resolved_before_the_check() {
        for path in [
            "/./auth/callback",
            "/apps/../auth/x",
            "/apps/x/%2e%2e/%2e%2e/auth/local",
            "/apps/x/%2E%2e/%2e%2E/api/people",
            "/%2e/auth/callback",
            "/apps/.%2e/pkg/strad.js",
            "/apps/clock/../../AUTH/local",
            "/apps/%252e%252e/auth/x",
            "/%252e%252e/auth/x",
            "/%2561uth/local",
            "/apps/x/..%2f..%2fauth/local",
            "/apps%2fx",
            "/apps/a%2Fb",
            "/apps/a%5cb",
            "/apps/a%00b",
            "/apps/a%20b",
            "/..",
            "/../auth/local",
            "/apps/../..",
            "/apps/x/../../..",
            "/%2e%2e",
            "/.//evil.example",
            "/apps/..//evil.example",
            "/x/../%2F/evil.example",
            "/apps//clock",
            "/auth",
            "/Auth/",
            "/api",
            "/pkg",
            "/PKG/strad.wasm",
        ] {
            assert_eq!(console_path(path), None, "{path:?}");
        }
    }

    #[test]
    fn the_frame_route_is_not_a_place() {
        for path in [
            "/apps/x/frame",
            "/apps/x/frame/",
            "/apps/x/frame/abc",
            "/APPS/x/FRAME",
            "/apps/x/Frame/abc?v=1",
            "/apps/x/./frame/abc",
            "/apps/x/y/../frame",
            "/apps/x/%66rame/abc",
            "/apps/x/fr%61me",
        ] {
            assert_eq!(console_path(path), None, "{path:?}");
        }
    }

    #[test]
    fn overlong_paths_are_refused() {
        assert_eq!(console_path(&format!("/{}", "a".repeat(4096))), None);
        assert_eq!(console_path(&format!("/?q={}", "a".repeat(4096))), None);
    }

    #[test]
    fn credentials_are_dropped_from_the_query() {
        for (path, rebuilt) in [
            ("/?token=strad_abc", "/"),
            ("/?TOKEN=strad_abc", "/"),
            ("/?Token=strad_abc&token=again", "/"),
            ("/?tok%65n=strad_abc", "/"),
            ("/people?a=1&token=x&b=2", "/people?a=1&b=2"),
            ("/people?token=x#item-3", "/people#item-3"),
            (
                "/?access_token=a&id_token=b&refresh_token=c&code=d&state=e&session=f&ticket=g&view=week",
                "/?view=week",
            ),
            (
                "/apps/clock?Code=x&uri=ui%3A%2F%2Fclock",
                "/apps/clock?uri=ui%3A%2F%2Fclock",
            ),
            ("/?SESSION=x&Ticket=y&STATE=z", "/"),
        ] {
            assert_eq!(console_path(path).as_deref(), Some(rebuilt), "{path:?}");
        }
    }

    #[test]
    fn the_url_is_rebuilt_from_its_parsed_parts() {
        for (path, rebuilt) in [
            ("/apps/./clock", "/apps/clock"),
            ("/servers/x/../budget", "/servers/budget"),
            ("/apps/%63lock", "/apps/clock"),
            ("/apps/clock/..", "/apps/"),
            ("/apps/clock/.", "/apps/clock/"),
            ("/apps/caf%C3%A9", "/apps/caf%C3%A9"),
            ("/apps/caf\u{e9}", "/apps/caf%C3%A9"),
            ("/apps/a%3Fb%23c", "/apps/a%3Fb%23c"),
            ("/audit?kind=a%20b", "/audit?kind=a+b"),
            ("/audit?kind=a+b&x=%26", "/audit?kind=a+b&x=%26"),
            ("/people?x", "/people?x="),
            ("/people?", "/people"),
            ("/people#", "/people"),
            ("/apps/frame", "/apps/frame"),
            ("/apps/x/frames", "/apps/x/frames"),
            ("/authors", "/authors"),
            ("/apis/x", "/apis/x"),
        ] {
            assert_eq!(console_path(path).as_deref(), Some(rebuilt), "{path:?}");
        }
    }

    #[test]
    fn every_place_an_id_names_is_a_console_path_as_it_stands() {
        for id in ["home", "tokens", "app:clock", "server:budget-2"] {
            let place = place_for_id(id).expect(id);
            assert_eq!(
                console_path(&place).as_deref(),
                Some(place.as_str()),
                "{id}"
            );
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
