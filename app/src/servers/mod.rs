//! MCP servers: the registry, discovery, fingerprints and the app-change log (SPEC §4).

#[cfg(feature = "ssr")]
pub mod ssr;
