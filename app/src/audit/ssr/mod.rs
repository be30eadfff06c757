pub mod appender;
pub mod chain;
pub mod event;
pub mod writer;
