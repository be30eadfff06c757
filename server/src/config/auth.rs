//! `[auth]`: who signs in and for how long — the identity provider (or local mode), the
//! first admins, session lifetimes and login tokens.

use serde::Deserialize;

use super::environment::{Environment, split_list};
use super::http::HttpConfig;
use super::local_mode;
use super::oidc::{self, FileOidc, OidcConfig, is_domain_name};
use super::{ConfigError, bad};

const DEFAULT_SESSION_IDLE_MINUTES: i64 = 12 * 60;
/// A week: a stolen cookie stops working within it, however busy its thief keeps it.
const DEFAULT_SESSION_MAX_HOURS: i64 = 7 * 24;

pub(super) const S_ADMINS: &str = "STRAD_BOOTSTRAP_ADMINS (auth.bootstrap_admins)";
pub(super) const S_IDLE: &str = "STRAD_SESSION_IDLE_MINUTES (auth.session_idle_minutes)";
pub(super) const S_MAX: &str = "STRAD_SESSION_MAX_HOURS (auth.session_max_hours)";
pub(super) const S_TOKENS_PER_PERSON: &str = "STRAD_TOKENS_PER_PERSON (auth.tokens_per_person)";

#[derive(Clone, Debug)]
pub struct AuthConfig {
    /// `None` is local mode (SPEC §3).
    pub oidc: Option<OidcConfig>,
    /// Emails that get the admin role when they sign in. Lower-cased.
    pub bootstrap_admins: Vec<String>,
    pub session_idle: time::Duration,
    /// How long any session lives, however active (SPEC §3: an absolute lifetime besides
    /// the idle expiry).
    pub session_max: time::Duration,
    /// Live (unrevoked, unexpired) login tokens one person may hold: each is a credential
    /// for `/mcp` outside the browser, so their number is bounded like the rest.
    pub tokens_per_person: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAuth {
    bootstrap_admins: Option<Vec<String>>,
    session_idle_minutes: Option<i64>,
    session_max_hours: Option<i64>,
    tokens_per_person: Option<u64>,
    oidc: Option<FileOidc>,
}

/// Without an identity provider, `http` must be loopback only (local mode).
pub(super) fn load(
    file: FileAuth,
    http: &HttpConfig,
    env: &Environment,
) -> Result<AuthConfig, ConfigError> {
    let oidc = oidc::load(file.oidc.unwrap_or_default(), env)?;
    if oidc.is_none() {
        local_mode::refuse_beyond_loopback(http)?;
    }

    let bootstrap_admins = match env.var("STRAD_BOOTSTRAP_ADMINS") {
        Some(list) => split_list(&list),
        None => file.bootstrap_admins.unwrap_or_default(),
    };
    let bootstrap_admins = bootstrap_admins
        .into_iter()
        .map(|email| {
            let email = email.trim().to_ascii_lowercase();
            match email.split_once('@') {
                Some((local, domain)) if !local.is_empty() && is_domain_name(domain) => Ok(email),
                _ => Err(bad(S_ADMINS, format!("`{email}` is not an email address"))),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;

    let idle_minutes = match env.var("STRAD_SESSION_IDLE_MINUTES") {
        Some(raw) => raw
            .parse::<i64>()
            .map_err(|_| bad(S_IDLE, "must be a whole number of minutes"))?,
        None => file
            .session_idle_minutes
            .unwrap_or(DEFAULT_SESSION_IDLE_MINUTES),
    };
    if !(5..=60 * 24 * 30).contains(&idle_minutes) {
        return Err(bad(S_IDLE, "must be between 5 minutes and 30 days"));
    }
    let max_hours = match env.var("STRAD_SESSION_MAX_HOURS") {
        Some(raw) => raw
            .parse::<i64>()
            .map_err(|_| bad(S_MAX, "must be a whole number of hours"))?,
        None => file.session_max_hours.unwrap_or(DEFAULT_SESSION_MAX_HOURS),
    };
    if !(1..=24 * 90).contains(&max_hours) {
        return Err(bad(S_MAX, "must be between 1 hour and 90 days"));
    }
    let tokens_per_person = env.count(
        "STRAD_TOKENS_PER_PERSON",
        S_TOKENS_PER_PERSON,
        file.tokens_per_person,
        20,
        100_000,
    )?;

    Ok(AuthConfig {
        oidc,
        bootstrap_admins,
        session_idle: time::Duration::minutes(idle_minutes),
        session_max: time::Duration::hours(max_hours),
        tokens_per_person,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

    #[test]
    fn every_session_has_an_absolute_lifetime_of_a_week_unless_told() {
        let max = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs)).map(|c| c.auth.session_max)
        };
        assert_eq!(max(None, &[]), Ok(time::Duration::days(7)));
        assert_eq!(
            max(Some("[auth]\nsession_max_hours = 8"), &[]),
            Ok(time::Duration::hours(8))
        );
        assert_eq!(
            max(None, &[("STRAD_SESSION_MAX_HOURS", "24")]),
            Ok(time::Duration::hours(24))
        );
        for bad in ["0", "-1", "2161", "week"] {
            assert_eq!(
                max(None, &[("STRAD_SESSION_MAX_HOURS", bad)])
                    .unwrap_err()
                    .setting,
                S_MAX,
                "{bad}"
            );
        }
    }

    #[test]
    fn live_login_tokens_per_person_default_to_twenty_and_are_bounded() {
        let per_person = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs)).map(|c| c.auth.tokens_per_person)
        };
        assert_eq!(per_person(None, &[]), Ok(20));
        let file = "[auth]\ntokens_per_person = 5\n";
        assert_eq!(per_person(Some(file), &[]), Ok(5));
        assert_eq!(
            per_person(Some(file), &[("STRAD_TOKENS_PER_PERSON", "7")]),
            Ok(7)
        );
        for bad in ["0", "-1", "many", "100001"] {
            let err = per_person(None, &[("STRAD_TOKENS_PER_PERSON", bad)]).unwrap_err();
            assert_eq!(err.setting, S_TOKENS_PER_PERSON, "{bad}");
        }
    }
}
