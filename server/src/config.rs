//! strad's configuration: one typed struct, loaded once at start-up from environment
//! variables and an optional `strad.toml`, validated before anything binds or connects.
//! A missing or bad setting stops start-up with a message that names it. There are no
//! default secrets, and secrets are redacted wherever the config is printed.
//!
//! One loader per section of the file, each beside the settings it reads.

mod approvals;
mod audit;
mod auth;
mod database;
mod demo;
mod discovery;
mod environment;
mod http;
mod local_mode;
mod metrics;
mod oidc;
mod rate_limits;
mod sandbox;
mod secret;
mod servers;
mod site;
#[cfg(test)]
mod test_support;

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;

pub use approvals::ApprovalsConfig;
pub use auth::AuthConfig;
pub use database::{DEFAULT_DATABASE_URL, DatabaseConfig};
pub use discovery::DiscoveryConfig;
pub use http::{DEFAULT_BIND, HttpConfig};
pub use metrics::{METRICS_TOKEN_MIN_BYTES, MetricsConfig};
pub use oidc::{AllowedDomains, GOOGLE_ISSUER, OidcConfig, is_domain_name};
pub use secret::{Secret, redact_url};
pub use servers::{DeclaredServer, DeclaredTransport};
pub use site::SiteConfig;

use environment::Environment;

#[derive(Clone, Debug)]
pub struct Config {
    pub http: HttpConfig,
    pub database: DatabaseConfig,
    pub auth: AuthConfig,
    pub site: SiteConfig,
    pub discovery: DiscoveryConfig,
    /// Requests a person may make on `/mcp` per second, all their login tokens together
    /// (bursts of twice that).
    pub mcp_rate_per_second: u32,
    /// Client sessions a person may open on `/mcp` per minute, all their login tokens
    /// together (bursts of as many).
    pub mcp_sessions_per_minute: u32,
    /// Client sessions `/mcp` holds open at once, all tokens together.
    pub mcp_sessions_max: u32,
    /// Tool calls a person may make from the console (apps, the playground, opening calls)
    /// per second, bursts of twice that.
    pub calls_per_second: u32,
    /// Frame tickets a person may hold unloaded on one instance (apps opened whose frame
    /// has not loaded yet); another voids their oldest.
    pub frames_unloaded_per_person: u32,
    /// Servers declared in the file (the only place a stdio server can come from).
    pub servers: Vec<DeclaredServer>,
    /// Whether a tool call's answer waits for its audit row to reach the disk, or only for
    /// its commit (`writer::Flush`).
    pub audit_calls_flush: app::audit::ssr::writer::Flush,
    pub approvals: ApprovalsConfig,
    pub metrics: MetricsConfig,
    /// Local mode declares strad's own demo server (`STRAD_DEMO`, on by default there).
    pub demo: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("configuration: {setting}: {problem}")]
pub struct ConfigError {
    /// The setting at fault, as both the environment variable and the file key.
    pub setting: &'static str,
    pub problem: String,
}

fn bad(setting: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        setting,
        problem: problem.into(),
    }
}

// Names of settings, as they appear in messages; each section's beside its loader.
const S_FILE: &str = "STRAD_CONFIG (strad.toml)";

/// The optional file. Every key is optional; unknown keys are an error so a typo does not
/// silently fall back to a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    http: http::FileHttp,
    #[serde(default)]
    database: database::FileDatabase,
    #[serde(default)]
    auth: auth::FileAuth,
    #[serde(default)]
    site: site::FileSite,
    #[serde(default)]
    discovery: discovery::FileDiscovery,
    #[serde(default)]
    mcp: rate_limits::FileMcp,
    #[serde(default)]
    audit: audit::FileAudit,
    #[serde(default)]
    calls: rate_limits::FileCalls,
    #[serde(default)]
    approvals: approvals::FileApprovals,
    #[serde(default)]
    metrics: metrics::FileMetrics,
    #[serde(default)]
    servers: Vec<servers::FileServer>,
    demo: Option<bool>,
}

impl Config {
    /// Loads from the process environment and, when present, the file named by
    /// `STRAD_CONFIG` (default `./strad.toml`; a named file that is missing is an error).
    pub fn load() -> Result<Config, ConfigError> {
        let env: HashMap<String, String> = std::env::vars().collect();
        let (path, must_exist) = match env.get("STRAD_CONFIG") {
            Some(path) => (PathBuf::from(path), true),
            None => (PathBuf::from("strad.toml"), false),
        };
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !must_exist => None,
            Err(err) => {
                return Err(bad(
                    S_FILE,
                    format!("cannot read {}: {err}", path.display()),
                ));
            }
        };
        Config::from_sources(file.as_deref(), &env)
    }

    /// Builds the config from the file's text (if any) and environment variables, which
    /// override the file. Pure, for tests.
    pub fn from_sources(
        file: Option<&str>,
        env: &HashMap<String, String>,
    ) -> Result<Config, ConfigError> {
        let mut file: FileConfig = match file {
            Some(text) => toml::from_str(text).map_err(|e| bad(S_FILE, e.message().to_owned()))?,
            None => FileConfig::default(),
        };
        let env = Environment(env);

        let sandbox_file = file.http.sandbox_origin.take();
        let mut http = http::load(file.http, &env)?;
        let database = database::load(file.database, &env)?;
        let auth = auth::load(file.auth, &http, &env)?;
        http.sandbox_origin = sandbox::load(sandbox_file, &env, &http, auth.oidc.is_none())?;
        let site = site::load(file.site, &env);
        let discovery = discovery::load(file.discovery, &env)?;
        let limits = rate_limits::load(file.mcp, file.calls, &env)?;
        let audit_calls_flush = audit::load(file.audit, &env)?;
        let approvals = approvals::load(file.approvals, &env)?;
        let metrics = metrics::load(file.metrics, &env)?;
        let servers = servers::load(file.servers)?;
        let demo = demo::load(file.demo, &env, auth.oidc.is_none())?;

        Ok(Config {
            discovery,
            mcp_rate_per_second: limits.mcp_rate_per_second,
            mcp_sessions_per_minute: limits.mcp_sessions_per_minute,
            mcp_sessions_max: limits.mcp_sessions_max,
            calls_per_second: limits.calls_per_second,
            frames_unloaded_per_person: limits.frames_unloaded_per_person,
            servers,
            audit_calls_flush,
            approvals,
            metrics,
            demo,
            http,
            database,
            auth,
            site,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::auth::{S_ADMINS, S_IDLE};
    use super::database::S_DATABASE_URL;
    use super::http::{S_BIND, S_INSTANCE, S_PUBLIC_URL};
    use super::oidc::{S_ISSUER, S_PROVIDER};
    use super::test_support::{env, oidc_env};
    use super::*;

    #[test]
    fn bad_values_are_refused_with_the_setting_named() {
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![("STRAD_BIND", "localhost")], S_BIND),
            (vec![("STRAD_INSTANCE", "A")], S_INSTANCE),
            (vec![("STRAD_INSTANCE", "a.b")], S_INSTANCE),
            (vec![("STRAD_PUBLIC_URL", "ftp://127.0.0.1")], S_PUBLIC_URL),
            (
                vec![("STRAD_PUBLIC_URL", "http://127.0.0.1:3000/console")],
                S_PUBLIC_URL,
            ),
            (
                vec![("STRAD_PUBLIC_URL", "http://u:p@127.0.0.1:3000")],
                S_PUBLIC_URL,
            ),
            (
                vec![("DATABASE_URL", "mysql://localhost/strad")],
                S_DATABASE_URL,
            ),
            (vec![("STRAD_BOOTSTRAP_ADMINS", "alice")], S_ADMINS),
            (vec![("STRAD_SESSION_IDLE_MINUTES", "forever")], S_IDLE),
            (vec![("STRAD_SESSION_IDLE_MINUTES", "1")], S_IDLE),
            (vec![("STRAD_OIDC_PROVIDER", "okta")], S_PROVIDER),
            (vec![("STRAD_OIDC_PROVIDER", "generic")], S_ISSUER),
        ];
        for (pairs, setting) in cases {
            let err = Config::from_sources(None, &env(&pairs)).unwrap_err();
            assert_eq!(err.setting, setting, "{pairs:?}");
        }
    }

    #[test]
    fn the_file_is_read_and_the_environment_overrides_it() {
        let file = r#"
            [http]
            bind = "127.0.0.1:4000"
            [auth]
            bootstrap_admins = ["Root@Example.com"]
            session_idle_minutes = 60
        "#;
        let config = Config::from_sources(Some(file), &env(&[])).unwrap();
        assert_eq!(config.http.bind.port(), 4000);
        assert_eq!(config.auth.bootstrap_admins, ["root@example.com"]);
        assert_eq!(config.auth.session_idle, time::Duration::hours(1));
        let config =
            Config::from_sources(Some(file), &env(&[("STRAD_BIND", "127.0.0.1:5000")])).unwrap();
        assert_eq!(config.http.bind.port(), 5000);
    }

    #[test]
    fn an_unknown_key_in_the_file_is_an_error() {
        let err = Config::from_sources(Some("[http]\nbnid = \"x\"\n"), &env(&[])).unwrap_err();
        assert_eq!(err.setting, S_FILE);
        assert!(err.problem.contains("bnid"), "{err}");
    }

    #[test]
    fn secrets_never_appear_in_debug_output() {
        let mut pairs = oidc_env();
        pairs.push(("DATABASE_URL", "postgres://strad:hunter2@db.internal/strad"));
        pairs.push(("STRAD_APPROVAL_SECRET", "approve-anything-0123456789abcdef"));
        let config = Config::from_sources(None, &env(&pairs)).unwrap();
        let printed = format!("{config:?}");
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(!printed.contains("approve-anything"), "{printed}");
        assert!(printed.contains("redacted"));
    }
}
