#![recursion_limit = "512"]
//! The hydrate crate: compiled to wasm by cargo-leptos, it takes over the server-rendered
//! console in the browser. Nothing here runs on the server.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
