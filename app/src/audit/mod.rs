//! The audit log: one append-only, hash-chained table (SPEC §10).

#[cfg(feature = "ssr")]
pub mod ssr;
