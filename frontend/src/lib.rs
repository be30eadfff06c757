#![recursion_limit = "512"]
#![forbid(unsafe_code)]
//! The hydrate crate: compiled to wasm by cargo-leptos, it takes over the server-rendered
//! console in the browser. Nothing here runs on the server.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Asynchronous hydration: a page's code is a chunk loaded before its part of the
    // document hydrates (the console's routes are lazy).
    leptos::mount::hydrate_lazy(app::App);
}
