//! `STRAD_SANDBOX_ORIGIN` (`http.sandbox_origin`): the origin app frames are served from, a
//! different *site* from the console's, so the browser keeps app frames in a process of
//! their own and no console cookie can reach them (SPEC §6). `off` serves frames from the
//! console's origin. Unset, local mode uses the console's loopback twin (`127.0.0.1` ↔
//! `localhost`, same port) and a deployment serves frames from its own origin.

use url::Url;

use super::environment::Environment;
use super::http::HttpConfig;
use super::{ConfigError, bad};

pub(super) const S_SANDBOX_ORIGIN: &str = "STRAD_SANDBOX_ORIGIN (http.sandbox_origin)";

pub(super) fn load(
    file: Option<String>,
    env: &Environment,
    http: &HttpConfig,
    local_mode: bool,
) -> Result<Option<Url>, ConfigError> {
    let origin = match env.var("STRAD_SANDBOX_ORIGIN").or(file) {
        Some(raw) if raw.trim().eq_ignore_ascii_case("off") => return Ok(None),
        Some(raw) => parse(raw.trim())?,
        None if local_mode => match loopback_twin(&http.public_url) {
            Some(twin) => twin,
            None => return Ok(None),
        },
        None => return Ok(None),
    };
    if origin.scheme() != http.public_url.scheme() {
        return Err(bad(
            S_SANDBOX_ORIGIN,
            format!(
                "must use the console's scheme ({}://): a frame of another scheme is blocked or \
                 downgraded",
                http.public_url.scheme()
            ),
        ));
    }
    let (Some(host), Some(console)) = (origin.host_str(), http.public_url.host_str()) else {
        return Err(bad(S_SANDBOX_ORIGIN, "must name a host"));
    };
    if site_of(host) == site_of(console) {
        return Err(bad(
            S_SANDBOX_ORIGIN,
            format!(
                "`{host}` is the same site as the console's `{console}`: the browser would \
                 not isolate frames from the console (use another registrable domain)"
            ),
        ));
    }
    if local_mode && !super::http::is_loopback_host(host) {
        return Err(bad(
            S_SANDBOX_ORIGIN,
            "local mode serves loopback addresses only",
        ));
    }
    Ok(Some(origin))
}

fn parse(raw: &str) -> Result<Url, ConfigError> {
    let url =
        Url::parse(raw).map_err(|_| bad(S_SANDBOX_ORIGIN, format!("`{raw}` is not a URL")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(S_SANDBOX_ORIGIN, "must be http:// or https://"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            S_SANDBOX_ORIGIN,
            "must be an origin only, without path, query or fragment",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(S_SANDBOX_ORIGIN, "must not carry credentials"));
    }
    Ok(url)
}

/// The other loopback name for the console's origin, same scheme and port.
fn loopback_twin(console: &Url) -> Option<Url> {
    let twin = match console.host_str()? {
        "127.0.0.1" | "[::1]" => "localhost",
        "localhost" => "127.0.0.1",
        _ => return None,
    };
    let mut url = console.clone();
    url.set_host(Some(twin)).ok()?;
    Some(url)
}

/// A host's site: its registrable domain (public suffix + one label), or the host itself for
/// an address, `localhost` or a name under no known suffix.
fn site_of(host: &str) -> String {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return host;
    }
    match psl::domain_str(&host) {
        Some(domain) => domain.to_owned(),
        None => host,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::{env, oidc_env};
    use super::*;

    fn sandbox(pairs: &[(&str, &str)]) -> Result<Option<String>, ConfigError> {
        Config::from_sources(None, &env(pairs)).map(|c| {
            c.http
                .sandbox_origin
                .map(|u| u.origin().ascii_serialization())
        })
    }

    #[test]
    fn local_mode_serves_frames_from_the_consoles_loopback_twin_unless_off() {
        assert_eq!(
            sandbox(&[]).unwrap().as_deref(),
            Some("http://localhost:3000")
        );
        assert_eq!(
            sandbox(&[
                ("STRAD_PUBLIC_URL", "http://localhost:4000"),
                ("STRAD_BIND", "127.0.0.1:4000")
            ])
            .unwrap()
            .as_deref(),
            Some("http://127.0.0.1:4000")
        );
        assert_eq!(sandbox(&[("STRAD_SANDBOX_ORIGIN", "off")]).unwrap(), None);
    }

    #[test]
    fn a_deployment_has_none_unless_set_and_it_must_be_another_site() {
        let mut pairs = oidc_env();
        assert_eq!(sandbox(&pairs).unwrap(), None);
        pairs.push(("STRAD_SANDBOX_ORIGIN", "https://strad-apps.example.net"));
        assert_eq!(
            sandbox(&pairs).unwrap().as_deref(),
            Some("https://strad-apps.example.net")
        );
        for same_site in [
            "https://apps.example.com",
            "https://strad.example.com",
            "https://a.b.example.com:8443",
        ] {
            let mut pairs = oidc_env();
            pairs.push(("STRAD_SANDBOX_ORIGIN", same_site));
            let err = sandbox(&pairs).unwrap_err();
            assert_eq!(err.setting, S_SANDBOX_ORIGIN, "{same_site}");
            assert!(err.problem.contains("same site"), "{err}");
        }
        for bad_value in [
            "http://strad-apps.example.net",
            "https://strad-apps.example.net/apps",
            "https://u:p@strad-apps.example.net",
            "ftp://strad-apps.example.net",
            "strad-apps.example.net",
        ] {
            let mut pairs = oidc_env();
            pairs.push(("STRAD_SANDBOX_ORIGIN", bad_value));
            assert_eq!(
                sandbox(&pairs).unwrap_err().setting,
                S_SANDBOX_ORIGIN,
                "{bad_value}"
            );
        }
    }

    #[test]
    fn sites_are_registrable_domains() {
        assert_eq!(site_of("apps.example.co.uk"), "example.co.uk");
        assert_eq!(site_of("Strad.Example.com."), "example.com");
        assert_eq!(site_of("127.0.0.1"), "127.0.0.1");
        assert_eq!(site_of("localhost"), "localhost");
        assert_ne!(site_of("a.github.io"), site_of("b.github.io"));
    }
}
