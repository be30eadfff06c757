//! Who is signed in, and what they may do.

mod get_me;
mod list_people;
mod next_path;
mod role;
mod sign_in_error;
mod sign_in_options;
#[cfg(feature = "ssr")]
pub mod ssr;

pub use get_me::{Me, get_me};
pub use list_people::{PersonView, list_people};
pub use next_path::safe_next_path;
pub use role::Role;
pub use sign_in_error::SignInError;
pub use sign_in_options::{SignInMethod, sign_in_options};
