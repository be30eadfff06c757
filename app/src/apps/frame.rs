//! One app in one sandboxed frame, with its bridge, status line and teardown: the app page
//! shows one, and each app card of the playground can load one (SPEC §6, §7).

use leptos::html::Iframe;
use leptos::prelude::*;
use serde_json::Value;

use crate::apps::app_inspect::AppInspect;
use crate::apps::approval_panel::ApprovalPanel;
use crate::apps::host_view::{Choice, DisplayMode, HostView};
use crate::apps::island_actions::IslandActions;
use crate::apps::{AppView, RefreshPin};

/// What the host sends the page once it is initialized.
#[derive(Clone, Debug, PartialEq)]
pub enum Opening {
    /// Nothing: the page asks for what it needs.
    Nothing,
    /// The host calls the declaring tool (the server checks it is read-only).
    Call,
    /// The input and result of a call already made (the playground's card).
    Given { arguments: Value, result: Value },
}

/// The parent's hold on a loaded frame: close it (with teardown) and read its traffic.
#[derive(Clone)]
pub struct FrameHandle {
    #[cfg(feature = "hydrate")]
    inner: send_wrapper::SendWrapper<
        std::rc::Rc<std::cell::RefCell<Option<crate::apps::bridge::Bridge>>>,
    >,
}

// Derivable only where the bridge is not compiled in.
#[cfg_attr(not(feature = "hydrate"), allow(clippy::derivable_impls))]
impl Default for FrameHandle {
    fn default() -> Self {
        Self {
            #[cfg(feature = "hydrate")]
            inner: send_wrapper::SendWrapper::new(Default::default()),
        }
    }
}

impl FrameHandle {
    /// Bytes the page sent the host and the host sent the page, as JSON text.
    pub fn traffic(&self) -> (u64, u64) {
        #[cfg(feature = "hydrate")]
        if let Some(bridge) = self.inner.borrow().as_ref() {
            return bridge.traffic();
        }
        (0, 0)
    }

    /// Sends `ui/resource-teardown`, waits briefly for the answer, removes the frame.
    pub async fn close(&self) {
        #[cfg(feature = "hydrate")]
        {
            let bridge = self.inner.borrow().clone();
            if let Some(bridge) = bridge {
                bridge.teardown("closed by the person").await;
            }
        }
    }

    #[cfg(feature = "hydrate")]
    fn hold(&self, bridge: crate::apps::bridge::Bridge) {
        *self.inner.borrow_mut() = Some(bridge);
    }
}

/// Where the app is, for the status line above the frame (the hydrated bridge moves it on).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
pub enum Phase {
    /// The frame's document is being fetched.
    Loading,
    /// The document loaded; the page has not finished its handshake.
    Starting,
    /// The handshake is done and nothing is pending.
    Running,
    /// The host is calling the declaring tool for the page.
    Opening(String),
    /// The opening call failed; the page was told.
    OpeningFailed(String),
    /// The page has not finished its handshake after a while.
    Silent,
    /// The frame is gone: why, when the app caused it.
    Closed(Option<&'static str>),
}

#[component]
fn AppStatusLine(phase: RwSignal<Phase>) -> impl IntoView {
    move || {
        let (text, busy, alert) = match phase.get() {
            Phase::Loading => ("Loading the app…".to_string(), true, false),
            Phase::Starting => ("Starting the app…".to_string(), true, false),
            Phase::Opening(tool) => (format!("Running {tool} for the app…"), true, false),
            Phase::Running | Phase::Closed(None) => return None,
            Phase::OpeningFailed(reason) => (
                format!("The app opened, but its first call failed: {reason}"),
                false,
                true,
            ),
            Phase::Silent => (
                "The app has not started: it loaded but never completed its handshake with the console. \
                 It may not be an MCP App, or its script failed."
                    .to_string(),
                false,
                true,
            ),
            Phase::Closed(Some(why)) => (why.to_string(), false, true),
        };
        let class = if alert {
            "notice notice-error app-status"
        } else {
            "notice app-status"
        };
        Some(view! {
            <p class=class role=if alert { "alert" } else { "status" } aria-live="polite">
                {busy.then(|| view! { <progress class="app-progress" aria-label="Progress"></progress> " " })}
                {text}
            </p>
        })
    }
}

/// The frame for `app` (which must be `Ready`, with a ticket), its bar and status line.
#[component]
pub fn AppFrame(
    app: AppView,
    opening: Opening,
    /// Filled with the bridge once the frame loads.
    #[prop(optional)]
    handle: Option<FrameHandle>,
) -> impl IntoView {
    let uri = app.uri.clone().unwrap_or_default();
    // The ticket is this frame load's app session. The frame's query is the app's `uri`
    // first, then the host's own params (SPEC §6 "Location"); the hash is added in the
    // browser, which alone knows it.
    let base = format!(
        "{}/apps/{}/frame/{}",
        app.frame_origin,
        app.slug,
        app.ticket.clone().unwrap_or_default()
    );
    let host_search = leptos_router::hooks::use_location().search.get_untracked();
    let src = format!(
        "{base}?{}",
        crate::apps::location::frame_query(&uri, &host_search)
    );
    // The server-rendered page starts the frame's load at once (`frame_start`); a frame
    // drawn in the browser gets an empty script, which runs nothing.
    let start_script = if cfg!(feature = "ssr") {
        crate::apps::frame_start::SCRIPT
    } else {
        ""
    };
    let frame: NodeRef<Iframe> = NodeRef::new();
    let phase = RwSignal::new(Phase::Loading);
    let host = HostView::new();
    // The host's controls reach the bridge through these (it exists once hydrated).
    #[cfg(feature = "hydrate")]
    let held: StoredValue<Option<crate::apps::bridge::Bridge>, LocalStorage> =
        StoredValue::new_local(None);
    let with_bridge = move |act: &dyn Fn(&dyn BridgeControls)| {
        #[cfg(feature = "hydrate")]
        held.with_value(|bridge| {
            if let Some(bridge) = bridge {
                act(bridge);
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = act;
    };
    let decide = Callback::new(move |(id, choice): (u64, Choice)| {
        with_bridge(&|b| b.decide(id, choice));
    });
    let press = Callback::new(move |index: usize| with_bridge(&|b| b.press(index)));
    let leave_fullscreen = move |_| with_bridge(&|b| b.set_display_mode(DisplayMode::Inline));
    #[cfg(not(feature = "hydrate"))]
    let _ = (&opening, &handle);
    #[cfg(feature = "hydrate")]
    {
        use crate::apps::bridge::{self, AppIdentity, Event};
        let opening_tool = app.declaring_tool.clone();
        let opening = match opening {
            Opening::Call if app.opens_with_call && opening_tool.is_some() => {
                bridge::Opening::Call(opening_tool.clone().unwrap_or_default())
            }
            Opening::Given { arguments, result } => bridge::Opening::Given { arguments, result },
            _ => bridge::Opening::Nothing,
        };
        let (slug, uri) = (app.slug.clone(), uri.clone());
        let (server_name, link_hosts) = (app.display_name.clone(), app.link_hosts.clone());
        let src_with_hash = {
            let hash = web_sys::window()
                .and_then(|w| w.location().hash().ok())
                .unwrap_or_default();
            format!("{src}{hash}")
        };
        let navigate = leptos_router::hooks::use_navigate();
        Effect::new(move || {
            let Some(element) = frame.get() else { return };
            // The bridge listens before the frame's document exists, or takes over what the
            // page's script kept, so the page's first message (`ui/initialize`) cannot be
            // missed.
            let identity = AppIdentity {
                slug: slug.clone(),
                server_name: server_name.clone(),
                uri: uri.clone(),
                link_hosts: link_hosts.clone(),
            };
            let bridge = bridge::start(
                element.clone(),
                identity,
                host,
                opening.clone(),
                move |event| match event {
                    Event::Loaded => {
                        phase.set(Phase::Starting);
                        // An app that never answers is said so, not left as a blank box.
                        set_timeout(
                            move || {
                                if phase.get_untracked() == Phase::Starting {
                                    phase.set(Phase::Silent);
                                }
                            },
                            std::time::Duration::from_secs(10),
                        );
                    }
                    Event::Initialized => phase.set(Phase::Running),
                    Event::OpeningCall { tool } => phase.set(Phase::Opening(tool)),
                    Event::OpeningDone => phase.set(Phase::Running),
                    Event::OpeningFailed { reason } => phase.set(Phase::OpeningFailed(reason)),
                    Event::Closed { why } => phase.set(Phase::Closed(why)),
                },
            );
            // Drawn in the browser, the document loads only now, with the bridge listening.
            if !bridge.started_early() {
                element.set_src(&src_with_hash);
            }
            let _ = element.focus();
            if let Some(handle) = &handle {
                handle.hold(bridge.clone());
            }
            held.set_value(Some(bridge.clone()));
            leave_through_teardown(bridge, navigate.clone());
        });
    }
    let digest = app.digest.clone().unwrap_or_default();
    let fullscreen_title = format!("{} — full screen", app.display_name);
    view! {
        <div class="app-bar" role="region" aria-label="App">
            <span>"App " <code>{uri.clone()}</code></span>
            <span title=digest.clone()>"Pinned " <code class="digest">{digest.chars().take(12).collect::<String>()}</code></span>
            {app.differs.then(|| view! {
                <span class="notice" role="status">"The server's copy differs from your pinned copy."</span>
                <RefreshPin app=app.clone() />
            })}
        </div>
        <noscript><p class="notice">"Apps need JavaScript: the console relays their messages."</p></noscript>
        <AppStatusLine phase />
        <ApprovalPanel view=host decide />
        <div
            class="app-area"
            data-display-mode=move || host.display_mode.get().as_str()
            prop:inert=move || host.prompts.with(|p| !p.is_empty())
        >
            {move || (host.display_mode.get() == DisplayMode::Fullscreen).then(|| view! {
                <div class="app-fullscreen-bar">
                    <span>{fullscreen_title.clone()}</span>
                    <button type="button" on:click=leave_fullscreen>"Exit full screen"</button>
                </div>
            })}
            <iframe
                node_ref=frame
                class="app-frame"
                title=format!("{} app", app.display_name)
                data-src=src
                sandbox="allow-scripts allow-popups allow-popups-to-escape-sandbox"
                referrerpolicy="no-referrer"
            ></iframe>
            <script nonce=leptos::nonce::use_nonce() inner_html=start_script></script>
        </div>
        <IslandActions view=host server=app.display_name.clone() press />
        <AppInspect view=host />
    }
}

/// What the host's own controls ask of the bridge.
trait BridgeControls {
    fn decide(&self, id: u64, choice: Choice);
    fn press(&self, index: usize);
    fn set_display_mode(&self, mode: DisplayMode);
}

#[cfg(feature = "hydrate")]
impl BridgeControls for crate::apps::bridge::Bridge {
    fn decide(&self, id: u64, choice: Choice) {
        crate::apps::bridge::Bridge::decide(self, id, choice);
    }
    fn press(&self, index: usize) {
        crate::apps::bridge::Bridge::press(self, index);
    }
    fn set_display_mode(&self, mode: DisplayMode) {
        crate::apps::bridge::Bridge::set_display_mode(self, mode);
    }
}

/// The frame is removed only after `ui/resource-teardown`: a console link clicked while the
/// app runs waits for the app's answer (briefly) before the router moves on; when the page
/// itself goes away (Back, a closed tab) the request is sent without waiting.
#[cfg(feature = "hydrate")]
fn leave_through_teardown(
    bridge: crate::apps::bridge::Bridge,
    navigate: impl Fn(&str, leptos_router::NavigateOptions) + Clone + 'static,
) {
    use leptos::wasm_bindgen::JsCast;
    use leptos::wasm_bindgen::prelude::Closure;
    use send_wrapper::SendWrapper;

    let Some(window) = web_sys::window() else {
        return;
    };
    let on_click_bridge = bridge.clone();
    let on_click =
        Closure::<dyn FnMut(web_sys::MouseEvent)>::new(move |ev: web_sys::MouseEvent| {
            if !on_click_bridge.is_open()
                || ev.default_prevented()
                || ev.button() != 0
                || ev.meta_key()
                || ev.alt_key()
                || ev.ctrl_key()
                || ev.shift_key()
            {
                return;
            }
            let Some(anchor) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|e| e.closest("a[href]").ok().flatten())
                .and_then(|e| e.dyn_into::<web_sys::HtmlAnchorElement>().ok())
            else {
                return;
            };
            let same_origin = web_sys::window()
                .and_then(|w| w.location().origin().ok())
                .is_some_and(|origin| origin == anchor.origin());
            if !same_origin || !anchor.target().is_empty() || anchor.has_attribute("download") {
                return;
            }
            ev.prevent_default();
            let to = format!("{}{}{}", anchor.pathname(), anchor.search(), anchor.hash());
            let (bridge, navigate) = (on_click_bridge.clone(), navigate.clone());
            wasm_bindgen_futures::spawn_local(async move {
                bridge.teardown("the person left the app").await;
                navigate(&to, Default::default());
            });
        });
    let on_hide_bridge = bridge.clone();
    let on_hide = Closure::<dyn FnMut()>::new(move || {
        on_hide_bridge.teardown_now("the page was closed");
    });
    let _ = window.add_event_listener_with_callback_and_bool(
        "click",
        on_click.as_ref().unchecked_ref(),
        true,
    );
    let _ = window.add_event_listener_with_callback("pagehide", on_hide.as_ref().unchecked_ref());
    let held = SendWrapper::new((window, on_click, on_hide, bridge));
    on_cleanup(move || {
        let (window, on_click, on_hide, bridge) = held.take();
        let _ = window.remove_event_listener_with_callback_and_bool(
            "click",
            on_click.as_ref().unchecked_ref(),
            true,
        );
        let _ = window
            .remove_event_listener_with_callback("pagehide", on_hide.as_ref().unchecked_ref());
        // Still open here: the route changed without a click (Back, Forward).
        bridge.teardown_now("the person left the app");
    });
}
