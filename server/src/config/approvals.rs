//! `[approvals]`: the key approvals are signed with.

use serde::Deserialize;

use super::environment::Environment;
use super::secret::Secret;
use super::{ConfigError, bad};

pub(super) const S_APPROVAL_SECRET: &str = "STRAD_APPROVAL_SECRET (approvals.secret)";

#[derive(Clone, Debug)]
pub struct ApprovalsConfig {
    /// The key approvals are signed with (SPEC §8), at least 32 bytes; `None` uses the one
    /// kept in the database, made at first start and shared by every instance on it.
    /// Whoever holds it can approve any call for anyone: redacted in `Debug`, never sent.
    pub secret: Option<Secret>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileApprovals {
    secret: Option<String>,
}

pub(super) fn load(file: FileApprovals, env: &Environment) -> Result<ApprovalsConfig, ConfigError> {
    let approval_secret = env.var("STRAD_APPROVAL_SECRET").or(file.secret);
    if approval_secret
        .as_ref()
        .is_some_and(|s| s.len() < app::apps::ssr::approvals::SECRET_MIN_BYTES)
    {
        return Err(bad(S_APPROVAL_SECRET, "must be at least 32 bytes"));
    }
    Ok(ApprovalsConfig {
        secret: approval_secret.map(Secret::new),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

    #[test]
    fn an_approval_secret_is_optional_and_at_least_32_bytes() {
        let secret = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs))
                .map(|c| c.approvals.secret.map(|s| s.expose().to_owned()))
        };
        assert_eq!(secret(None, &[]), Ok(None));
        let long = "x".repeat(32);
        let told = [("STRAD_APPROVAL_SECRET", long.as_str())];
        assert_eq!(secret(None, &told), Ok(Some(long.clone())));
        let file = format!("[approvals]\nsecret = \"{}\"\n", "y".repeat(40));
        assert_eq!(secret(Some(&file), &[]), Ok(Some("y".repeat(40))));
        assert_eq!(
            secret(Some(&file), &told),
            Ok(Some(long)),
            "the environment wins"
        );
        let short = "x".repeat(31);
        let err = secret(None, &[("STRAD_APPROVAL_SECRET", short.as_str())]).unwrap_err();
        assert_eq!(err.setting, S_APPROVAL_SECRET);
    }
}
