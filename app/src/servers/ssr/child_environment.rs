//! The environment a stdio server starts with. None of strad's own: it holds the database's
//! address and password, the OIDC client secret and whatever else strad's host put there,
//! and a stdio server is someone else's program. The child gets the few variables a program
//! needs to run, from strad's environment when set, and the `env` its `[[servers]]` entry
//! declares (SPEC §4: stdio servers come from the configuration file only).

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::Arc;

/// What a stdio server gets of strad's environment.
pub const INHERITED: [&str; 4] = ["PATH", "HOME", "LANG", "TZ"];

/// The `env` of each stdio server declared in the file, by slug. Values may be secrets (a
/// server's API key), so they stay in memory, out of the database and the audit log, and
/// `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct DeclaredEnv(Arc<HashMap<String, Vec<(String, String)>>>);

impl DeclaredEnv {
    pub fn new(by_slug: HashMap<String, Vec<(String, String)>>) -> Self {
        Self(Arc::new(by_slug))
    }

    pub fn of(&self, slug: &str) -> &[(String, String)] {
        self.0.get(slug).map(Vec::as_slice).unwrap_or_default()
    }
}

impl std::fmt::Debug for DeclaredEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(slug, env)| {
                let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
                (slug, names)
            }))
            .finish()
    }
}

/// The child's whole environment: each of `INHERITED` that `strads` holds, then `declared`,
/// which wins over them.
pub fn child_environment(
    strads: impl Fn(&str) -> Option<OsString>,
    declared: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = INHERITED
        .iter()
        .filter(|name| !declared.iter().any(|(d, _)| d == *name))
        .filter_map(|name| strads(name).map(|value| (OsString::from(name), value)))
        .collect();
    env.extend(
        declared
            .iter()
            .map(|(name, value)| (name.into(), value.into())),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strads(name: &str) -> Option<OsString> {
        [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/strad"),
            ("LANG", "en_GB.UTF-8"),
            ("DATABASE_URL", "postgres://strad:hunter2@db/strad"),
            ("STRAD_OIDC_CLIENT_SECRET", "s3cret"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
        ]
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| OsString::from(v))
    }

    fn pairs(env: &[(OsString, OsString)]) -> Vec<(&str, &str)> {
        env.iter()
            .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
            .collect()
    }

    #[test]
    fn only_path_home_lang_and_tz_come_from_strad() {
        assert_eq!(
            pairs(&child_environment(strads, &[])),
            [
                ("PATH", "/usr/bin:/bin"),
                ("HOME", "/home/strad"),
                ("LANG", "en_GB.UTF-8")
            ]
        );
    }

    #[test]
    fn declared_variables_are_added_and_win_over_strads() {
        let declared = [
            ("GITHUB_TOKEN".to_string(), "ghp_x".to_string()),
            ("LANG".to_string(), "C.UTF-8".to_string()),
        ];
        assert_eq!(
            pairs(&child_environment(strads, &declared)),
            [
                ("PATH", "/usr/bin:/bin"),
                ("HOME", "/home/strad"),
                ("GITHUB_TOKEN", "ghp_x"),
                ("LANG", "C.UTF-8")
            ]
        );
    }

    #[test]
    fn debug_names_the_declared_variables_without_their_values() {
        let env = DeclaredEnv::new(HashMap::from([(
            "github".to_string(),
            vec![("GITHUB_TOKEN".to_string(), "ghp_x".to_string())],
        )]));
        let printed = format!("{env:?}");
        assert!(
            printed.contains("GITHUB_TOKEN") && !printed.contains("ghp_x"),
            "{printed}"
        );
        assert_eq!(env.of("github").len(), 1);
        assert!(env.of("other").is_empty());
    }
}
