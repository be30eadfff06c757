#![recursion_limit = "512"]
#![forbid(unsafe_code)]
//! The hydrate crate: compiled to wasm by cargo-leptos, it takes over the server-rendered
//! console in the browser. Nothing here runs on the server.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Asynchronous hydration: a lazy route's code (every page but the app page) is chunks
    // loaded before its part of the document hydrates.
    leptos::mount::hydrate_lazy(app::App);
}
