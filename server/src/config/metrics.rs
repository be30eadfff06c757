//! `[metrics]`: the bearer token that opens `/metrics` to a scraper that is not local.

use serde::Deserialize;

use super::environment::Environment;
use super::secret::Secret;
use super::{ConfigError, bad};

pub(super) const S_METRICS_TOKEN: &str = "STRAD_METRICS_TOKEN (metrics.token)";

/// Shortest token accepted: long enough that guessing it is hopeless.
pub const METRICS_TOKEN_MIN_BYTES: usize = 32;

#[derive(Clone, Debug, Default)]
pub struct MetricsConfig {
    /// `Authorization: Bearer <token>` with this token reads `/metrics` from anywhere; without
    /// it only a loopback peer with no forwarding header may (SPEC §13). `None`: loopback
    /// only. Redacted in `Debug`, never sent.
    pub token: Option<Secret>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileMetrics {
    token: Option<String>,
}

pub(super) fn load(file: FileMetrics, env: &Environment) -> Result<MetricsConfig, ConfigError> {
    let token = env.var("STRAD_METRICS_TOKEN").or(file.token);
    if token
        .as_ref()
        .is_some_and(|t| t.len() < METRICS_TOKEN_MIN_BYTES)
    {
        return Err(bad(
            S_METRICS_TOKEN,
            format!("must be at least {METRICS_TOKEN_MIN_BYTES} bytes"),
        ));
    }
    Ok(MetricsConfig {
        token: token.map(Secret::new),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

    #[test]
    fn a_metrics_token_is_optional_at_least_32_bytes_and_never_printed() {
        let token = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs))
                .map(|c| c.metrics.token.map(|s| s.expose().to_owned()))
        };
        assert_eq!(token(None, &[]), Ok(None));
        let long = "m".repeat(32);
        let told = [("STRAD_METRICS_TOKEN", long.as_str())];
        assert_eq!(token(None, &told), Ok(Some(long.clone())));
        let file = format!("[metrics]\ntoken = \"{}\"\n", "f".repeat(40));
        assert_eq!(token(Some(&file), &[]), Ok(Some("f".repeat(40))));
        assert_eq!(token(Some(&file), &told), Ok(Some(long.clone())));
        let short = "m".repeat(31);
        let err = token(None, &[("STRAD_METRICS_TOKEN", short.as_str())]).unwrap_err();
        assert_eq!(err.setting, S_METRICS_TOKEN);
        let config = Config::from_sources(None, &env(&told)).unwrap();
        assert!(!format!("{config:?}").contains(&long));
    }
}
