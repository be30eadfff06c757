//! The host's address and the frame's (SPEC §6 "Location", "Mirroring", "History"), as pure
//! functions over query strings and hashes, so every rule is tested here; the bridge only
//! reads and writes the browser's location with them.
//!
//! - The frame's query is the host's `uri` first, then the host's other params; `uri` and
//!   `token` are the host's and never forwarded. Params are decoded and encoded again, so
//!   whatever the address bar held reaches the frame in one canonical form.
//! - A search the app reports replaces every param of the address bar except `uri`, which
//!   the host keeps (first); a `token` is never written.

use crate::shell::protected::encode_component;

/// Query params that belong to the host: never forwarded to the frame, never written by it.
pub const HOST_PARAMS: [&str; 2] = ["uri", "token"];
/// Longest hash or search the host accepts from an app.
pub const MAX_LOCATION_PART: usize = 8192;

/// Decodes `%XX` escapes and `+` (a query's space); invalid escapes are kept as text.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len()
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit() =>
            {
                let nibble = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                out.push(nibble(bytes[i + 1]) << 4 | nibble(bytes[i + 2]));
                i += 3;
                continue;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A query string (with or without its `?`) as decoded pairs, in order; empty parts skipped.
pub fn parse_query(search: &str) -> Vec<(String, String)> {
    search
        .strip_prefix('?')
        .unwrap_or(search)
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| match part.split_once('=') {
            Some((key, value)) => (decode(key), decode(value)),
            None => (decode(part), String::new()),
        })
        .collect()
}

/// Pairs as a query string without its `?`, every key and value percent-encoded.
pub fn encode_query<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    pairs
        .into_iter()
        .map(|(key, value)| format!("{}={}", encode_component(key), encode_component(value)))
        .collect::<Vec<_>>()
        .join("&")
}

fn is_host_param(key: &str) -> bool {
    HOST_PARAMS.contains(&key)
}

/// The frame's query (without `?`): `uri` first, then the host's own params except the host's.
pub fn frame_query(uri: &str, host_search: &str) -> String {
    let host = parse_query(host_search);
    let forwarded = host
        .iter()
        .filter(|(key, _)| !is_host_param(key))
        .map(|(k, v)| (k.as_str(), v.as_str()));
    encode_query(std::iter::once(("uri", uri)).chain(forwarded))
}

/// The address bar's query (with `?`, or empty) after the app reports `app_search`: the
/// host's `uri` kept and first, every other param the app's, never a `uri` or `token` of
/// the app's.
pub fn mirrored_search(host_search: &str, app_search: &str) -> String {
    let host = parse_query(host_search);
    let app = parse_query(app_search);
    let kept = host
        .iter()
        .filter(|(key, _)| key == "uri")
        .take(1)
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let from_app = app
        .iter()
        .filter(|(key, _)| !is_host_param(key))
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let query = encode_query(kept.chain(from_app));
    if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    }
}

/// A hash an app reported, as the host will hand it to the browser: empty, or `#` and the
/// rest; `None` when it is too long or holds control characters.
pub fn normalize_hash(hash: &str) -> Option<String> {
    if hash.len() > MAX_LOCATION_PART || hash.chars().any(char::is_control) {
        return None;
    }
    let rest = hash.strip_prefix('#').unwrap_or(hash);
    Some(if rest.is_empty() {
        String::new()
    } else {
        format!("#{rest}")
    })
}

/// What the host does with an app's hash report (SPEC §6 "History").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HashAction {
    /// Nothing: the address bar shows it already, or it is a late report of a hash Back
    /// already left.
    Ignore,
    Replace,
    Push,
}

/// The history state the host keeps for its frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashHistory {
    /// Reports seen from this app session.
    reports: u32,
    /// The hash Back or Forward just left, until the app reports another one.
    left: Option<String>,
}

impl HashHistory {
    /// Decides what a report of `hash` (already in the address bar's encoding) does, given
    /// the hash the address bar shows, whether the app asked to push, and whether the
    /// person has just interacted (transient user activation).
    pub fn report(&mut self, hash: &str, shown: &str, push: bool, activated: bool) -> HashAction {
        self.reports += 1;
        let first = self.reports == 1;
        if self.left.as_deref() == Some(hash) {
            return HashAction::Ignore;
        }
        self.left = None;
        if hash == shown {
            HashAction::Ignore
        } else if push && activated && !first {
            HashAction::Push
        } else {
            HashAction::Replace
        }
    }

    /// Back or Forward moved the address bar from `from` to `to`: the app is told `to`, and
    /// a late report of `from` is dropped.
    pub fn traversed(&mut self, from: &str, to: &str) {
        self.left = (from != to).then(|| from.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_and_encode_again() {
        assert_eq!(
            parse_query("?a=1&b=x+y&c=%C3%A9&d&&e=%zz&f=100%"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "é".into()),
                ("d".into(), "".into()),
                ("e".into(), "%zz".into()),
                ("f".into(), "100%".into()),
            ]
        );
        assert_eq!(parse_query(""), vec![]);
        assert_eq!(parse_query("?"), vec![]);
        assert_eq!(
            encode_query([("a b", "c&d=e"), ("é", "/#?")]),
            "a%20b=c%26d%3De&%C3%A9=%2F%23%3F"
        );
    }

    #[test]
    fn the_frame_gets_the_hosts_params_but_never_uri_or_token_and_uri_comes_first() {
        assert_eq!(
            frame_query("ui://clock/app.html", "?view=week&token=strad_x"),
            "uri=ui%3A%2F%2Fclock%2Fapp.html&view=week"
        );
        assert_eq!(
            frame_query("ui://a", "?x=1&uri=ui%3A%2F%2Fother&token=t&y=a+b&token=u"),
            "uri=ui%3A%2F%2Fa&x=1&y=a%20b"
        );
        assert_eq!(frame_query("ui://a", ""), "uri=ui%3A%2F%2Fa");
        // Whatever the address held is re-encoded: no raw `&`, `#` or quote reaches the frame.
        assert_eq!(
            frame_query("ui://a", "?q=%22%3E%3Cscript%3E&h=%23x"),
            "uri=ui%3A%2F%2Fa&q=%22%3E%3Cscript%3E&h=%23x"
        );
    }

    #[test]
    fn a_mirrored_search_keeps_the_hosts_uri_and_replaces_the_rest() {
        assert_eq!(
            mirrored_search("?uri=ui%3A%2F%2Fa&view=week", "?view=day&page=2"),
            "?uri=ui%3A%2F%2Fa&view=day&page=2"
        );
        assert_eq!(mirrored_search("?view=week", "view=day"), "?view=day");
        assert_eq!(mirrored_search("?view=week", ""), "");
        // The app cannot set the host's params.
        assert_eq!(
            mirrored_search(
                "?uri=ui%3A%2F%2Fa",
                "?uri=ui%3A%2F%2Fevil&token=strad_x&x=1"
            ),
            "?uri=ui%3A%2F%2Fa&x=1"
        );
        assert_eq!(mirrored_search("", "?token=strad_x"), "");
    }

    #[test]
    fn hashes_are_normalized_or_refused() {
        assert_eq!(normalize_hash("#item-3").as_deref(), Some("#item-3"));
        assert_eq!(normalize_hash("item-3").as_deref(), Some("#item-3"));
        assert_eq!(normalize_hash("#").as_deref(), Some(""));
        assert_eq!(normalize_hash("").as_deref(), Some(""));
        assert_eq!(normalize_hash("#a\nb"), None);
        assert_eq!(normalize_hash(&"x".repeat(MAX_LOCATION_PART + 1)), None);
    }

    #[test]
    fn pushes_need_activation_a_new_hash_and_not_the_first_report() {
        let mut history = HashHistory::default();
        // The first report on load only replaces, even with activation.
        assert_eq!(history.report("#a", "", true, true), HashAction::Replace);
        assert_eq!(history.report("#b", "#a", true, true), HashAction::Push);
        // Without a click: replaced, no entry.
        assert_eq!(history.report("#c", "#b", true, false), HashAction::Replace);
        // Not asked to push.
        assert_eq!(history.report("#d", "#c", false, true), HashAction::Replace);
        // Already shown.
        assert_eq!(history.report("#d", "#d", true, true), HashAction::Ignore);
    }

    #[test]
    fn a_late_report_of_a_hash_back_left_is_dropped() {
        let mut history = HashHistory::default();
        history.report("#a", "", false, false);
        history.report("#b", "#a", true, true);
        // Back: #b → #a. The app, not yet told, reports #b again.
        history.traversed("#b", "#a");
        assert_eq!(history.report("#b", "#a", false, false), HashAction::Ignore);
        assert_eq!(history.report("#b", "#a", true, true), HashAction::Ignore);
        // Once it reports something else, #b is a hash like any other.
        assert_eq!(history.report("#a", "#a", false, false), HashAction::Ignore);
        assert_eq!(history.report("#b", "#a", true, true), HashAction::Push);
    }
}
