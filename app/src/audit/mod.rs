//! The audit log: one append-only, hash-chained table (SPEC §10).

mod server_fns;
#[cfg(feature = "ssr")]
pub mod ssr;

pub use server_fns::*;
