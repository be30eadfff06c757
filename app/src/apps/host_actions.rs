//! The pure rules behind the host's ask-first actions (SPEC §6 "Bridge"): which files a
//! `ui/download-file` may name and how they are saved, and whose links open without asking.
//! The bridge asks the person before each of these; what it shows and what it does are
//! decided here, where they are tested.

use serde_json::{Map, Value};

/// Files one `ui/download-file` may name.
pub const DOWNLOAD_ITEMS_MAX: usize = 10;
/// The longest file name the host saves under.
const FILE_NAME_MAX: usize = 100;

/// One file of a `ui/download-file` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DownloadItem {
    /// An embedded resource: its bytes are in the message (`text`, or base64 `blob`).
    Embedded {
        uri: String,
        mime_type: Option<String>,
        body: Body,
    },
    /// A resource link: the host reads it from the same server, through its own route.
    Link {
        uri: String,
        name: Option<String>,
        mime_type: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Text(String),
    Base64(String),
}

impl DownloadItem {
    pub fn uri(&self) -> &str {
        match self {
            DownloadItem::Embedded { uri, .. } | DownloadItem::Link { uri, .. } => uri,
        }
    }

    /// The name the file is saved under: the link's name, else the URI's last segment, made
    /// safe (`safe_file_name`).
    pub fn file_name(&self) -> String {
        let named = match self {
            DownloadItem::Link {
                name: Some(name), ..
            } => name.as_str(),
            _ => self.uri().rsplit(['/', ':']).next().unwrap_or_default(),
        };
        safe_file_name(named)
    }

    /// The content type the file is saved with (`safe_content_type`).
    pub fn content_type(&self) -> &'static str {
        let declared = match self {
            DownloadItem::Embedded { mime_type, .. } | DownloadItem::Link { mime_type, .. } => {
                mime_type.as_deref()
            }
        };
        safe_content_type(declared.unwrap_or_default())
    }

    /// The size in bytes when the message carries the file (a link's is known only later).
    pub fn size(&self) -> Option<usize> {
        match self {
            DownloadItem::Embedded {
                body: Body::Text(text),
                ..
            } => Some(text.len()),
            DownloadItem::Embedded {
                body: Body::Base64(blob),
                ..
            } => Some(blob.len() / 4 * 3),
            DownloadItem::Link { .. } => None,
        }
    }
}

fn short(map: &Map<String, Value>, key: &str, max: usize) -> Option<String> {
    map.get(key)?
        .as_str()
        .filter(|s| !s.is_empty() && s.len() <= max)
        .map(str::to_owned)
}

/// `{contents: [EmbeddedResource | ResourceLink]}`: one to `DOWNLOAD_ITEMS_MAX` files, each
/// with a URI and either its text or base64 bytes (embedded) or nothing more (a link).
pub fn download_items(params: &Map<String, Value>) -> Result<Vec<DownloadItem>, &'static str> {
    let contents = params
        .get("contents")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty() && c.len() <= DOWNLOAD_ITEMS_MAX)
        .ok_or("contents must be a list of 1 to 10 resources")?;
    contents
        .iter()
        .map(|item| {
            let item = item.as_object().ok_or("each content must be an object")?;
            match item.get("type").and_then(Value::as_str) {
                Some("resource") => {
                    let resource = item
                        .get("resource")
                        .and_then(Value::as_object)
                        .ok_or("an embedded resource needs a resource")?;
                    let body = match (
                        resource.get("text").and_then(Value::as_str),
                        resource.get("blob").and_then(Value::as_str),
                    ) {
                        (Some(text), None) => Body::Text(text.to_owned()),
                        (None, Some(blob)) if is_base64(blob) => Body::Base64(blob.to_owned()),
                        _ => return Err("an embedded resource needs text or a base64 blob"),
                    };
                    Ok(DownloadItem::Embedded {
                        uri: short(resource, "uri", 2048).ok_or("a resource needs a uri")?,
                        mime_type: short(resource, "mimeType", 128),
                        body,
                    })
                }
                Some("resource_link") => Ok(DownloadItem::Link {
                    uri: short(item, "uri", 2048).ok_or("a resource link needs a uri")?,
                    name: short(item, "name", 256),
                    mime_type: short(item, "mimeType", 128),
                }),
                _ => Err("each content must be a resource or a resource_link"),
            }
        })
        .collect()
}

fn is_base64(text: &str) -> bool {
    text.len().is_multiple_of(4)
        && text
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// A file name nothing can misuse: no directory, no leading dot, no control, shell or
/// reserved character, bounded, and never empty.
pub fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | ' ' | '(' | ')') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = cleaned.trim_matches(|c: char| c == '.' || c == ' ' || c == '_');
    let mut safe: String = trimmed.chars().take(FILE_NAME_MAX).collect();
    while safe.ends_with(['.', ' ']) {
        safe.pop();
    }
    if safe.is_empty() {
        "download".into()
    } else {
        safe
    }
}

/// The content type a download is saved with: a short list of inert types, everything else
/// (HTML, SVG, scripts, anything unknown) as opaque bytes, so a saved file never renders
/// as a page in the console's name.
pub fn safe_content_type(declared: &str) -> &'static str {
    let essence = declared
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "text/plain" | "text/markdown" => "text/plain",
        "text/csv" => "text/csv",
        "application/json" => "application/json",
        "application/pdf" => "application/pdf",
        "image/png" => "image/png",
        "image/jpeg" => "image/jpeg",
        "image/gif" => "image/gif",
        "image/webp" => "image/webp",
        "application/zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

/// Whether a link to `host` (as the browser parsed it: lowercase, IDNA-encoded) opens
/// without asking: it is on the server's allow-list exactly, or under a `*.` entry's
/// domain (not the domain itself).
pub fn link_host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    !host.is_empty()
        && allowed.iter().any(|entry| match entry.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => *entry == host,
        })
}

/// A host as a person reads it, shown beside the form the browser uses: each `xn--` label
/// Punycode-decoded. A label that does not decode, decodes to ASCII alone (`xn--abc-` is
/// not `abc`), or decodes to a character that hides itself (a control, a space, an invisible or direction mark, a dot
/// look-alike) stays encoded, so the readable form never shows less than the ASCII one.
/// Addresses are shown as they are.
pub fn readable_host(ascii: &str) -> String {
    ascii
        .split('.')
        .map(|label| {
            let lower = label.to_ascii_lowercase();
            lower
                .strip_prefix("xn--")
                .and_then(idna::punycode::decode_to_string)
                .filter(|decoded| !decoded.is_ascii() && !decoded.chars().any(hides_itself))
                .unwrap_or(lower)
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Characters a person cannot see, or would read as something else, in a host name.
fn hides_itself(c: char) -> bool {
    c.is_control()
        || c.is_whitespace()
        || matches!(c,
            '\u{00AD}'                     // soft hyphen
            | '\u{034F}'                   // combining grapheme joiner
            | '\u{061C}'                   // Arabic letter mark
            | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
            | '\u{180B}'..='\u{180F}'     // Mongolian selectors and vowel separator
            | '\u{200B}'..='\u{200F}'     // zero-width characters, direction marks
            | '\u{202A}'..='\u{202E}'     // direction embeddings and overrides
            | '\u{2060}'..='\u{206F}'     // word joiner, invisible operators, isolates
            | '\u{3002}' | '\u{FF0E}' | '\u{FF61}' // full stops read as dots
            | '\u{FE00}'..='\u{FE0F}'     // variation selectors
            | '\u{FEFF}'                   // byte order mark
            | '\u{E0000}'..='\u{E0FFF}' // tags, variation selectors supplement
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(value: Value) -> Result<Vec<DownloadItem>, &'static str> {
        download_items(value.as_object().unwrap())
    }

    #[test]
    fn embedded_resources_and_links_are_read() {
        let parsed = items(json!({"contents": [
            {"type": "resource", "resource": {"uri": "file:///report.csv", "mimeType": "text/csv", "text": "a,b"}},
            {"type": "resource", "resource": {"uri": "x://img.png", "blob": "AAAA"}},
            {"type": "resource_link", "uri": "res://data/1", "name": "data.json", "mimeType": "application/json"}
        ]}))
        .unwrap();
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[0].file_name(), "report.csv");
        assert_eq!(parsed[0].content_type(), "text/csv");
        assert_eq!(parsed[0].size(), Some(3));
        assert_eq!(parsed[1].size(), Some(3));
        assert_eq!(parsed[2].file_name(), "data.json");
        assert_eq!(parsed[2].size(), None);
    }

    #[test]
    fn malformed_download_requests_are_refused() {
        for bad in [
            json!({}),
            json!({"contents": []}),
            json!({"contents": "x"}),
            json!({"contents": [1]}),
            json!({"contents": [{"type": "image", "data": "AAAA"}]}),
            json!({"contents": [{"type": "resource", "resource": {"uri": "a://b"}}]}),
            json!({"contents": [{"type": "resource", "resource": {"uri": "a://b", "text": "x", "blob": "AAAA"}}]}),
            json!({"contents": [{"type": "resource", "resource": {"uri": "a://b", "blob": "not base64!"}}]}),
            json!({"contents": [{"type": "resource", "resource": {"text": "x"}}]}),
            json!({"contents": [{"type": "resource_link", "name": "x"}]}),
            json!({"contents": vec![json!({"type": "resource_link", "uri": "a://b"}); 11]}),
        ] {
            assert!(items(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn saved_file_names_cannot_climb_directories_hide_or_be_empty() {
        assert_eq!(safe_file_name("../../etc/passwd"), "etc_passwd");
        assert_eq!(safe_file_name(".bashrc"), "bashrc");
        assert_eq!(safe_file_name("a\\b\u{0}c\nd"), "a_b_c_d");
        assert_eq!(safe_file_name("report (final).pdf"), "report (final).pdf");
        assert_eq!(safe_file_name("évé.txt"), "évé.txt");
        assert_eq!(safe_file_name(""), "download");
        assert_eq!(safe_file_name("..."), "download");
        assert_eq!(safe_file_name("name.txt. . "), "name.txt");
        assert_eq!(safe_file_name("file\u{202e}gpj.exe"), "file_gpj.exe");
        assert_eq!(safe_file_name(&"x".repeat(500)).len(), FILE_NAME_MAX);
        let link = DownloadItem::Link {
            uri: "res://a/b/../../secret".into(),
            name: None,
            mime_type: None,
        };
        assert_eq!(link.file_name(), "secret");
    }

    #[test]
    fn only_inert_content_types_are_kept() {
        assert_eq!(safe_content_type("text/csv; charset=utf-8"), "text/csv");
        assert_eq!(safe_content_type("Application/JSON"), "application/json");
        for active in [
            "text/html",
            "image/svg+xml",
            "application/javascript",
            "text/html;profile=mcp-app",
            "application/xhtml+xml",
            "",
            "nonsense",
        ] {
            assert_eq!(
                safe_content_type(active),
                "application/octet-stream",
                "{active}"
            );
        }
    }

    #[test]
    fn links_open_unasked_only_for_listed_hosts() {
        let allowed = vec!["docs.example.com".to_string(), "*.example.org".to_string()];
        assert!(link_host_allowed("docs.example.com", &allowed));
        assert!(link_host_allowed("DOCS.example.com.", &allowed));
        assert!(link_host_allowed("a.example.org", &allowed));
        assert!(link_host_allowed("a.b.example.org", &allowed));
        for refused in [
            "example.org",
            "evilexample.org",
            "example.com",
            "docs.example.com.evil.net",
            "xdocs.example.com",
            "",
        ] {
            assert!(!link_host_allowed(refused, &allowed), "{refused}");
        }
        assert!(!link_host_allowed("docs.example.com", &[]));
    }

    #[test]
    fn punycode_hosts_are_shown_decoded() {
        assert_eq!(readable_host("xn--pple-43d.com"), "аpple.com");
        assert_eq!(readable_host("example.com"), "example.com");
        assert_eq!(readable_host("XN--PPLE-43D.Com"), "аpple.com");
        assert_eq!(
            readable_host("docs.xn--bcher-kva.example"),
            "docs.bücher.example"
        );
        assert_eq!(readable_host("xn--mnchen-3ya.de."), "münchen.de.");
    }

    #[test]
    fn addresses_are_shown_as_they_are() {
        assert_eq!(readable_host("127.0.0.1"), "127.0.0.1");
        assert_eq!(readable_host("[::1]"), "[::1]");
    }

    #[test]
    fn labels_that_would_mislead_are_shown_encoded() {
        // Not Punycode at all, or decodes to nothing or to ASCII alone: kept as the browser
        // wrote it, never shown as another host.
        assert_eq!(readable_host("xn--.com"), "xn--.com");
        assert_eq!(readable_host("xn--abc-.com"), "xn--abc-.com");
        assert_eq!(readable_host("xn--example-.com"), "xn--example-.com");
        assert_eq!(readable_host("xn--ls8h.la"), "💩.la");
        for hidden in [
            '\u{200B}',
            '\u{202E}',
            '\u{3002}',
            '\u{FE0F}',
            '\u{E0041}',
            ' ',
            '\u{7}',
        ] {
            let label = format!("evil{hidden}");
            let encoded = idna::punycode::encode_str(&label).unwrap();
            let host = format!("xn--{encoded}.example.com");
            assert_eq!(readable_host(&host), host, "{hidden:?}");
        }
        for undecodable in ["xn--99999999999.com", "xn--a_b.com"] {
            assert_eq!(readable_host(undecodable), undecodable);
        }
    }
}
