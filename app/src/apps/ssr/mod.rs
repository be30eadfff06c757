pub mod csp;
pub mod pins;
pub mod scripts;
pub mod tickets;
