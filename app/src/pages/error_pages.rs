use leptos::prelude::*;
use leptos_meta::Title;

use crate::error::AppError;

/// Sets the status of the response being rendered (no-op in the browser).
fn set_status(_status: u16) {
    #[cfg(feature = "ssr")]
    if let Some(options) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = http::StatusCode::from_u16(_status)
    {
        options.set_status(status);
    }
}

#[component]
fn StatusPage(status: u16, title: &'static str, message: String) -> impl IntoView {
    set_status(status);
    view! {
        <Title text=title />
        <section class="status-page" aria-labelledby="status-title">
            <p class="status-code">{status}</p>
            <h1 id="status-title">{title}</h1>
            <p>{message}</p>
            <p><a href="/">"Go to the console home"</a></p>
        </section>
    }
}

#[component]
pub fn UnauthorizedPage() -> impl IntoView {
    view! {
        <StatusPage status=401 title="Sign in required"
            message="Sign in to see this page.".to_string() />
        <p class="status-action"><a href="/sign-in">"Sign in"</a></p>
    }
}

#[component]
pub fn ForbiddenPage() -> impl IntoView {
    view! {
        <StatusPage status=403 title="No access"
            message="Your account does not have access to this page. An admin can grant it."
                .to_string() />
    }
}

#[component]
pub fn NotFoundPage() -> impl IntoView {
    view! {
        <StatusPage status=404 title="Not found"
            message="There is nothing at this address.".to_string() />
    }
}

/// The page for a failed server call; shows only the client-safe message.
#[component]
pub fn ErrorPage(error: AppError) -> impl IntoView {
    match error {
        AppError::Unauthorized => view! { <UnauthorizedPage /> }.into_any(),
        AppError::Forbidden => view! { <ForbiddenPage /> }.into_any(),
        AppError::NotFound => view! { <NotFoundPage /> }.into_any(),
        other => view! {
            <StatusPage status=other.status() title="Something went wrong"
                message=other.to_string() />
        }
        .into_any(),
    }
}
