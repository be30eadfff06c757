//! strad's configuration: one typed struct, loaded once at start-up from environment
//! variables and an optional `strad.toml`, validated before anything binds or connects.
//! A missing or bad setting stops start-up with a message that names it. There are no
//! default secrets, and secrets are redacted wherever the config is printed.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use serde::Deserialize;
use url::Url;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/strad";
pub const DEFAULT_BIND: &str = "127.0.0.1:3000";
pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";
const DEFAULT_SESSION_IDLE_MINUTES: i64 = 12 * 60;
/// A week: a stolen cookie stops working within it, however busy its thief keeps it.
const DEFAULT_SESSION_MAX_HOURS: i64 = 7 * 24;

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
    /// Servers declared in the file (the only place a stdio server can come from).
    pub servers: Vec<DeclaredServer>,
    /// Whether a tool call's answer waits for its audit row to reach the disk, or only for
    /// its commit (`writer::Flush`).
    pub audit_calls_flush: app::audit::ssr::writer::Flush,
    pub approvals: ApprovalsConfig,
}

#[derive(Clone, Debug)]
pub struct ApprovalsConfig {
    /// The key approvals are signed with (SPEC §8), at least 32 bytes; `None` uses the one
    /// kept in the database, made at first start and shared by every instance on it.
    /// Whoever holds it can approve any call for anyone: redacted in `Debug`, never sent.
    pub secret: Option<Secret>,
}

#[derive(Clone, Debug)]
pub struct DiscoveryConfig {
    /// How often every enabled server is discovered again; `None` turns it off.
    pub interval: Option<std::time::Duration>,
    /// Timeout of every request to an MCP server.
    pub request_timeout: std::time::Duration,
    /// Largest app resource accepted.
    pub resource_limit_bytes: usize,
    /// Tool calls to HTTP servers are posted straight into the session rmcp opened (the
    /// default), or made through rmcp's client (`rmcp`: to compare, or should a server
    /// misbehave with the direct POST).
    pub direct_tool_calls: bool,
    /// Processes a stdio server runs as at most, shared by the console and every `/mcp`
    /// client session.
    pub stdio_children_max: usize,
}

/// A `[[servers]]` entry of strad.toml.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredServer {
    pub slug: String,
    pub display_name: String,
    pub transport: DeclaredTransport,
    pub capabilities: Vec<String>,
    pub enabled: bool,
    /// A stdio server's environment beyond `PATH`, `HOME`, `LANG` and `TZ`, which are all
    /// it gets of strad's own (`child_environment.rs`). Values may be secrets (the server's
    /// API key): redacted in `Debug`, and never stored in the database.
    pub env: Vec<(String, Secret)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeclaredTransport {
    Http { url: String },
    Stdio { command: Vec<String> },
}

#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub bind: SocketAddr,
    /// The origin people reach the console at; sign-in redirects and cookie `Secure` follow
    /// it. Always scheme + host (+ port), no path.
    pub public_url: Url,
}

impl HttpConfig {
    pub fn is_https(&self) -> bool {
        self.public_url.scheme() == "https"
    }

    /// `scheme://host[:port]`, as browsers send it in `Origin`.
    pub fn public_origin(&self) -> String {
        self.public_url.origin().ascii_serialization()
    }
}

#[derive(Clone)]
pub struct DatabaseConfig {
    pub url: Secret,
}

impl fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &redact_url(self.url.expose()))
            .finish()
    }
}

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

#[derive(Clone, Debug)]
pub struct SiteConfig {
    /// Where cargo-leptos put the compiled site (`pkg/` with the wasm, JS and CSS).
    pub root: PathBuf,
}

/// A secret string: never printed, never serialized.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// A URL with its password replaced, for logs and error messages.
pub fn redact_url(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(mut url) => {
            if url.password().is_some() {
                let _ = url.set_password(Some("redacted"));
            }
            url.to_string()
        }
        Err(_) => "<unparseable url>".into(),
    }
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

// Names of settings, as they appear in messages.
const S_BIND: &str = "STRAD_BIND (http.bind)";
const S_PUBLIC_URL: &str = "STRAD_PUBLIC_URL (http.public_url)";
const S_DATABASE_URL: &str = "DATABASE_URL (database.url)";
const S_PROVIDER: &str = "STRAD_OIDC_PROVIDER (auth.oidc.provider)";
const S_ISSUER: &str = "STRAD_OIDC_ISSUER (auth.oidc.issuer)";
const S_CLIENT_ID: &str = "STRAD_OIDC_CLIENT_ID (auth.oidc.client_id)";
const S_CLIENT_SECRET: &str = "STRAD_OIDC_CLIENT_SECRET (auth.oidc.client_secret)";
const S_ALLOWED: &str = "STRAD_ALLOWED_DOMAINS (auth.oidc.allowed_domains)";
const S_REQUIRE_HD: &str = "STRAD_OIDC_REQUIRE_HOSTED_DOMAIN (auth.oidc.require_hosted_domain)";
const S_ADMINS: &str = "STRAD_BOOTSTRAP_ADMINS (auth.bootstrap_admins)";
const S_IDLE: &str = "STRAD_SESSION_IDLE_MINUTES (auth.session_idle_minutes)";
const S_MAX: &str = "STRAD_SESSION_MAX_HOURS (auth.session_max_hours)";
const S_TOKENS_PER_PERSON: &str = "STRAD_TOKENS_PER_PERSON (auth.tokens_per_person)";
const S_FILE: &str = "STRAD_CONFIG (strad.toml)";
const S_INTERVAL: &str = "STRAD_DISCOVERY_INTERVAL_SECONDS (discovery.interval_seconds)";
const S_TIMEOUT: &str = "STRAD_MCP_TIMEOUT_SECONDS (discovery.request_timeout_seconds)";
const S_LIMIT: &str = "STRAD_RESOURCE_LIMIT_BYTES (discovery.resource_limit_bytes)";
const S_SERVERS: &str = "servers (strad.toml [[servers]])";
const S_MCP_RATE: &str = "STRAD_MCP_RATE_PER_SECOND (mcp.rate_per_second)";
const S_MCP_SESSIONS: &str = "STRAD_MCP_SESSIONS_PER_MINUTE (mcp.sessions_per_minute)";
const S_CALLS_RATE: &str = "STRAD_TOOL_CALLS_PER_SECOND (calls.per_second)";
const S_MCP_SESSIONS_MAX: &str = "STRAD_MCP_SESSIONS_MAX (mcp.sessions_max)";
const S_TOOL_CALLS: &str = "STRAD_UPSTREAM_TOOL_CALLS (discovery.tool_calls)";
const S_STDIO_CHILDREN: &str = "STRAD_STDIO_CHILDREN_MAX (discovery.stdio_children_max)";
const S_AUDIT_FLUSH: &str = "STRAD_AUDIT_TOOL_CALLS_FLUSH (audit.tool_calls_flush)";
const S_APPROVAL_SECRET: &str = "STRAD_APPROVAL_SECRET (approvals.secret)";

/// The optional file. Every key is optional; unknown keys are an error so a typo does not
/// silently fall back to a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    http: FileHttp,
    #[serde(default)]
    database: FileDatabase,
    #[serde(default)]
    auth: FileAuth,
    #[serde(default)]
    site: FileSite,
    #[serde(default)]
    discovery: FileDiscovery,
    #[serde(default)]
    mcp: FileMcp,
    #[serde(default)]
    audit: FileAudit,
    #[serde(default)]
    calls: FileCalls,
    #[serde(default)]
    approvals: FileApprovals,
    #[serde(default)]
    servers: Vec<FileServer>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAudit {
    tool_calls_flush: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileApprovals {
    secret: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCalls {
    per_second: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMcp {
    rate_per_second: Option<u64>,
    sessions_per_minute: Option<u64>,
    sessions_max: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDiscovery {
    interval_seconds: Option<u64>,
    request_timeout_seconds: Option<u64>,
    resource_limit_bytes: Option<usize>,
    tool_calls: Option<String>,
    stdio_children_max: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileServer {
    slug: String,
    display_name: Option<String>,
    url: Option<String>,
    command: Option<Vec<String>>,
    #[serde(default)]
    capabilities: Vec<String>,
    enabled: Option<bool>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHttp {
    bind: Option<String>,
    public_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDatabase {
    url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    bootstrap_admins: Option<Vec<String>>,
    session_idle_minutes: Option<i64>,
    session_max_hours: Option<i64>,
    tokens_per_person: Option<u64>,
    oidc: Option<FileOidc>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOidc {
    provider: Option<String>,
    issuer: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    allowed_domains: Option<Vec<String>>,
    require_hosted_domain: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSite {
    root: Option<String>,
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
        let file: FileConfig = match file {
            Some(text) => toml::from_str(text).map_err(|e| bad(S_FILE, e.message().to_owned()))?,
            None => FileConfig::default(),
        };
        let var = |name: &str| {
            env.get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };

        let bind_raw = var("STRAD_BIND")
            .or(file.http.bind)
            .or_else(|| var("LEPTOS_SITE_ADDR"))
            .unwrap_or_else(|| DEFAULT_BIND.into());
        let bind: SocketAddr = bind_raw.parse().map_err(|_| {
            bad(
                S_BIND,
                format!("`{bind_raw}` is not an address like 127.0.0.1:3000"),
            )
        })?;

        let public_url = match var("STRAD_PUBLIC_URL").or(file.http.public_url) {
            Some(raw) => parse_public_url(&raw)?,
            None if bind.ip().is_unspecified() => {
                return Err(bad(S_PUBLIC_URL, "required when binding every interface"));
            }
            None => parse_public_url(&format!("http://{bind}"))?,
        };

        let database_url = var("DATABASE_URL")
            .or(file.database.url)
            .unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
        match Url::parse(&database_url) {
            Ok(url) if matches!(url.scheme(), "postgres" | "postgresql") => {}
            _ => return Err(bad(S_DATABASE_URL, "must be a postgres:// URL")),
        }

        let file_oidc = file.auth.oidc.unwrap_or_default();
        let provider = var("STRAD_OIDC_PROVIDER").or(file_oidc.provider);
        let issuer = var("STRAD_OIDC_ISSUER").or(file_oidc.issuer);
        let client_id = var("STRAD_OIDC_CLIENT_ID").or(file_oidc.client_id);
        let client_secret = var("STRAD_OIDC_CLIENT_SECRET").or(file_oidc.client_secret);
        let allowed = match var("STRAD_ALLOWED_DOMAINS") {
            Some(list) => Some(split_list(&list)),
            None => file_oidc.allowed_domains,
        };
        let require_hd = match var("STRAD_OIDC_REQUIRE_HOSTED_DOMAIN") {
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
                    (Some("google"), None) => {
                        ("Google".to_string(), GOOGLE_ISSUER.to_string(), true)
                    }
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

        if oidc.is_none() {
            // Local mode: the one-time link signs in an admin, so it must never be reachable
            // from another machine (SPEC §3).
            if !bind.ip().is_loopback() {
                return Err(bad(
                    S_BIND,
                    format!(
                        "refusing to bind {bind} without an OIDC issuer: local mode listens on \
                         loopback only (set STRAD_OIDC_ISSUER or STRAD_OIDC_PROVIDER)"
                    ),
                ));
            }
            if !public_url.host_str().is_some_and(is_loopback_host) {
                return Err(bad(
                    S_PUBLIC_URL,
                    "local mode serves loopback addresses only",
                ));
            }
        }

        let bootstrap_admins = match var("STRAD_BOOTSTRAP_ADMINS") {
            Some(list) => split_list(&list),
            None => file.auth.bootstrap_admins.unwrap_or_default(),
        };
        let bootstrap_admins = bootstrap_admins
            .into_iter()
            .map(|email| {
                let email = email.trim().to_ascii_lowercase();
                match email.split_once('@') {
                    Some((local, domain)) if !local.is_empty() && is_domain_name(domain) => {
                        Ok(email)
                    }
                    _ => Err(bad(S_ADMINS, format!("`{email}` is not an email address"))),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;

        let idle_minutes = match var("STRAD_SESSION_IDLE_MINUTES") {
            Some(raw) => raw
                .parse::<i64>()
                .map_err(|_| bad(S_IDLE, "must be a whole number of minutes"))?,
            None => file
                .auth
                .session_idle_minutes
                .unwrap_or(DEFAULT_SESSION_IDLE_MINUTES),
        };
        if !(5..=60 * 24 * 30).contains(&idle_minutes) {
            return Err(bad(S_IDLE, "must be between 5 minutes and 30 days"));
        }
        let max_hours = match var("STRAD_SESSION_MAX_HOURS") {
            Some(raw) => raw
                .parse::<i64>()
                .map_err(|_| bad(S_MAX, "must be a whole number of hours"))?,
            None => file
                .auth
                .session_max_hours
                .unwrap_or(DEFAULT_SESSION_MAX_HOURS),
        };
        if !(1..=24 * 90).contains(&max_hours) {
            return Err(bad(S_MAX, "must be between 1 hour and 90 days"));
        }

        let site_root = var("STRAD_SITE_ROOT")
            .or(file.site.root)
            .or_else(|| var("LEPTOS_SITE_ROOT"))
            .unwrap_or_else(|| "target/site".into());

        let number = |name: &str,
                      setting: &'static str,
                      file: Option<u64>|
         -> Result<Option<u64>, ConfigError> {
            match var(name) {
                Some(raw) => raw
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| bad(setting, "must be a whole number")),
                None => Ok(file),
            }
        };
        let interval = number(
            "STRAD_DISCOVERY_INTERVAL_SECONDS",
            S_INTERVAL,
            file.discovery.interval_seconds,
        )?
        .unwrap_or(300);
        let timeout = number(
            "STRAD_MCP_TIMEOUT_SECONDS",
            S_TIMEOUT,
            file.discovery.request_timeout_seconds,
        )?
        .unwrap_or(30);
        if !(1..=600).contains(&timeout) {
            return Err(bad(S_TIMEOUT, "must be between 1 and 600 seconds"));
        }
        let limit = number(
            "STRAD_RESOURCE_LIMIT_BYTES",
            S_LIMIT,
            file.discovery.resource_limit_bytes.map(|v| v as u64),
        )?
        .unwrap_or(8 * 1024 * 1024);
        if !(1024..=64 * 1024 * 1024).contains(&limit) {
            return Err(bad(S_LIMIT, "must be between 1 KiB and 64 MiB"));
        }
        // A count from 1 to `max`, `default` when not set.
        let count = |name: &str,
                     setting: &'static str,
                     file: Option<u64>,
                     default: u64,
                     max: u64|
         -> Result<u32, ConfigError> {
            let value = number(name, setting, file)?.unwrap_or(default);
            if !(1..=max).contains(&value) {
                return Err(bad(setting, format!("must be between 1 and {max}")));
            }
            Ok(value as u32)
        };
        let mcp_rate = count(
            "STRAD_MCP_RATE_PER_SECOND",
            S_MCP_RATE,
            file.mcp.rate_per_second,
            50,
            100_000,
        )?;
        let mcp_sessions = count(
            "STRAD_MCP_SESSIONS_PER_MINUTE",
            S_MCP_SESSIONS,
            file.mcp.sessions_per_minute,
            10,
            100_000,
        )?;
        let mcp_sessions_max = count(
            "STRAD_MCP_SESSIONS_MAX",
            S_MCP_SESSIONS_MAX,
            file.mcp.sessions_max,
            1000,
            1_000_000,
        )?;
        let calls_per_second = count(
            "STRAD_TOOL_CALLS_PER_SECOND",
            S_CALLS_RATE,
            file.calls.per_second,
            20,
            100_000,
        )?;
        let stdio_children_max = count(
            "STRAD_STDIO_CHILDREN_MAX",
            S_STDIO_CHILDREN,
            file.discovery.stdio_children_max,
            4,
            64,
        )?;
        let tokens_per_person = count(
            "STRAD_TOKENS_PER_PERSON",
            S_TOKENS_PER_PERSON,
            file.auth.tokens_per_person,
            20,
            100_000,
        )?;
        let audit_calls_flush = match var("STRAD_AUDIT_TOOL_CALLS_FLUSH")
            .or(file.audit.tool_calls_flush)
            .as_deref()
        {
            None | Some("background") => app::audit::ssr::writer::Flush::Background,
            Some("before_answer") => app::audit::ssr::writer::Flush::BeforeAnswer,
            Some(other) => {
                return Err(bad(
                    S_AUDIT_FLUSH,
                    format!("`{other}` is not one of: background, before_answer"),
                ));
            }
        };
        let direct_tool_calls = match var("STRAD_UPSTREAM_TOOL_CALLS")
            .or(file.discovery.tool_calls)
            .as_deref()
        {
            None | Some("direct") => true,
            Some("rmcp") => false,
            Some(other) => {
                return Err(bad(
                    S_TOOL_CALLS,
                    format!("`{other}` is not one of: direct, rmcp"),
                ));
            }
        };
        let approval_secret = var("STRAD_APPROVAL_SECRET").or(file.approvals.secret);
        if approval_secret
            .as_ref()
            .is_some_and(|s| s.len() < app::apps::ssr::approvals::SECRET_MIN_BYTES)
        {
            return Err(bad(S_APPROVAL_SECRET, "must be at least 32 bytes"));
        }
        let discovery = DiscoveryConfig {
            direct_tool_calls,
            stdio_children_max: stdio_children_max as usize,
            interval: (interval > 0).then(|| std::time::Duration::from_secs(interval)),
            request_timeout: std::time::Duration::from_secs(timeout),
            resource_limit_bytes: limit as usize,
        };
        let servers = file
            .servers
            .into_iter()
            .map(declared_server)
            .collect::<Result<Vec<_>, _>>()?;
        let mut slugs: Vec<&str> = servers.iter().map(|s| s.slug.as_str()).collect();
        slugs.sort();
        if let Some(pair) = slugs.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(bad(
                S_SERVERS,
                format!("slug `{}` is declared twice", pair[0]),
            ));
        }

        Ok(Config {
            discovery,
            mcp_rate_per_second: mcp_rate,
            mcp_sessions_per_minute: mcp_sessions,
            mcp_sessions_max,
            calls_per_second,
            servers,
            audit_calls_flush,
            approvals: ApprovalsConfig {
                secret: approval_secret.map(Secret::new),
            },
            http: HttpConfig { bind, public_url },
            database: DatabaseConfig {
                url: Secret::new(database_url),
            },
            auth: AuthConfig {
                oidc,
                bootstrap_admins,
                session_idle: time::Duration::minutes(idle_minutes),
                session_max: time::Duration::hours(max_hours),
                tokens_per_person,
            },
            site: SiteConfig {
                root: PathBuf::from(site_root),
            },
        })
    }
}

fn declared_server(entry: FileServer) -> Result<DeclaredServer, ConfigError> {
    let slug = entry.slug;
    if !(1..=40).contains(&slug.len())
        || !slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(bad(
            S_SERVERS,
            format!("slug `{slug}` is not [a-z0-9-]{{1,40}}"),
        ));
    }
    let transport = match (entry.url, entry.command) {
        (Some(url), None) => {
            let parsed = Url::parse(&url)
                .map_err(|_| bad(S_SERVERS, format!("{slug}: url is not a URL")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(bad(S_SERVERS, format!("{slug}: url must be http(s)")));
            }
            DeclaredTransport::Http { url }
        }
        (None, Some(command)) if !command.is_empty() && !command[0].is_empty() => {
            DeclaredTransport::Stdio { command }
        }
        _ => {
            return Err(bad(
                S_SERVERS,
                format!("{slug}: give exactly one of url or command"),
            ));
        }
    };
    if !entry.env.is_empty() && !matches!(transport, DeclaredTransport::Stdio { .. }) {
        return Err(bad(
            S_SERVERS,
            format!("{slug}: env is for a server strad starts (command)"),
        ));
    }
    for (name, value) in &entry.env {
        if !is_env_name(name) {
            return Err(bad(
                S_SERVERS,
                format!("{slug}: env `{name}` is not a name like [A-Za-z_][A-Za-z0-9_]*"),
            ));
        }
        if value.contains('\0') {
            return Err(bad(
                S_SERVERS,
                format!("{slug}: env `{name}` holds a NUL character"),
            ));
        }
    }
    for capability in &entry.capabilities {
        if !["tools", "prompts", "resources", "apps"].contains(&capability.as_str()) {
            return Err(bad(
                S_SERVERS,
                format!("{slug}: unknown capability `{capability}`"),
            ));
        }
    }
    Ok(DeclaredServer {
        display_name: entry.display_name.unwrap_or_else(|| slug.clone()),
        slug,
        transport,
        capabilities: entry.capabilities,
        enabled: entry.enabled.unwrap_or(true),
        env: entry
            .env
            .into_iter()
            .map(|(name, value)| (name, Secret::new(value)))
            .collect(),
    })
}

/// A portable environment variable name (POSIX: letters, digits and `_`, not starting with a
/// digit), so a declared name cannot carry `=` into the child's environment.
fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn parse_public_url(raw: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(raw).map_err(|_| bad(S_PUBLIC_URL, format!("`{raw}` is not a URL")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(S_PUBLIC_URL, "must be http:// or https://"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            S_PUBLIC_URL,
            "must be an origin only, without path, query or fragment",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(S_PUBLIC_URL, "must not carry credentials"));
    }
    Ok(url)
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

fn split_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
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

fn is_loopback_host(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn oidc_env() -> Vec<(&'static str, &'static str)> {
        vec![
            ("STRAD_OIDC_ISSUER", "https://id.example.com"),
            ("STRAD_OIDC_CLIENT_ID", "strad"),
            ("STRAD_OIDC_CLIENT_SECRET", "s3cret"),
            ("STRAD_ALLOWED_DOMAINS", "Example.com, corp.test"),
            ("STRAD_BIND", "0.0.0.0:8080"),
            ("STRAD_PUBLIC_URL", "https://strad.example.com"),
        ]
    }

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
    fn bad_values_are_refused_with_the_setting_named() {
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![("STRAD_BIND", "localhost")], S_BIND),
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
    fn a_person_makes_twenty_console_tool_calls_a_second_unless_told() {
        let rate = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs)).map(|c| c.calls_per_second)
        };
        assert_eq!(rate(None, &[]), Ok(20));
        assert_eq!(rate(Some("[calls]\nper_second = 5"), &[]), Ok(5));
        assert_eq!(rate(None, &[("STRAD_TOOL_CALLS_PER_SECOND", "3")]), Ok(3));
        assert_eq!(
            rate(None, &[("STRAD_TOOL_CALLS_PER_SECOND", "0")])
                .unwrap_err()
                .setting,
            S_CALLS_RATE
        );
    }

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
    fn tool_calls_flush_in_the_background_unless_told_to_wait_for_the_disk() {
        use app::audit::ssr::writer::Flush;
        let flush = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs)).map(|c| c.audit_calls_flush)
        };
        assert_eq!(flush(None, &[]), Ok(Flush::Background));
        let file = "[audit]\ntool_calls_flush = \"before_answer\"\n";
        assert_eq!(flush(Some(file), &[]), Ok(Flush::BeforeAnswer));
        let told = [("STRAD_AUDIT_TOOL_CALLS_FLUSH", "background")];
        assert_eq!(flush(Some(file), &told), Ok(Flush::Background));
        let err = flush(None, &[("STRAD_AUDIT_TOOL_CALLS_FLUSH", "never")]).unwrap_err();
        assert_eq!(err.setting, S_AUDIT_FLUSH);
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

    #[test]
    fn stdio_and_http_servers_are_declared_in_the_file() {
        let file = r#"
            [discovery]
            interval_seconds = 0
            request_timeout_seconds = 5
            [[servers]]
            slug = "clock"
            display_name = "Clock"
            command = ["mcp-server-basic-vanillajs", "--stdio"]
            capabilities = ["tools", "apps"]
            [[servers]]
            slug = "budget"
            url = "http://127.0.0.1:4000/mcp"
        "#;
        let config = Config::from_sources(Some(file), &env(&[])).unwrap();
        assert_eq!(config.discovery.interval, None);
        assert_eq!(
            config.discovery.request_timeout,
            std::time::Duration::from_secs(5)
        );
        assert_eq!(config.discovery.resource_limit_bytes, 8 * 1024 * 1024);
        assert!(config.discovery.direct_tool_calls);
        let rmcp = Config::from_sources(Some(file), &env(&[("STRAD_UPSTREAM_TOOL_CALLS", "rmcp")]));
        assert!(!rmcp.unwrap().discovery.direct_tool_calls);
        let err = Config::from_sources(Some(file), &env(&[("STRAD_UPSTREAM_TOOL_CALLS", "x")]));
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("STRAD_UPSTREAM_TOOL_CALLS")
        );
        assert_eq!(config.servers.len(), 2);
        assert_eq!(
            config.servers[0].transport,
            DeclaredTransport::Stdio {
                command: vec!["mcp-server-basic-vanillajs".into(), "--stdio".into()]
            }
        );
        assert_eq!(config.servers[1].display_name, "budget");
        assert!(config.servers[1].capabilities.is_empty());
    }

    #[test]
    fn bad_server_declarations_are_refused() {
        for entry in [
            "slug = \"Bad Slug\"\ncommand = [\"x\"]",
            "slug = \"a\"",
            "slug = \"a\"\ncommand = [\"x\"]\nurl = \"http://x\"",
            "slug = \"a\"\ncommand = []",
            "slug = \"a\"\nurl = \"file:///x\"",
            "slug = \"a\"\ncommand = [\"x\"]\ncapabilities = [\"root\"]",
        ] {
            let file = format!("[[servers]]\n{entry}\n");
            let err = Config::from_sources(Some(&file), &env(&[])).unwrap_err();
            assert_eq!(err.setting, S_SERVERS, "{entry}");
        }
        let twice = "[[servers]]\nslug = \"a\"\ncommand = [\"x\"]\n[[servers]]\nslug = \"a\"\ncommand = [\"y\"]\n";
        assert!(
            Config::from_sources(Some(twice), &env(&[]))
                .unwrap_err()
                .problem
                .contains("twice")
        );
    }

    #[test]
    fn a_stdio_server_declares_the_environment_it_starts_with() {
        let file = r#"
            [[servers]]
            slug = "github"
            command = ["github-mcp-server", "stdio"]
            env = { GITHUB_TOKEN = "ghp_x", _LOG = "debug" }
        "#;
        let config = Config::from_sources(Some(file), &env(&[])).unwrap();
        assert_eq!(
            config.servers[0].env,
            [
                ("GITHUB_TOKEN".to_string(), Secret::new("ghp_x")),
                ("_LOG".to_string(), Secret::new("debug"))
            ]
        );
        let printed = format!("{config:?}");
        assert!(!printed.contains("ghp_x"), "{printed}");
        for entry in [
            "command = [\"x\"]\nenv = { \"1ST\" = \"a\" }",
            "command = [\"x\"]\nenv = { \"A-B\" = \"a\" }",
            "command = [\"x\"]\nenv = { \"A=B\" = \"a\" }",
            "command = [\"x\"]\nenv = { \"\" = \"a\" }",
            "command = [\"x\"]\nenv = { A = \"nul\\u0000\" }",
            "url = \"http://127.0.0.1:4000/mcp\"\nenv = { A = \"a\" }",
        ] {
            let file = format!("[[servers]]\nslug = \"a\"\n{entry}\n");
            let err = Config::from_sources(Some(&file), &env(&[])).unwrap_err();
            assert_eq!(err.setting, S_SERVERS, "{entry}");
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

    #[test]
    fn discovery_settings_are_bounded() {
        assert_eq!(
            Config::from_sources(None, &env(&[("STRAD_MCP_TIMEOUT_SECONDS", "0")]))
                .unwrap_err()
                .setting,
            S_TIMEOUT
        );
        assert_eq!(
            Config::from_sources(None, &env(&[("STRAD_RESOURCE_LIMIT_BYTES", "10")]))
                .unwrap_err()
                .setting,
            S_LIMIT
        );
        assert_eq!(
            Config::from_sources(None, &env(&[("STRAD_DISCOVERY_INTERVAL_SECONDS", "x")]))
                .unwrap_err()
                .setting,
            S_INTERVAL
        );
    }

    #[test]
    fn a_stdio_server_runs_as_four_processes_at_most_unless_set() {
        let children = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs)).map(|c| c.discovery.stdio_children_max)
        };
        assert_eq!(children(None, &[]), Ok(4));
        let file = "[discovery]\nstdio_children_max = 2\n";
        assert_eq!(children(Some(file), &[]), Ok(2));
        let told = [("STRAD_STDIO_CHILDREN_MAX", "1")];
        assert_eq!(children(Some(file), &told), Ok(1));
        for bad in ["0", "65", "x"] {
            let err = children(None, &[("STRAD_STDIO_CHILDREN_MAX", bad)]).unwrap_err();
            assert_eq!(err.setting, S_STDIO_CHILDREN, "{bad}");
        }
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
