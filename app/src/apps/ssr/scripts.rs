//! The inline scripts of an app document, hashed for `script-src` (SPEC §6), and the
//! `<base target="_blank">` the frame route injects. The served bytes must be exactly the
//! bytes hashed: a script added afterwards has no hash and does not run.
//!
//! This is a scanner for the few HTML tokenizer states that matter here (data, comments,
//! raw-text elements, script data), not an HTML parser: it finds every `<script>` element
//! without `src` where a browser would, and over-approximates elsewhere (a script-looking
//! text inside `<textarea>` gets a hash it never uses, which allows nothing new).

use base64::Engine;
use sha2::{Digest, Sha256};

/// Elements whose content the tokenizer reads as raw text: a `<script` inside them is text.
const RAW_TEXT: [&str; 7] = [
    "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// The text of every inline script, as the browser's parser sees it (newlines normalized).
pub fn inline_scripts(html: &str) -> Vec<String> {
    // The input stream turns CRLF and lone CR into LF before tokenizing.
    let html = html.replace("\r\n", "\n").replace('\r', "\n");
    let lower = html.to_ascii_lowercase();
    let mut scripts = Vec::new();
    start_tags(&lower, |tag| {
        if tag.name == "script" && !has_attribute(&lower[tag.start..tag.end], "src") {
            scripts.push(html[tag.end..tag.content_end].to_string());
        }
        true
    });
    scripts
}

/// A start tag the tokenizer sees: `<name ...>` from `start` to `end`, and where the text it
/// governs ends (past its raw text or script data; `end` for other elements).
struct StartTag {
    name: String,
    start: usize,
    end: usize,
    content_end: usize,
}

/// Calls `visit` with each start tag of `lower` (a lower-cased document) in order, outside
/// comments, raw text and script data, until it returns false.
fn start_tags(lower: &str, mut visit: impl FnMut(StartTag) -> bool) {
    let mut at = 0;
    while let Some(offset) = lower[at..].find('<') {
        let start = at + offset;
        if lower[start..].starts_with("<!--") {
            // A comment ends at the first `-->` (or the end of the document).
            at = match lower[start + 4..].find("-->") {
                Some(end) => start + 4 + end + 3,
                None => lower.len(),
            };
            continue;
        }
        let Some((name, end)) = start_tag(lower, start) else {
            at = start + 1;
            continue;
        };
        let content_end = if name == "script" || RAW_TEXT.contains(&name.as_str()) {
            end_of_raw_text(lower, end, &name)
        } else {
            end
        };
        at = content_end;
        let tag = StartTag {
            name,
            start,
            end,
            content_end,
        };
        if !visit(tag) {
            return;
        }
    }
}

/// A start tag at `start` (`<name ...>`): its lower-case name and the index after its `>`.
fn start_tag(lower: &str, start: usize) -> Option<(String, usize)> {
    let bytes = lower.as_bytes();
    let name_len = bytes[start + 1..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
        .count();
    if name_len == 0 || !bytes[start + 1].is_ascii_alphabetic() {
        return None;
    }
    let name = lower[start + 1..start + 1 + name_len].to_string();
    // The tag ends at the first `>` outside a quoted attribute value.
    let mut quote = None;
    for (i, &b) in bytes.iter().enumerate().skip(start + 1 + name_len) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return Some((name, i + 1)),
            _ => {}
        }
    }
    Some((name, lower.len()))
}

/// Where raw text or script data of `name` ends: at `</name` followed by whitespace, `/`
/// or `>` (case-insensitively), or at the end of the document.
fn end_of_raw_text(lower: &str, from: usize, name: &str) -> usize {
    let needle = format!("</{name}");
    let mut at = from;
    while let Some(offset) = lower[at..].find(&needle) {
        let end = at + offset;
        match lower.as_bytes().get(end + needle.len()) {
            Some(b) if b.is_ascii_whitespace() || *b == b'/' || *b == b'>' => return end,
            None => return end,
            _ => at = end + needle.len(),
        }
    }
    lower.len()
}

fn has_attribute(tag: &str, attribute: &str) -> bool {
    let bytes = tag.as_bytes();
    let mut quote = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if (b.is_ascii_whitespace() || b == b'/')
                && tag[i + 1..].starts_with(attribute) =>
            {
                let after = bytes.get(i + 1 + attribute.len());
                if after.is_none_or(|a| {
                    a.is_ascii_whitespace() || *a == b'=' || *a == b'>' || *a == b'/'
                }) {
                    return true;
                }
            }
            None => {}
        }
        i += 1;
    }
    false
}

/// `sha256-<base64>` of one script's text: a CSP hash source.
pub fn hash_source(script: &str) -> String {
    let digest = Sha256::digest(script.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The hash sources of every inline script, without duplicates.
pub fn script_hashes(html: &str) -> Vec<String> {
    let mut hashes: Vec<String> = Vec::new();
    for hash in inline_scripts(html).iter().map(|s| hash_source(s)) {
        if !hashes.contains(&hash) {
            hashes.push(hash);
        }
    }
    hashes
}

/// The document with `<base target="_blank">` as the first thing in `<head>` (or at the very
/// start, for a document without one), so plain links open in new tabs. The `<head>` is the
/// tokenizer's (not one inside a comment, a script or an attribute value), so scripts are
/// not touched and their hashes hold.
pub fn with_base_target(html: &str) -> String {
    const BASE: &str = "<base target=\"_blank\">";
    let lower = html.to_ascii_lowercase();
    let mut head_end = None;
    start_tags(&lower, |tag| {
        // A `<head` the document ends in, unclosed, is no element.
        if tag.name == "head" && lower[..tag.end].ends_with('>') {
            head_end = Some(tag.end);
            return false;
        }
        true
    });
    match head_end {
        Some(end) => format!("{}{BASE}{}", &html[..end], &html[end..]),
        None => format!("{BASE}{html}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_scripts_are_found_and_external_ones_skipped() {
        let html = "<!doctype html><html><head><script type=\"module\">import('x');</script>\
                    <script src=\"/a.js\"></script><SCRIPT>b()</SCRIPT ></head>\
                    <body><script async\nsrc=x></script><script data-src=\"y\">c()</script></body></html>";
        assert_eq!(inline_scripts(html), ["import('x');", "b()", "c()"]);
    }

    #[test]
    fn scripts_inside_comments_and_raw_text_are_not_scripts() {
        let html = "<!-- <script>no()</script> --><textarea><script>no()</script></textarea>\
                    <style>p::after{content:'<script>no()</script>'}</style><title><script>x</script></title>\
                    <script>yes()</script>";
        assert_eq!(inline_scripts(html), ["yes()"]);
    }

    #[test]
    fn script_data_ends_only_at_a_real_end_tag() {
        let html = "<script>let s = '</scripts>'; let t = '<script>';</script><script>x</script/>";
        assert_eq!(
            inline_scripts(html),
            ["let s = '</scripts>'; let t = '<script>';", "x"]
        );
    }

    #[test]
    fn a_quoted_greater_than_does_not_end_the_tag() {
        let html = "<script data-x=\"a>b\" type=module>go()</script>";
        assert_eq!(inline_scripts(html), ["go()"]);
        let html = "<script title='src'>go()</script>";
        assert_eq!(
            inline_scripts(html),
            ["go()"],
            "src inside a value is not an attribute"
        );
    }

    #[test]
    fn newlines_are_hashed_as_the_parser_sees_them() {
        assert_eq!(inline_scripts("<script>a\r\nb\rc</script>"), ["a\nb\nc"]);
    }

    #[test]
    fn an_unterminated_script_runs_to_the_end() {
        assert_eq!(inline_scripts("<p>x</p><script>tail()"), ["tail()"]);
    }

    #[test]
    fn hashes_are_csp_sha256_sources() {
        // echo -n "alert(1)" | openssl dgst -sha256 -binary | base64
        assert_eq!(
            hash_source("alert(1)"),
            "sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI="
        );
        assert_eq!(
            script_hashes("<script>a</script><script>a</script>").len(),
            1
        );
        assert!(script_hashes("<p>no scripts</p>").is_empty());
    }

    #[test]
    fn the_base_target_goes_first_in_head_and_keeps_the_scripts() {
        let html = "<!doctype html><html><HEAD lang=\"x\"><script>a()</script></head></html>";
        let served = with_base_target(html);
        assert_eq!(
            served,
            "<!doctype html><html><HEAD lang=\"x\"><base target=\"_blank\"><script>a()</script></head></html>"
        );
        assert_eq!(script_hashes(&served), script_hashes(html));
        assert_eq!(
            with_base_target("<p>x</p>"),
            "<base target=\"_blank\"><p>x</p>"
        );
        assert_eq!(
            with_base_target("<header>x</header>"),
            "<base target=\"_blank\"><header>x</header>"
        );
    }

    #[test]
    fn the_base_target_goes_into_the_real_head_and_never_into_a_script() {
        for (html, served) in [
            (
                "<script>let h = '<head>';</script><head></head>",
                "<script>let h = '<head>';</script><head><base target=\"_blank\"></head>",
            ),
            (
                "<!-- <head> --><head>",
                "<!-- <head> --><head><base target=\"_blank\">",
            ),
            (
                "<html data-x=\"<head>\"><head>",
                "<html data-x=\"<head>\"><head><base target=\"_blank\">",
            ),
            (
                "<title><head></title>",
                "<base target=\"_blank\"><title><head></title>",
            ),
            ("<head", "<base target=\"_blank\"><head"),
        ] {
            assert_eq!(with_base_target(html), served, "{html}");
            assert_eq!(inline_scripts(served), inline_scripts(html), "{html}");
        }
    }
}
