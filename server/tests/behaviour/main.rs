//! strad's integration tests, one module per behaviour: each test runs a real strad on a
//! loopback port over a fresh database (`support`), with real MCP peers and, for sign-in,
//! a real OpenID Connect issuer. One binary, so the server is linked once.

mod support;

mod anonymous_routes;
mod app_routes;
mod approvals;
mod audit_chain;
mod audit_events;
mod authorization;
mod conformance;
mod discovery;
mod faults;
mod island_actions;
mod local_mode;
mod mcp_client;
mod metrics;
mod oidc_sign_in;
mod page_data;
mod process;
mod relay;
mod schema_forms;
mod sessions;
mod stdio_environment;
mod tokens;
mod write_gate;
