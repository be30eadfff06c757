//! The audit log: one append-only, hash-chained table (SPEC §10).

pub mod kind;
mod server_fns;
#[cfg(feature = "ssr")]
pub mod ssr;

pub use kind::AuditKind;
pub use server_fns::*;
