//! One page per file.

mod admin;
mod app_card;
mod app_changes;
mod app_page;
pub(crate) mod audit_page;
mod error_pages;
mod home;
mod people;
mod pins_page;
pub mod playground;
mod sign_in;
mod tokens_page;

pub use admin::{
    AdminEntitlementsPage, AdminPolicyPage, AdminServerPage, AdminServersPage, AdminTokensPage,
};
pub use app_changes::AppChangesPage;
pub use app_page::AppPage;
pub use audit_page::AuditPage;
pub use error_pages::{ErrorPage, ForbiddenPage, NotFoundPage, UnauthorizedPage};
pub use home::HomePage;
pub use people::PeoplePage;
pub use pins_page::PinsPage;
pub use playground::PlaygroundPage;
pub use sign_in::SignInPage;
pub use tokens_page::TokensPage;
