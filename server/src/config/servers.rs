//! `[[servers]]`: MCP servers declared in the file (the only place a stdio server can come
//! from).

use serde::Deserialize;
use url::Url;

use super::secret::Secret;
use super::{ConfigError, bad};

pub(super) const S_SERVERS: &str = "servers (strad.toml [[servers]])";

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileServer {
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

/// Every entry checked, no slug twice.
pub(super) fn load(entries: Vec<FileServer>) -> Result<Vec<DeclaredServer>, ConfigError> {
    let servers = entries
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
    Ok(servers)
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

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

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
}
