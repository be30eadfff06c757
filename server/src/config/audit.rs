//! `[audit]`: whether a tool call's answer waits for its audit row to reach the disk.

use app::audit::ssr::writer::Flush;
use serde::Deserialize;

use super::environment::Environment;
use super::{ConfigError, bad};

pub(super) const S_AUDIT_FLUSH: &str = "STRAD_AUDIT_TOOL_CALLS_FLUSH (audit.tool_calls_flush)";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAudit {
    tool_calls_flush: Option<String>,
}

pub(super) fn load(file: FileAudit, env: &Environment) -> Result<Flush, ConfigError> {
    match env
        .var("STRAD_AUDIT_TOOL_CALLS_FLUSH")
        .or(file.tool_calls_flush)
        .as_deref()
    {
        None | Some("background") => Ok(Flush::Background),
        Some("before_answer") => Ok(Flush::BeforeAnswer),
        Some(other) => Err(bad(
            S_AUDIT_FLUSH,
            format!("`{other}` is not one of: background, before_answer"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::test_support::env;
    use super::*;

    #[test]
    fn tool_calls_flush_in_the_background_unless_told_to_wait_for_the_disk() {
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
}
