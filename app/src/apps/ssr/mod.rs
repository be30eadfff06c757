pub mod csp;
pub mod scripts;
