use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// What the app page can show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AppStatus {
    /// Pinned and intact: the frame can load.
    Ready,
    /// The link came from another site: nothing runs until the person clicks Open.
    CrossSite,
    /// The server has no app (or is not approved to show one).
    NoApp,
    /// The first pin could not be made: the server is unreachable or the app invalid.
    Unavailable(String),
    /// The pinned copy no longer matches its digest.
    Corrupt,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppView {
    pub slug: String,
    pub display_name: String,
    pub status: AppStatus,
    pub uri: Option<String>,
    /// SHA-256 of the pinned bytes.
    pub digest: Option<String>,
    pub size: Option<i64>,
    /// The server's copy differs from the pin (Refresh re-pins on purpose).
    pub differs: bool,
    /// The tool that declares the app, called on open when it is read-only.
    pub declaring_tool: Option<String>,
    pub opens_with_call: bool,
    /// The app session for one frame load (SPEC §6), when the app can be shown.
    pub ticket: Option<String>,
    /// The origin the frame loads from: empty for the console's own, else the sandbox
    /// origin (`scheme://host[:port]`).
    pub frame_origin: String,
    /// `_meta.ui.csp.resourceDomains` as the pin declares them, and those the frame's CSP
    /// grants (bare https origins; everything else dropped).
    pub declared_domains: Vec<String>,
    pub granted_domains: Vec<String>,
    /// `_meta.ui.permissions` the app asks for (none is granted).
    pub permissions: Vec<String>,
    /// Hosts an admin lets this server's app open links to without asking (lowercase ASCII,
    /// optionally `*.`-prefixed); a link anywhere else is shown to the person first.
    pub link_hosts: Vec<String>,
}

/// Opens an app for the signed-in person: entitlement, the resource to show, and its pin
/// (made on first open — never from a link another site started). `refresh` re-pins on
/// purpose.
#[server(prefix = "/api", endpoint = "apps/open")]
pub async fn open_app(
    slug: String,
    uri: Option<String>,
    refresh: Option<bool>,
) -> Result<AppView, AppError> {
    use crate::apps::ssr::pins;
    use crate::audit::ssr::writer::AuditEvent;
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::ssr::authorize;
    use crate::error::Responder;
    use crate::servers::Capability;

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let cross_site = leptos::prelude::use_context::<http::request::Parts>().is_some_and(|parts| {
        parts
            .headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|site| !matches!(site, "same-origin" | "none"))
    });
    let ctx = RequestContext::require().await?;
    let server = authorize::entitled_server(&state.pool, &ctx, &slug)
        .await
        .map_err(|e| responder.fail(e))?;
    let mut view = AppView {
        slug: slug.clone(),
        display_name: server.display_name.clone(),
        status: AppStatus::NoApp,
        uri: None,
        digest: None,
        size: None,
        differs: false,
        declaring_tool: None,
        opens_with_call: false,
        ticket: None,
        frame_origin: state.sandbox_origin.clone().unwrap_or_default(),
        declared_domains: Vec::new(),
        granted_domains: Vec::new(),
        permissions: Vec::new(),
        link_hosts: server.link_hosts.clone(),
    };
    if cross_site {
        // No pin, no MCP call: the page only offers a same-origin Open link.
        view.status = AppStatus::CrossSite;
        return Ok(view);
    }
    if !ctx.may_write() {
        // An app runs the server's code, which calls tools, and its first open pins: a
        // session that may only view does neither.
        view.status = AppStatus::Unavailable(
            "A session opened with a login token can look around the console but cannot open apps."
                .into(),
        );
        return Ok(view);
    }
    if !server.approves(Capability::Apps) {
        return Ok(view);
    }
    let Some(uri) = pins::chosen_uri(&state.pool, &slug, uri.as_deref()).await? else {
        return Ok(view);
    };
    view.uri = Some(uri.clone());
    let existing =
        pins::get_checked(&state.pool, &state.checked_pins, ctx.user.id, &slug, &uri).await?;
    let pin = match (existing, refresh.unwrap_or(false)) {
        (Some(pin), false) => pin,
        (existing, _) => {
            let audited = if existing.is_some() {
                AuditEvent::AppRepinned
            } else {
                AuditEvent::AppPinned
            };
            match pins::pin(
                &state.pool,
                &state.hub,
                &server,
                &uri,
                &ctx.actor(),
                ctx.user.id,
                audited,
            )
            .await
            {
                Ok(pin) => pin.facts(),
                Err(pins::PinError::Database(error)) => return Err(error.into()),
                Err(other) => {
                    view.status = AppStatus::Unavailable(other.for_person(&slug, ctx.user.id));
                    return Ok(view);
                }
            }
        }
    };
    view.digest = Some(pin.sha256.clone());
    view.size = Some(pin.size);
    view.declared_domains = pin.resource_domains();
    view.granted_domains = crate::apps::ssr::csp::resource_origins(&view.declared_domains);
    view.permissions = pin.permissions();
    if !pin.intact {
        view.status = AppStatus::Corrupt;
        return Ok(view);
    }
    view.differs = pins::server_fingerprint(&state.pool, &slug, &uri)
        .await?
        .is_some_and(|f| f != pin.server_fingerprint);
    view.declaring_tool = pins::declaring_tool(&state.pool, &slug, &uri).await?;
    if let Some(tool) = &view.declaring_tool {
        let facts = authorize::tool_facts(&state.pool, &slug, tool).await?;
        view.opens_with_call = facts.is_some_and(|f| f.is_read_only());
    }
    view.ticket = state
        .frame_tickets
        .issue(ctx.user.id, &slug, &uri, &pin.sha256);
    if view.ticket.is_none() {
        view.status = AppStatus::Corrupt;
        return Ok(view);
    }
    view.status = AppStatus::Ready;
    Ok(view)
}

/// Re-pins the server's current copy on purpose, then reloads the page.
///
/// A plain form to the server function, which works before the page hydrates (the server
/// function answers a form post by sending the browser back); once hydrated, the call is
/// made from the page instead. Neither `ActionForm` nor `ServerAction`: they read the form's
/// fields and a failed post's error back from query strings, with parsers the app page would
/// otherwise not carry.
#[component]
pub fn RefreshPin(app: AppView) -> impl IntoView {
    use leptos::server_fn::ServerFn;
    let (slug, uri) = (app.slug.clone(), app.uri.clone());
    let refresh = Action::new(move |(): &()| open_app(slug.clone(), uri.clone(), Some(true)));
    Effect::new(move || {
        if let Some(Ok(_)) = refresh.value().get()
            && let Some(window) = web_sys::window()
        {
            let _ = window.location().reload();
        }
    });
    let submit = move |event: leptos::ev::SubmitEvent| {
        event.prevent_default();
        refresh.dispatch(());
    };
    view! {
        <form method="post" action=OpenApp::PATH on:submit=submit>
            <input type="hidden" name="slug" value=app.slug.clone() />
            <input type="hidden" name="uri" value=app.uri.clone().unwrap_or_default() />
            <input type="hidden" name="refresh" value="true" />
            <button type="submit" disabled=move || refresh.pending().get()>"Refresh pinned copy"</button>
        </form>
        {move || refresh.value().get().and_then(Result::err).map(|error| view! {
            <p class="notice notice-error" role="alert">{format!("The pinned copy was not refreshed: {error}")}</p>
        })}
    }
}
