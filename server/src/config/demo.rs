//! `demo`: whether local mode declares strad's own demo server (`strad demo-server`).

use super::environment::{Environment, parse_bool};
use super::{ConfigError, bad};

pub(super) const S_DEMO: &str = "STRAD_DEMO (demo)";

/// On unless turned off, and only ever in local mode: a deployment with an identity provider
/// serves the servers its admins register, nothing of strad's own.
pub(super) fn load(
    file: Option<bool>,
    env: &Environment,
    local_mode: bool,
) -> Result<bool, ConfigError> {
    let wanted = match env.var("STRAD_DEMO") {
        Some(raw) => parse_bool(&raw).ok_or_else(|| bad(S_DEMO, "must be on or off"))?,
        None => file.unwrap_or(true),
    };
    Ok(wanted && local_mode)
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::{env, oidc_env};
    use super::*;

    #[test]
    fn the_demo_is_on_in_local_mode_unless_turned_off() {
        assert!(Config::from_sources(None, &env(&[])).unwrap().demo);
        for off in ["off", "OFF", "false", "0", "no"] {
            let config = Config::from_sources(None, &env(&[("STRAD_DEMO", off)])).unwrap();
            assert!(!config.demo, "{off}");
        }
        assert!(
            !Config::from_sources(Some("demo = false"), &env(&[]))
                .unwrap()
                .demo
        );
        let on = Config::from_sources(Some("demo = false"), &env(&[("STRAD_DEMO", "on")]));
        assert!(on.unwrap().demo, "the environment wins");
    }

    #[test]
    fn a_deployment_with_an_identity_provider_has_no_demo() {
        let mut pairs = oidc_env();
        pairs.push(("STRAD_DEMO", "on"));
        let config = Config::from_sources(None, &env(&pairs)).unwrap();
        assert!(!config.demo);
    }

    #[test]
    fn a_demo_setting_that_is_not_on_or_off_is_refused() {
        let err = Config::from_sources(None, &env(&[("STRAD_DEMO", "maybe")])).unwrap_err();
        assert_eq!(err.setting, S_DEMO);
    }
}
