//! `[auth.oidc]`: the identity provider people sign in with; none at all is local mode.

use serde::Deserialize;
use url::Url;

use super::environment::{Environment, parse_bool, split_list};
use super::http::is_loopback_host;
use super::secret::Secret;
use super::{ConfigError, bad};

pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";

pub(super) const S_PROVIDER: &str = "STRAD_OIDC_PROVIDER (auth.oidc.provider)";
pub(super) const S_ISSUER: &str = "STRAD_OIDC_ISSUER (auth.oidc.issuer)";
pub(super) const S_CLIENT_ID: &str = "STRAD_OIDC_CLIENT_ID (auth.oidc.client_id)";
pub(super) const S_CLIENT_SECRET: &str = "STRAD_OIDC_CLIENT_SECRET (auth.oidc.client_secret)";
pub(super) const S_ALLOWED: &str = "STRAD_ALLOWED_DOMAINS (auth.oidc.allowed_domains)";
pub(super) const S_REQUIRE_HD: &str =
    "STRAD_OIDC_REQUIRE_HOSTED_DOMAIN (auth.oidc.require_hosted_domain)";

#[derive(Clone, Debug)]
pub struct OidcConfig {
    /// Shown on the sign-in button ("Sign in with Google").
    pub provider_name: String,
    pub issuer: Url,
    pub client_id: String,
    pub client_secret: Secret,
    pub allowed_domains: AllowedDomains,
    /// Require Google's `hd` claim (a Workspace account) to be an allowed domain, rather
    /// than trusting the email's domain alone: a personal Google account can carry a company
    /// address without the company controlling it.
    pub require_hosted_domain: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowedDomains {
    /// Configured explicitly as `*`.
    Any,
    /// Lower-cased domain names.
    Only(Vec<String>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileOidc {
    provider: Option<String>,
    issuer: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    allowed_domains: Option<Vec<String>>,
    require_hosted_domain: Option<bool>,
}

/// `None` when neither an issuer nor a provider is set: local mode.
pub(super) fn load(
    file_oidc: FileOidc,
    env: &Environment,
) -> Result<Option<OidcConfig>, ConfigError> {
    let provider = env.var("STRAD_OIDC_PROVIDER").or(file_oidc.provider);
    let issuer = env.var("STRAD_OIDC_ISSUER").or(file_oidc.issuer);
    let client_id = env.var("STRAD_OIDC_CLIENT_ID").or(file_oidc.client_id);
    let client_secret = env
        .var("STRAD_OIDC_CLIENT_SECRET")
        .or(file_oidc.client_secret);
    let allowed = match env.var("STRAD_ALLOWED_DOMAINS") {
        Some(list) => Some(split_list(&list)),
        None => file_oidc.allowed_domains,
    };
    let require_hd = match env.var("STRAD_OIDC_REQUIRE_HOSTED_DOMAIN") {
        Some(raw) => {
            Some(parse_bool(&raw).ok_or_else(|| bad(S_REQUIRE_HD, "must be true or false"))?)
        }
        None => file_oidc.require_hosted_domain,
    };

    let oidc = match (provider.as_deref(), issuer) {
        (None, None) => {
            if client_id.is_some() || client_secret.is_some() || allowed.is_some() {
                return Err(bad(
                    S_ISSUER,
                    "OIDC client settings are given but no issuer or provider",
                ));
            }
            None
        }
        (provider, issuer) => {
            let (provider_name, issuer, google) = match (provider, issuer) {
                (Some("google"), None) => ("Google".to_string(), GOOGLE_ISSUER.to_string(), true),
                (Some("google"), Some(issuer)) => {
                    let google = issuer.trim_end_matches('/') == GOOGLE_ISSUER;
                    if !google {
                        return Err(bad(
                            S_ISSUER,
                            "the google provider's issuer is https://accounts.google.com",
                        ));
                    }
                    ("Google".to_string(), issuer, true)
                }
                (Some("generic") | None, Some(issuer)) => {
                    let google = issuer.trim_end_matches('/') == GOOGLE_ISSUER;
                    let name = if google {
                        "Google"
                    } else {
                        "your identity provider"
                    };
                    (name.to_string(), issuer, google)
                }
                (Some("generic") | None, None) => {
                    return Err(bad(S_ISSUER, "required for the generic provider"));
                }
                (Some(other), _) => {
                    return Err(bad(
                        S_PROVIDER,
                        format!("`{other}` is not one of: google, generic"),
                    ));
                }
            };
            let issuer = Url::parse(&issuer)
                .map_err(|_| bad(S_ISSUER, "not a URL"))
                .and_then(|url| {
                    let loopback = url.host_str().is_some_and(is_loopback_host);
                    match url.scheme() {
                        "https" => Ok(url),
                        "http" if loopback => Ok(url),
                        _ => Err(bad(S_ISSUER, "must be https (http only on loopback)")),
                    }
                })?;
            let client_id =
                client_id.ok_or_else(|| bad(S_CLIENT_ID, "required with an OIDC issuer"))?;
            let client_secret = client_secret
                .ok_or_else(|| bad(S_CLIENT_SECRET, "required with an OIDC issuer"))?;
            let allowed_domains = parse_allowed_domains(allowed)?;
            let require_hosted_domain = require_hd.unwrap_or(google);
            if require_hosted_domain && allowed_domains == AllowedDomains::Any {
                return Err(bad(
                    S_REQUIRE_HD,
                    "cannot be required when every domain is allowed",
                ));
            }
            Some(OidcConfig {
                provider_name,
                issuer,
                client_id,
                client_secret: Secret::new(client_secret),
                allowed_domains,
                require_hosted_domain,
            })
        }
    };
    Ok(oidc)
}

fn parse_allowed_domains(list: Option<Vec<String>>) -> Result<AllowedDomains, ConfigError> {
    let list = list.ok_or_else(|| {
        bad(
            S_ALLOWED,
            "required with an OIDC issuer: list the email domains that may sign in, or `*` for any",
        )
    })?;
    let list: Vec<String> = list
        .iter()
        .map(|d| d.trim().to_ascii_lowercase())
        .filter(|d| !d.is_empty())
        .collect();
    if list == ["*"] {
        return Ok(AllowedDomains::Any);
    }
    if list.is_empty() {
        return Err(bad(
            S_ALLOWED,
            "must name at least one domain, or `*` for any",
        ));
    }
    for domain in &list {
        if !is_domain_name(domain) {
            return Err(bad(S_ALLOWED, format!("`{domain}` is not a domain name")));
        }
    }
    Ok(AllowedDomains::Only(list))
}

/// A DNS name of at least two labels, letters, digits and hyphens (lower-case).
pub fn is_domain_name(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    domain.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::{env, oidc_env};
    use super::*;

    #[test]
    fn an_oidc_issuer_allows_any_interface_and_parses_every_setting() {
        let config = Config::from_sources(None, &env(&oidc_env())).unwrap();
        let oidc = config.auth.oidc.unwrap();
        assert_eq!(oidc.issuer.as_str(), "https://id.example.com/");
        assert_eq!(oidc.client_secret.expose(), "s3cret");
        assert_eq!(
            oidc.allowed_domains,
            AllowedDomains::Only(vec!["example.com".into(), "corp.test".into()])
        );
        assert!(!oidc.require_hosted_domain);
        assert!(config.http.is_https());
    }

    #[test]
    fn the_google_preset_fills_the_issuer_and_requires_the_hosted_domain() {
        let config = Config::from_sources(
            None,
            &env(&[
                ("STRAD_OIDC_PROVIDER", "google"),
                ("STRAD_OIDC_CLIENT_ID", "id.apps.googleusercontent.com"),
                ("STRAD_OIDC_CLIENT_SECRET", "x"),
                ("STRAD_ALLOWED_DOMAINS", "corp.test"),
            ]),
        )
        .unwrap();
        let oidc = config.auth.oidc.unwrap();
        assert_eq!(oidc.issuer.as_str(), "https://accounts.google.com/");
        assert_eq!(oidc.provider_name, "Google");
        assert!(oidc.require_hosted_domain);
    }

    #[test]
    fn every_missing_oidc_setting_is_named() {
        for (missing, setting) in [
            ("STRAD_OIDC_CLIENT_ID", S_CLIENT_ID),
            ("STRAD_OIDC_CLIENT_SECRET", S_CLIENT_SECRET),
            ("STRAD_ALLOWED_DOMAINS", S_ALLOWED),
        ] {
            let pairs: Vec<_> = oidc_env()
                .into_iter()
                .filter(|(k, _)| *k != missing)
                .collect();
            let err = Config::from_sources(None, &env(&pairs)).unwrap_err();
            assert_eq!(err.setting, setting);
            assert!(err.to_string().contains(missing), "{err}");
        }
    }

    #[test]
    fn client_settings_without_an_issuer_are_an_error_not_local_mode() {
        let err = Config::from_sources(None, &env(&[("STRAD_OIDC_CLIENT_ID", "x")])).unwrap_err();
        assert_eq!(err.setting, S_ISSUER);
    }

    #[test]
    fn an_issuer_must_be_https_except_on_loopback() {
        let mut pairs = oidc_env();
        pairs[0] = ("STRAD_OIDC_ISSUER", "http://id.example.com");
        assert_eq!(
            Config::from_sources(None, &env(&pairs))
                .unwrap_err()
                .setting,
            S_ISSUER
        );
        pairs[0] = ("STRAD_OIDC_ISSUER", "http://127.0.0.1:4444");
        assert!(Config::from_sources(None, &env(&pairs)).is_ok());
    }

    #[test]
    fn allowed_domains_must_be_domains_or_an_explicit_star() {
        let mut pairs = oidc_env();
        pairs[3] = ("STRAD_ALLOWED_DOMAINS", "example.com;evil");
        assert_eq!(
            Config::from_sources(None, &env(&pairs))
                .unwrap_err()
                .setting,
            S_ALLOWED
        );
        pairs[3] = ("STRAD_ALLOWED_DOMAINS", "*");
        let oidc = Config::from_sources(None, &env(&pairs))
            .unwrap()
            .auth
            .oidc
            .unwrap();
        assert_eq!(oidc.allowed_domains, AllowedDomains::Any);
    }

    #[test]
    fn the_hosted_domain_cannot_be_required_when_any_domain_is_allowed() {
        let mut pairs = oidc_env();
        pairs[3] = ("STRAD_ALLOWED_DOMAINS", "*");
        pairs.push(("STRAD_OIDC_REQUIRE_HOSTED_DOMAIN", "true"));
        assert_eq!(
            Config::from_sources(None, &env(&pairs))
                .unwrap_err()
                .setting,
            S_REQUIRE_HD
        );
    }

    #[test]
    fn domain_names_are_checked_label_by_label() {
        for good in ["example.com", "a-b.example.co", "xn--bcher-kva.example"] {
            assert!(is_domain_name(good), "{good}");
        }
        for bad in [
            "example",
            "-a.com",
            "a-.com",
            "a..com",
            "Example.com",
            "a_b.com",
            "a.com/x",
            "",
        ] {
            assert!(!is_domain_name(bad), "{bad}");
        }
    }
}
