//! Who may use which server, and how (SPEC §5).

pub mod policy;
mod server_fns;
#[cfg(feature = "ssr")]
pub mod ssr;

pub use server_fns::*;
