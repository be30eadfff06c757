pub mod approval_store;
pub mod approvals;
pub mod csp;
pub mod held_tickets;
pub mod pins;
pub mod scripts;
pub mod ticket_claims;
pub mod tickets;
