pub mod chain;
pub mod writer;
