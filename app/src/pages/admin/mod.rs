mod entitlements_page;
mod policy_page;
mod server_page;
mod servers_page;
mod tokens_page;

pub use entitlements_page::AdminEntitlementsPage;
pub use policy_page::AdminPolicyPage;
pub use server_page::AdminServerPage;
pub use servers_page::AdminServersPage;
pub use tokens_page::AdminTokensPage;
