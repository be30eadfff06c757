//! A server's open-link allow-list, as an admin types it: one host per line, each opened
//! from the server's app without asking. Entries are stored as the browser compares them, a
//! URL's `hostname`: lowercase ASCII (IDNA-encoded), optionally `*.`-prefixed for every
//! subdomain. Anything that is more than a host (a scheme, a port, a path) is refused rather
//! than trimmed, so the admin sees the list exactly as it will match.

/// Hosts one server may list.
pub const MAX_HOSTS: usize = 100;
/// The longest DNS name.
const MAX_NAME: usize = 253;
/// The longest DNS label.
const MAX_LABEL: usize = 63;

/// Why a line is not a host.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkHostProblem {
    #[error("a host, not a URL: leave out the scheme")]
    Scheme,
    #[error("a host only: leave out the port")]
    Port,
    #[error("a host only: leave out the path, query and fragment")]
    Path,
    #[error("a host has no spaces inside")]
    Whitespace,
    #[error("a host has no empty labels (two dots in a row, or a dot at either end)")]
    EmptyLabel,
    #[error("an IP address, not a host name")]
    Address,
    #[error("not a host name")]
    NotAHostName,
    #[error("more than {MAX_HOSTS} hosts")]
    TooMany,
}

/// A line the list refuses, numbered from 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct LinkHostError {
    pub line: usize,
    pub problem: LinkHostProblem,
}

/// Every host of `input`, one a line (blank lines skipped, repeats kept once, in the order
/// typed); the first line that is not a host refuses the whole list.
pub fn parse_link_hosts(input: &str) -> Result<Vec<String>, LinkHostError> {
    let mut hosts: Vec<String> = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let line_error = |problem| LinkHostError {
            line: index + 1,
            problem,
        };
        if line.trim().is_empty() {
            continue;
        }
        let host = parse_link_host(line).map_err(line_error)?;
        if !hosts.contains(&host) {
            if hosts.len() == MAX_HOSTS {
                return Err(line_error(LinkHostProblem::TooMany));
            }
            hosts.push(host);
        }
    }
    Ok(hosts)
}

/// One host, as the browser's `URL.hostname` spells it: IDNA to ASCII, lowercase, with its
/// `*.` prefix kept.
pub fn parse_link_host(line: &str) -> Result<String, LinkHostProblem> {
    let text = line.trim();
    if text.chars().any(char::is_whitespace) {
        return Err(LinkHostProblem::Whitespace);
    }
    if text.contains("://") {
        return Err(LinkHostProblem::Scheme);
    }
    if text.contains(['/', '?', '#', '\\']) {
        return Err(LinkHostProblem::Path);
    }
    if text.contains(':') {
        return Err(LinkHostProblem::Port);
    }
    // The URL host parser would percent-decode: `a%41.com` is not what the admin sees.
    if text.contains('%') {
        return Err(LinkHostProblem::NotAHostName);
    }
    let (wildcard, name) = match text.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, text),
    };
    if name.is_empty() || name.split('.').any(str::is_empty) {
        return Err(LinkHostProblem::EmptyLabel);
    }
    let ascii = match url::Host::parse(name) {
        Ok(url::Host::Domain(ascii)) => ascii,
        Ok(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => return Err(LinkHostProblem::Address),
        Err(_) => return Err(LinkHostProblem::NotAHostName),
    };
    // IDNA maps some characters to dots (the ideographic full stop): check the result too.
    if ascii.split('.').any(str::is_empty) {
        return Err(LinkHostProblem::EmptyLabel);
    }
    let is_label = |label: &str| {
        label.len() <= MAX_LABEL
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    if ascii.len() > MAX_NAME || !ascii.split('.').all(is_label) {
        return Err(LinkHostProblem::NotAHostName);
    }
    Ok(if wildcard {
        format!("*.{ascii}")
    } else {
        ascii
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(line: &str) -> Result<String, LinkHostProblem> {
        parse_link_host(line)
    }

    #[test]
    fn plain_hosts_are_kept_lowercase() {
        assert_eq!(host("docs.example.com").unwrap(), "docs.example.com");
        assert_eq!(host("Docs.Example.COM").unwrap(), "docs.example.com");
        assert_eq!(host("  localhost\t").unwrap(), "localhost");
        assert_eq!(host("my_host.example").unwrap(), "my_host.example");
    }

    #[test]
    fn international_names_are_stored_idna_encoded() {
        assert_eq!(host("bücher.example").unwrap(), "xn--bcher-kva.example");
        assert_eq!(host("BÜCHER.example").unwrap(), "xn--bcher-kva.example");
        assert_eq!(
            host("xn--bcher-kva.example").unwrap(),
            "xn--bcher-kva.example"
        );
        assert_eq!(host("*.bücher.example").unwrap(), "*.xn--bcher-kva.example");
    }

    #[test]
    fn a_star_dot_prefix_is_kept_and_a_star_anywhere_else_is_refused() {
        assert_eq!(host("*.example.com").unwrap(), "*.example.com");
        assert_eq!(host("*.EXAMPLE.com").unwrap(), "*.example.com");
        for bad in [
            "*example.com",
            "a.*.example.com",
            "**.example.com",
            "*.*.example.com",
        ] {
            assert_eq!(host(bad), Err(LinkHostProblem::NotAHostName), "{bad}");
        }
        assert_eq!(host("*."), Err(LinkHostProblem::EmptyLabel));
        assert_eq!(host("*"), Err(LinkHostProblem::NotAHostName));
    }

    #[test]
    fn schemes_ports_and_paths_are_refused_not_trimmed() {
        assert_eq!(host("https://example.com"), Err(LinkHostProblem::Scheme));
        assert_eq!(host("//example.com"), Err(LinkHostProblem::Path));
        assert_eq!(host("example.com:443"), Err(LinkHostProblem::Port));
        assert_eq!(host("mailto:me"), Err(LinkHostProblem::Port));
        assert_eq!(host("example.com/docs"), Err(LinkHostProblem::Path));
        assert_eq!(host("example.com?q"), Err(LinkHostProblem::Path));
        assert_eq!(host("example.com#top"), Err(LinkHostProblem::Path));
        assert_eq!(host("example.com\\x"), Err(LinkHostProblem::Path));
        assert_eq!(host("[::1]"), Err(LinkHostProblem::Port));
    }

    #[test]
    fn whitespace_inside_is_refused() {
        for bad in [
            "exa mple.com",
            "example.com *.x.com",
            "a\u{a0}b.com",
            "a\tb",
        ] {
            assert_eq!(host(bad), Err(LinkHostProblem::Whitespace), "{bad:?}");
        }
    }

    #[test]
    fn empty_labels_are_refused() {
        for bad in [
            "example..com",
            ".example.com",
            "example.com.",
            ".",
            "*..com",
        ] {
            assert_eq!(host(bad), Err(LinkHostProblem::EmptyLabel), "{bad}");
        }
        // U+3002 IDEOGRAPHIC FULL STOP becomes a dot under IDNA.
        assert_eq!(host("a\u{3002}\u{3002}b"), Err(LinkHostProblem::EmptyLabel));
    }

    #[test]
    fn ip_addresses_are_refused_in_every_spelling() {
        for bad in ["127.0.0.1", "0x7f.1", "2130706433", "1.2.3"] {
            assert_eq!(host(bad), Err(LinkHostProblem::Address), "{bad}");
        }
    }

    #[test]
    fn anything_but_letters_digits_hyphens_and_underscores_is_refused() {
        for bad in [
            "user@example.com",
            "a%41.com",
            "a<b.com",
            "a*b.com",
            "a!b.com",
        ] {
            assert!(host(bad).is_err(), "{bad}");
        }
        assert_eq!(host(&"a".repeat(64)), Err(LinkHostProblem::NotAHostName));
        assert_eq!(host(&"a".repeat(63)).unwrap(), "a".repeat(63));
        let long = vec!["a".repeat(63); 4].join(".");
        assert_eq!(host(&long), Err(LinkHostProblem::NotAHostName), "254 bytes");
    }

    #[test]
    fn a_list_is_one_host_a_line_in_order_without_blanks_or_repeats() {
        let hosts =
            parse_link_hosts("docs.example.com\n\n  *.cdn.test \r\nDOCS.example.com\n").unwrap();
        assert_eq!(hosts, ["docs.example.com", "*.cdn.test"]);
        assert_eq!(parse_link_hosts("").unwrap(), Vec::<String>::new());
        assert_eq!(parse_link_hosts(" \n\n").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn the_first_bad_line_refuses_the_whole_list_and_is_named() {
        let error = parse_link_hosts("ok.example\n\nhttps://bad.example\nworse:1").unwrap_err();
        assert_eq!(
            error,
            LinkHostError {
                line: 3,
                problem: LinkHostProblem::Scheme
            }
        );
        assert_eq!(
            error.to_string(),
            "line 3: a host, not a URL: leave out the scheme"
        );
    }

    #[test]
    fn a_list_holds_at_most_a_hundred_hosts() {
        let hundred: Vec<String> = (0..MAX_HOSTS).map(|i| format!("h{i}.test")).collect();
        assert_eq!(
            parse_link_hosts(&hundred.join("\n")).unwrap().len(),
            MAX_HOSTS
        );
        let more = format!("{}\nh0.test\nextra.test", hundred.join("\n"));
        let error = parse_link_hosts(&more).unwrap_err();
        assert_eq!(error.line, MAX_HOSTS + 2);
        assert_eq!(error.problem, LinkHostProblem::TooMany);
    }
}
