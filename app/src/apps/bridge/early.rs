//! What the server-rendered page's script kept before the bridge existed (`frame_start`):
//! handed over once, and handled first, in the order it happened, by the same code as what
//! arrives later.

use leptos::wasm_bindgen::{JsCast, JsValue};
use web_sys::MessageEvent;

use super::super::frame_start::TAKE_EARLY;
use super::{Shared, dispatch, loaded};

/// Takes over from the page's script, if it ran for this frame, and replays what it kept.
/// False when it did not (the frame was drawn in the browser): the frame has not started
/// loading.
pub(super) fn replay(session: &Shared) -> bool {
    let frame: JsValue = session.borrow().frame.clone().into();
    let Some(take) = js_sys::Reflect::get(&frame, &TAKE_EARLY.into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
    else {
        return false;
    };
    let Ok(kept) = take.call0(&frame) else {
        return true;
    };
    for item in js_sys::Array::from(&kept).iter() {
        if item.as_string().as_deref() == Some("load") {
            loaded(session);
        } else if let Ok(event) = item.dyn_into::<MessageEvent>() {
            dispatch::receive(session, event);
        }
    }
    true
}
