use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// How this console signs people in; public, shown on the sign-in page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SignInMethod {
    Oidc { provider: String },
    Local,
}

#[server(prefix = "/api", endpoint = "sign-in-options", input = leptos::server_fn::codec::GetUrl)]
pub async fn sign_in_options() -> Result<SignInMethod, AppError> {
    use crate::state::{AppState, SignInMode};
    let state = AppState::from_context()?;
    Ok(match state.sign_in {
        SignInMode::Oidc { provider } => SignInMethod::Oidc { provider },
        SignInMode::Local => SignInMethod::Local,
    })
}
