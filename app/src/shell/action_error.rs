use leptos::prelude::*;
use server_fn::ServerFn;

use crate::error::AppError;

/// The refusal of a form's server function, as an alert under the form (the client-safe
/// message of `AppError`).
#[component]
pub fn ActionError<S>(action: ServerAction<S>) -> impl IntoView
where
    S: ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    S::Output: Clone + Send + Sync + 'static,
{
    move || {
        action.value().get().and_then(Result::err).map(|error| {
            view! { <p class="notice notice-error" role="alert">{error.to_string()}</p> }
        })
    }
}
