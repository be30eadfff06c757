//! `[database]`: where the PostgreSQL database is.

use std::fmt;

use serde::Deserialize;
use url::Url;

use super::environment::Environment;
use super::secret::{Secret, redact_url};
use super::{ConfigError, bad};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/strad";

pub(super) const S_DATABASE_URL: &str = "DATABASE_URL (database.url)";

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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDatabase {
    url: Option<String>,
}

pub(super) fn load(file: FileDatabase, env: &Environment) -> Result<DatabaseConfig, ConfigError> {
    let database_url = env
        .var("DATABASE_URL")
        .or(file.url)
        .unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
    match Url::parse(&database_url) {
        Ok(url) if matches!(url.scheme(), "postgres" | "postgresql") => {}
        _ => return Err(bad(S_DATABASE_URL, "must be a postgres:// URL")),
    }
    Ok(DatabaseConfig {
        url: Secret::new(database_url),
    })
}
