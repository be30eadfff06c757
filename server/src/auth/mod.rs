//! Sign-in and sign-out: OpenID Connect, local mode's one-time links, and the session
//! changes they make.

pub mod complete;
pub mod domain;
pub mod local;
pub mod oidc;
pub mod sign_out;
pub mod token_session;

/// Where a refused sign-in lands: the sign-in page with a fixed message per code.
pub fn refused(error: app::auth::SignInError) -> axum::response::Redirect {
    axum::response::Redirect::to(&format!("/sign-in?error={}", error.code()))
}
