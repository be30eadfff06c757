//! The app surface (SPEC §6): the pure checks the host page and the frame route are built
//! on. The bridge's checks compile into the browser too; the CSP builder and the script
//! hasher are server-only.

pub mod actions;
pub mod app_inspect;
pub mod approval_panel;
#[cfg(feature = "hydrate")]
pub mod bridge;
pub mod bridge_message;
pub mod frame;
pub mod frame_start;
pub mod host_actions;
pub mod host_open;
pub mod host_view;
pub mod island_actions;
pub mod location;
mod open_app;
#[cfg(feature = "ssr")]
pub mod ssr;

pub use open_app::{AppStatus, AppView, OpenApp, RefreshPin, open_app};
