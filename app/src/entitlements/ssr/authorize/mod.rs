//! The one authorization path for using a server: signed in → entitled → policy. Every
//! route and server function that uses a server goes through here.

mod decision;
mod entitled;
#[cfg(test)]
mod fixtures;

pub use decision::{decision, decision_for, tool_call, tool_facts};
pub use entitled::{entitled_server, entitled_server_of};
