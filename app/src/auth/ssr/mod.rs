//! Server-only half of auth: the session's contents, the request context every server
//! function starts from, and the user and role queries.

pub mod context;
pub mod session;
pub mod users;
