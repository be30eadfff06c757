#![recursion_limit = "512"]
//! strad's console: the Leptos components and server functions shared by the server
//! (feature `ssr`) and the browser (feature `hydrate`). Code the browser never needs —
//! queries, session handling — lives in `ssr` modules that never compile into the wasm.

pub mod apps;
pub mod audit;
pub mod auth;
pub mod entitlements;
pub mod error;
pub mod json;
#[cfg(feature = "ssr")]
pub mod listen;
#[cfg(feature = "ssr")]
pub mod metrics;
pub mod pages;
pub mod playground;
pub mod servers;
pub mod shell;
#[cfg(feature = "ssr")]
pub mod state;
pub mod tokens;

pub use shell::{App, shell};
