//! `[site]`: where the compiled browser half of the console is.

use std::path::PathBuf;

use serde::Deserialize;

use super::environment::Environment;

#[derive(Clone, Debug)]
pub struct SiteConfig {
    /// Where cargo-leptos put the compiled site (`pkg/` with the wasm, JS and CSS).
    pub root: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSite {
    root: Option<String>,
}

pub(super) fn load(file: FileSite, env: &Environment) -> SiteConfig {
    let site_root = env
        .var("STRAD_SITE_ROOT")
        .or(file.root)
        .or_else(|| env.var("LEPTOS_SITE_ROOT"))
        .unwrap_or_else(|| "target/site".into());
    SiteConfig {
        root: PathBuf::from(site_root),
    }
}
