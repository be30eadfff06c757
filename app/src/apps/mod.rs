//! The app surface (SPEC §6): the pure checks the host page and the frame route are built
//! on. The bridge's checks compile into the browser too; the CSP builder and the script
//! hasher are server-only.

pub mod bridge_message;
pub mod host_open;
#[cfg(feature = "ssr")]
pub mod ssr;
