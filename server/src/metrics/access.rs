//! Who may read `/metrics` (SPEC §13: loopback or a configured bearer token).

use std::net::IpAddr;

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Secret;

/// Headers a reverse proxy adds to say whom it forwards for. Behind a proxy on the same
/// machine every peer is loopback, so a request carrying one is not taken as local.
const FORWARDING_HEADERS: [&str; 3] = ["forwarded", "x-forwarded-for", "x-real-ip"];

/// Whether a request from `peer` with `headers` may read the metrics: from a loopback peer
/// with no forwarding header, or with `Authorization: Bearer <token>` naming `token`.
pub fn may_scrape(peer: Option<IpAddr>, headers: &HeaderMap, token: Option<&Secret>) -> bool {
    let local = peer.is_some_and(|ip| ip.to_canonical().is_loopback())
        && !FORWARDING_HEADERS
            .iter()
            .any(|name| headers.contains_key(*name));
    local || token.is_some_and(|token| bearer(headers).is_some_and(|given| same(given, token)))
}

/// The token of an `Authorization: Bearer` header (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// Compares digests of both, in constant time: neither the token's bytes nor its length
/// show in how long a refusal takes.
fn same(given: &str, token: &Secret) -> bool {
    let given = Sha256::digest(given.as_bytes());
    let token = Sha256::digest(token.expose().as_bytes());
    given.ct_eq(&token).into()
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use axum::http::HeaderValue;

    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn a_loopback_peer_without_forwarding_headers_may_scrape() {
        let token = Secret::new(TOKEN);
        for peer in [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()),
        ] {
            assert!(may_scrape(Some(peer), &headers(&[]), None), "{peer}");
            assert!(
                may_scrape(Some(peer), &headers(&[]), Some(&token)),
                "{peer}"
            );
        }
    }

    #[test]
    fn a_forwarded_request_is_not_local_even_from_loopback() {
        let peer = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        for name in FORWARDING_HEADERS {
            assert!(
                !may_scrape(peer, &headers(&[(name, "127.0.0.1")]), None),
                "{name}"
            );
        }
    }

    #[test]
    fn a_remote_peer_or_an_unknown_one_needs_the_token() {
        let token = Secret::new(TOKEN);
        let remote = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)));
        let with = |value: &str| headers(&[("authorization", value)]);
        let right = format!("Bearer {TOKEN}");
        for peer in [remote, None] {
            assert!(!may_scrape(peer, &headers(&[]), Some(&token)));
            assert!(
                !may_scrape(peer, &with(&right), None),
                "no token configured"
            );
            assert!(may_scrape(peer, &with(&right), Some(&token)));
            assert!(may_scrape(
                peer,
                &with(&format!("bearer  {TOKEN} ")),
                Some(&token)
            ));
        }
        for wrong in [
            format!("Basic {TOKEN}"),
            format!("Bearer {}", &TOKEN[1..]),
            format!("Bearer {TOKEN}0"),
            "Bearer ".to_owned(),
            TOKEN.to_owned(),
        ] {
            assert!(!may_scrape(remote, &with(&wrong), Some(&token)), "{wrong}");
        }
    }

    #[test]
    fn the_token_opens_a_forwarded_request() {
        let token = Secret::new(TOKEN);
        let peer = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let right = format!("Bearer {TOKEN}");
        let forwarded = headers(&[
            ("x-forwarded-for", "203.0.113.9"),
            ("authorization", &right),
        ]);
        assert!(may_scrape(peer, &forwarded, Some(&token)));
    }
}
