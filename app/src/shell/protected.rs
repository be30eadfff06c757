use leptos::prelude::*;
#[cfg(not(feature = "ssr"))]
use leptos_router::components::Redirect;
use leptos_router::hooks::use_location;

use crate::auth::{Me, Role};
use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::pages::UnauthorizedPage;
use crate::pages::{ErrorPage, ForbiddenPage};

/// The signed-in person, fetched once per page load and shared through context.
pub type MeResource = crate::json::Loaded<Result<Option<Me>, AppError>>;

/// Renders `children` for a signed-in person (holding `role`, when given). An anonymous
/// visitor is sent to the sign-in page (a 302 during server rendering); a person without
/// the role gets the 403 page. This only shapes the page: every server function the page
/// calls authorizes again on its own.
#[component]
pub fn Protected<F, V>(children: F, #[prop(optional)] role: Option<Role>) -> impl IntoView
where
    F: Fn(Me) -> V + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let me = expect_context::<MeResource>();
    let location = use_location();
    // The page for whoever `me` turns out to be: `children`, the 403 page, the way to sign
    // in, or the error that kept us from knowing. Written once, for the two builds below.
    macro_rules! admit {
        ($children:expr) => {
            async move {
                match me.await {
                    Ok(Some(me)) => match role {
                        Some(role) if !me.has(role) => view! { <ForbiddenPage /> }.into_any(),
                        _ => $children(me).into_any(),
                    },
                    Ok(None) => {
                        // `search` comes without its leading `?`.
                        let search = location.search.get_untracked();
                        let here = match search.trim_start_matches('?') {
                            "" => location.pathname.get_untracked(),
                            query => format!("{}?{query}", location.pathname.get_untracked()),
                        };
                        let target = format!("/sign-in?next={}", encode_component(&here));
                        redirect_to_sign_in(target).into_any()
                    }
                    Err(err) => view! { <ErrorPage error=err /> }.into_any(),
                }
            }
        };
    }
    // On the server, one future, not a closure that makes one: while rendering, Suspense
    // walks its children up to three times (to find what they read, to check nothing new
    // started, to render), and a closure would build the page anew each time, every copy
    // loading the page's data again (on the app page, issuing another frame ticket). The
    // future is polled where it stopped, so the page is built once. In the browser the
    // closure runs once (`me` is loaded once per page load and never refetched) and makes
    // the same markup; written inline in `view!`, it leaves the app page's wasm 31 KB
    // smaller gzipped than the future, or the same closure held in a variable, does.
    #[cfg(feature = "ssr")]
    {
        view! { <Suspense fallback=loading>{Suspend::new(admit!(children))}</Suspense> }
    }
    #[cfg(not(feature = "ssr"))]
    {
        let children = std::sync::Arc::new(children);
        view! {
            <Suspense fallback=loading>
                {move || {
                    let children = children.clone();
                    Suspend::new(admit!(children))
                }}
            </Suspense>
        }
    }
}

/// What a protected page shows until it knows who is asking.
fn loading() -> impl IntoView {
    view! { <p class="loading">"Loading…"</p> }
}

/// Sends an anonymous visitor to sign in: a real 302 during server rendering (whatever the
/// request's `Accept`), a client-side navigation in the browser.
fn redirect_to_sign_in(target: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        // The 401 page is the body; the status is set after it, so the redirect wins.
        let page = view! { <UnauthorizedPage /> };
        if let Some(options) = use_context::<leptos_axum::ResponseOptions>() {
            options.set_status(http::StatusCode::FOUND);
            if let Ok(value) = http::HeaderValue::from_str(&target) {
                options.insert_header(http::header::LOCATION, value);
            }
        }
        page
    }
    #[cfg(not(feature = "ssr"))]
    {
        view! { <Redirect path=target /> }
    }
}

/// Percent-encodes a query component (RFC 3986 unreserved characters pass through).
pub fn encode_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::encode_component;

    #[test]
    fn query_components_are_percent_encoded() {
        assert_eq!(
            encode_component("/people?x=1&y=é"),
            "%2Fpeople%3Fx%3D1%26y%3D%C3%A9"
        );
        assert_eq!(encode_component("abc-._~"), "abc-._~");
    }
}
