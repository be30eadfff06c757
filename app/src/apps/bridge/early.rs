//! What the server-rendered page's keeper (`frame_start::KEEPER`) kept before the bridge
//! existed: handed over once, and handled first, in the order it happened, by the same code
//! as what arrives later.

use leptos::wasm_bindgen::{JsCast, JsValue};
use web_sys::MessageEvent;

use super::super::frame_start::TAKE_EARLY;
use super::{Shared, dispatch, loaded};

/// Stops the page's keeper, if it still keeps, and replays what it kept. True when the
/// frame's document was started by the server-rendered page (the frame has its `src`);
/// false when it was not (drawn in the browser, or emptied for a `#hash`): the frame has
/// not started loading.
pub(super) fn replay(session: &Shared) -> bool {
    let frame = session.borrow().frame.clone();
    let window: Option<JsValue> = web_sys::window().map(Into::into);
    let take = window.as_ref().and_then(|window| {
        js_sys::Reflect::get(window, &TAKE_EARLY.into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
    });
    if let (Some(window), Some(take)) = (window, take)
        && let Ok(kept) = take.call0(&window)
    {
        for item in js_sys::Array::from(&kept).iter() {
            if item.as_string().as_deref() == Some("load") {
                loaded(session);
            } else if let Ok(event) = item.dyn_into::<MessageEvent>() {
                dispatch::receive(session, event);
            }
        }
    }
    frame.has_attribute("src")
}
