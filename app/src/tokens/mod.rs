//! Personal login tokens (SPEC §3): minted by a person for MCP clients, shown once,
//! stored as a SHA-256, expiring, revocable.

mod server_fns;
#[cfg(feature = "ssr")]
pub mod ssr;

pub use server_fns::*;
