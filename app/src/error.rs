//! The one client-facing error type. Every server function returns it; each variant is safe
//! to show in a browser. Internal detail is logged once, where it happens, and never sent.

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    #[error("Sign in to continue.")]
    Unauthorized,
    #[error("You do not have access to this.")]
    Forbidden,
    #[error("Not found.")]
    NotFound,
    #[error("The value of {field} is not valid.")]
    Invalid { field: String },
    #[error(
        "You already hold {limit} live login tokens, the most one person may. Revoke one to mint another."
    )]
    TooManyTokens { limit: u32 },
    #[error("This is temporarily unavailable. Try again shortly.")]
    Unavailable,
    #[error("Something went wrong on our side.")]
    Internal,
}

impl AppError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::Invalid { .. } => 400,
            Self::TooManyTokens { .. } => 409,
            Self::Unavailable => 503,
            Self::Internal => 500,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(_) | ServerFnErrorErr::Deserialization(_) => Self::Invalid {
                field: "request".into(),
            },
            ServerFnErrorErr::Request(_) | ServerFnErrorErr::Response(_) => Self::Unavailable,
            _ => Self::Internal,
        }
    }
}

#[cfg(feature = "ssr")]
impl AppError {
    /// Logs the cause once and returns the opaque `Internal` variant.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error.message = %cause, "internal error");
        Self::Internal
    }
}

/// The response being built, captured before a server function's first `.await` so a
/// refusal can set its real status (401/403) afterwards.
#[cfg(feature = "ssr")]
pub struct Responder {
    options: Option<leptos_axum::ResponseOptions>,
    form_post: bool,
}

#[cfg(feature = "ssr")]
impl Responder {
    pub fn capture() -> Self {
        Self {
            options: leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
            form_post: is_form_post(),
        }
    }

    /// Sets `error`'s status on the response and hands the error back. A plain form post
    /// (no script) keeps the redirect back to its page instead, so the person sees the page
    /// and its message rather than a bare error body.
    pub fn fail(&self, error: AppError) -> AppError {
        if let (Some(options), Ok(status), false) = (
            &self.options,
            http::StatusCode::from_u16(error.status()),
            self.form_post,
        ) {
            options.set_status(status);
        }
        error
    }
}

/// Whether the request being handled is a browser's plain form submission (it accepts
/// HTML), as opposed to the hydrated console's fetch.
#[cfg(feature = "ssr")]
pub fn is_form_post() -> bool {
    leptos::prelude::use_context::<http::request::Parts>().is_some_and(|parts| {
        parts.method == http::Method::POST
            && parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|accept| accept.contains("text/html"))
    })
}

#[cfg(feature = "ssr")]
impl From<sqlx::Error> for AppError {
    fn from(err: sqlx::Error) -> Self {
        Self::internal(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_has_its_own_status() {
        let statuses: Vec<u16> = [
            AppError::Unauthorized,
            AppError::Forbidden,
            AppError::NotFound,
            AppError::Invalid { field: "x".into() },
            AppError::TooManyTokens { limit: 20 },
            AppError::Unavailable,
            AppError::Internal,
        ]
        .iter()
        .map(AppError::status)
        .collect();
        assert_eq!(statuses, [401, 403, 404, 400, 409, 503, 500]);
    }

    #[test]
    fn messages_carry_no_internal_detail() {
        assert_eq!(
            AppError::Internal.to_string(),
            "Something went wrong on our side."
        );
    }
}
