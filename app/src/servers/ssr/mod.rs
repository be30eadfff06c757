pub mod canonical;
pub mod changes;
pub mod client;
pub mod discovery;
