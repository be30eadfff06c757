pub mod canonical;
pub mod changes;
pub mod client;
pub mod discover;
pub mod discovery;
pub mod form;
pub mod registry;
pub mod views;
