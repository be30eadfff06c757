//! `[mcp]` and `[calls]`: how fast a person may use `/mcp` and the console's tool calls.

use serde::Deserialize;

use super::ConfigError;
use super::environment::Environment;

pub(super) const S_MCP_RATE: &str = "STRAD_MCP_RATE_PER_SECOND (mcp.rate_per_second)";
pub(super) const S_MCP_SESSIONS: &str = "STRAD_MCP_SESSIONS_PER_MINUTE (mcp.sessions_per_minute)";
pub(super) const S_CALLS_RATE: &str = "STRAD_TOOL_CALLS_PER_SECOND (calls.per_second)";
pub(super) const S_MCP_SESSIONS_MAX: &str = "STRAD_MCP_SESSIONS_MAX (mcp.sessions_max)";
pub(super) const S_FRAMES_UNLOADED: &str =
    "STRAD_FRAMES_UNLOADED_PER_PERSON (calls.frames_unloaded_per_person)";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCalls {
    per_second: Option<u64>,
    frames_unloaded_per_person: Option<u64>,
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
    pub(super) frames_unloaded_per_person: u32,
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
    let frames_unloaded_per_person = env.count(
        "STRAD_FRAMES_UNLOADED_PER_PERSON",
        S_FRAMES_UNLOADED,
        calls.frames_unloaded_per_person,
        256,
        1_000_000,
    )?;
    Ok(RateLimits {
        mcp_rate_per_second,
        mcp_sessions_per_minute,
        mcp_sessions_max,
        calls_per_second,
        frames_unloaded_per_person,
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

    #[test]
    fn a_person_holds_256_unloaded_frame_tickets_an_instance_unless_told() {
        let held = |file: Option<&str>, pairs: &[(&str, &str)]| {
            Config::from_sources(file, &env(pairs)).map(|c| c.frames_unloaded_per_person)
        };
        assert_eq!(held(None, &[]), Ok(256));
        assert_eq!(
            held(Some("[calls]\nframes_unloaded_per_person = 8"), &[]),
            Ok(8)
        );
        assert_eq!(
            held(None, &[("STRAD_FRAMES_UNLOADED_PER_PERSON", "0")])
                .unwrap_err()
                .setting,
            S_FRAMES_UNLOADED
        );
    }
}
