//! One page per file.

mod admin;
mod app_changes;
mod error_pages;
mod home;
mod people;
mod sign_in;

pub use admin::{AdminServerPage, AdminServersPage};
pub use app_changes::AppChangesPage;
pub use error_pages::{ErrorPage, ForbiddenPage, NotFoundPage, UnauthorizedPage};
pub use home::HomePage;
pub use people::PeoplePage;
pub use sign_in::SignInPage;
