//! MCP servers: the registry, discovery, fingerprints and the app-change log (SPEC §4).

mod capability;
mod get_server;
pub mod link_hosts;
mod list_app_changes;
mod list_servers;
mod refresh_server;
mod register_server;
mod set_link_hosts;
mod slug;
#[cfg(feature = "ssr")]
pub mod ssr;
mod update_server;
pub mod views;

pub use capability::Capability;
pub use get_server::{GetServer, get_server};
pub use list_app_changes::{ListAppChanges, list_app_changes};
pub use list_servers::{ListServers, list_servers};
pub use refresh_server::{RefreshOutcome, RefreshServer, refresh_server};
pub use register_server::{RegisterServer, register_server};
pub use set_link_hosts::{SetLinkHosts, set_link_hosts};
pub use slug::is_valid_slug;
pub use update_server::{UpdateServer, update_server};
