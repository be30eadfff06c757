//! `[discovery]`: how strad talks to MCP servers — how often it discovers them again, how
//! long it waits, how much it accepts, how many processes a stdio server runs as.

use serde::Deserialize;

use super::environment::Environment;
use super::{ConfigError, bad};

pub(super) const S_INTERVAL: &str = "STRAD_DISCOVERY_INTERVAL_SECONDS (discovery.interval_seconds)";
pub(super) const S_TIMEOUT: &str = "STRAD_MCP_TIMEOUT_SECONDS (discovery.request_timeout_seconds)";
pub(super) const S_LIMIT: &str = "STRAD_RESOURCE_LIMIT_BYTES (discovery.resource_limit_bytes)";
pub(super) const S_TOOL_CALLS: &str = "STRAD_UPSTREAM_TOOL_CALLS (discovery.tool_calls)";
pub(super) const S_STDIO_CHILDREN: &str = "STRAD_STDIO_CHILDREN_MAX (discovery.stdio_children_max)";

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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDiscovery {
    interval_seconds: Option<u64>,
    request_timeout_seconds: Option<u64>,
    resource_limit_bytes: Option<usize>,
    tool_calls: Option<String>,
    stdio_children_max: Option<u64>,
}

pub(super) fn load(file: FileDiscovery, env: &Environment) -> Result<DiscoveryConfig, ConfigError> {
    let interval = env
        .number(
            "STRAD_DISCOVERY_INTERVAL_SECONDS",
            S_INTERVAL,
            file.interval_seconds,
        )?
        .unwrap_or(300);
    let timeout = env
        .number(
            "STRAD_MCP_TIMEOUT_SECONDS",
            S_TIMEOUT,
            file.request_timeout_seconds,
        )?
        .unwrap_or(30);
    if !(1..=600).contains(&timeout) {
        return Err(bad(S_TIMEOUT, "must be between 1 and 600 seconds"));
    }
    let limit = env
        .number(
            "STRAD_RESOURCE_LIMIT_BYTES",
            S_LIMIT,
            file.resource_limit_bytes.map(|v| v as u64),
        )?
        .unwrap_or(8 * 1024 * 1024);
    if !(1024..=64 * 1024 * 1024).contains(&limit) {
        return Err(bad(S_LIMIT, "must be between 1 KiB and 64 MiB"));
    }
    let stdio_children_max = env.count(
        "STRAD_STDIO_CHILDREN_MAX",
        S_STDIO_CHILDREN,
        file.stdio_children_max,
        4,
        64,
    )?;
    let direct_tool_calls = match env
        .var("STRAD_UPSTREAM_TOOL_CALLS")
        .or(file.tool_calls)
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
    Ok(DiscoveryConfig {
        direct_tool_calls,
        stdio_children_max: stdio_children_max as usize,
        interval: (interval > 0).then(|| std::time::Duration::from_secs(interval)),
        request_timeout: std::time::Duration::from_secs(timeout),
        resource_limit_bytes: limit as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

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
}
