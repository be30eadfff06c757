//! `[mcp]` and `[calls]`: how fast a person may use `/mcp` and the console's tool calls.

use serde::Deserialize;

use super::ConfigError;
use super::environment::Environment;

pub(super) const S_MCP_RATE: &str = "STRAD_MCP_RATE_PER_SECOND (mcp.rate_per_second)";
pub(super) const S_MCP_SESSIONS: &str = "STRAD_MCP_SESSIONS_PER_MINUTE (mcp.sessions_per_minute)";
pub(super) const S_CALLS_RATE: &str = "STRAD_TOOL_CALLS_PER_SECOND (calls.per_second)";
pub(super) const S_MCP_SESSIONS_MAX: &str = "STRAD_MCP_SESSIONS_MAX (mcp.sessions_max)";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCalls {
    per_second: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileMcp {
    rate_per_second: Option<u64>,
    sessions_per_minute: Option<u64>,
    sessions_max: Option<u64>,
}

/// The limits, as `Config` keeps them (documented on its fields).
pub(super) struct RateLimits {
    pub(super) mcp_rate_per_second: u32,
    pub(super) mcp_sessions_per_minute: u32,
    pub(super) mcp_sessions_max: u32,
    pub(super) calls_per_second: u32,
}

pub(super) fn load(
    mcp: FileMcp,
    calls: FileCalls,
    env: &Environment,
) -> Result<RateLimits, ConfigError> {
    let mcp_rate_per_second = env.count(
        "STRAD_MCP_RATE_PER_SECOND",
        S_MCP_RATE,
        mcp.rate_per_second,
        50,
        100_000,
    )?;
    let mcp_sessions_per_minute = env.count(
        "STRAD_MCP_SESSIONS_PER_MINUTE",
        S_MCP_SESSIONS,
        mcp.sessions_per_minute,
        10,
        100_000,
    )?;
    let mcp_sessions_max = env.count(
        "STRAD_MCP_SESSIONS_MAX",
        S_MCP_SESSIONS_MAX,
        mcp.sessions_max,
        1000,
        1_000_000,
    )?;
    let calls_per_second = env.count(
        "STRAD_TOOL_CALLS_PER_SECOND",
        S_CALLS_RATE,
        calls.per_second,
        20,
        100_000,
    )?;
    Ok(RateLimits {
        mcp_rate_per_second,
        mcp_sessions_per_minute,
        mcp_sessions_max,
        calls_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

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
}
