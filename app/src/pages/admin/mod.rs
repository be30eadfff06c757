mod server_page;
mod servers_page;

pub use server_page::AdminServerPage;
pub use servers_page::AdminServersPage;
