//! Environment variables, which override the file's keys setting by setting.

use std::collections::HashMap;

use super::{ConfigError, bad};

/// The process environment as `Config::from_sources` was given it.
pub(super) struct Environment<'a>(pub(super) &'a HashMap<String, String>);

impl Environment<'_> {
    /// A variable's value, trimmed; unset and blank are alike.
    pub(super) fn var(&self, name: &str) -> Option<String> {
        self.0
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// A whole number from the environment, else the file's.
    pub(super) fn number(
        &self,
        name: &str,
        setting: &'static str,
        file: Option<u64>,
    ) -> Result<Option<u64>, ConfigError> {
        match self.var(name) {
            Some(raw) => raw
                .parse::<u64>()
                .map(Some)
                .map_err(|_| bad(setting, "must be a whole number")),
            None => Ok(file),
        }
    }

    /// A count from 1 to `max`, `default` when not set.
    pub(super) fn count(
        &self,
        name: &str,
        setting: &'static str,
        file: Option<u64>,
        default: u64,
        max: u64,
    ) -> Result<u32, ConfigError> {
        let value = self.number(name, setting, file)?.unwrap_or(default);
        if !(1..=max).contains(&value) {
            return Err(bad(setting, format!("must be between 1 and {max}")));
        }
        Ok(value as u32)
    }
}

/// A comma-separated list, blanks dropped.
pub(super) fn split_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

pub(super) fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}
