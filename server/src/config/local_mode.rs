//! Local mode (no OIDC issuer) listens on loopback only.

use super::http::{HttpConfig, S_BIND, S_PUBLIC_URL, is_loopback_host};
use super::{ConfigError, bad};

/// Local mode: the one-time link signs in an admin, so it must never be reachable from
/// another machine (SPEC §3).
pub(super) fn refuse_beyond_loopback(http: &HttpConfig) -> Result<(), ConfigError> {
    let bind = http.bind;
    if !bind.ip().is_loopback() {
        return Err(bad(
            S_BIND,
            format!(
                "refusing to bind {bind} without an OIDC issuer: local mode listens on \
                 loopback only (set STRAD_OIDC_ISSUER or STRAD_OIDC_PROVIDER)"
            ),
        ));
    }
    if !http.public_url.host_str().is_some_and(is_loopback_host) {
        return Err(bad(
            S_PUBLIC_URL,
            "local mode serves loopback addresses only",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::database::DEFAULT_DATABASE_URL;
    use super::super::http::DEFAULT_BIND;
    use super::super::test_support::env;
    use super::*;

    #[test]
    fn nothing_set_is_local_mode_on_loopback_with_the_local_database() {
        let config = Config::from_sources(None, &env(&[])).unwrap();
        assert!(config.auth.oidc.is_none());
        assert_eq!(config.http.bind.to_string(), DEFAULT_BIND);
        assert_eq!(config.http.public_origin(), "http://127.0.0.1:3000");
        assert_eq!(config.database.url.expose(), DEFAULT_DATABASE_URL);
        assert!(!config.http.is_https());
    }

    #[test]
    fn local_mode_refuses_to_bind_another_interface() {
        for bind in ["0.0.0.0:3000", "192.168.1.10:3000", "[::]:3000"] {
            let err = Config::from_sources(
                None,
                &env(&[
                    ("STRAD_BIND", bind),
                    ("STRAD_PUBLIC_URL", "http://127.0.0.1:3000"),
                ]),
            )
            .unwrap_err();
            assert_eq!(err.setting, S_BIND, "{bind}");
            assert!(err.problem.contains("without an OIDC issuer"), "{err}");
        }
    }

    #[test]
    fn local_mode_accepts_ipv6_loopback() {
        let config = Config::from_sources(None, &env(&[("STRAD_BIND", "[::1]:3000")])).unwrap();
        assert_eq!(config.http.public_origin(), "http://[::1]:3000");
    }

    #[test]
    fn local_mode_refuses_a_public_url_that_is_not_loopback() {
        let err = Config::from_sources(
            None,
            &env(&[("STRAD_PUBLIC_URL", "https://strad.example.com")]),
        )
        .unwrap_err();
        assert_eq!(err.setting, S_PUBLIC_URL);
    }
}
