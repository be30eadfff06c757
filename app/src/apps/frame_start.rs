//! The app page's frame starts loading as the browser parses the page, without waiting for
//! the console's stylesheet or WebAssembly: the server renders the frame with its `src`
//! (the frame route, with this load's ticket). Two small inline scripts, allowed by the
//! response's CSP nonce, keep that safe:
//!
//! - `KEEPER`, in every page's `<head>` before the stylesheet (so nothing delays it), keeps
//!   every load event of a server-started app frame and every message whose source is that
//!   frame's window. Once hydrated, the bridge takes what was kept and handles it first, in
//!   order, under its own rules (origin `"null"`, one document per frame), so an app's
//!   `ui/initialize` sent before hydration is answered (SPEC §6 "Bridge"). A frame drawn in
//!   the browser has no `src` until its bridge listens, so nothing of it is kept.
//! - `HASH`, right after the frame: the server never sees the address bar's `#hash`, and
//!   the app's first document must (SPEC §6 "Location"). When there is one, the frame the
//!   server started is replaced by an empty one marked `REOPEN` (its load and anything kept
//!   are dropped, its ticket is left unused or spent), and the bridge loads the app with a
//!   new ticket and the hash. Without a hash it does nothing.

/// The window property holding the function that hands over what was kept (an array of
/// `"load"` and `MessageEvent`s) and stops keeping.
pub const TAKE_EARLY: &str = "stradTakeEarly";

/// The attribute `HASH` marks a replaced frame with: its ticket is not to be used.
pub const REOPEN: &str = "data-reopen";

/// The keeper, for the page's `<head>`, ahead of anything that could hold it up.
pub const KEEPER: &str = r#"(() => {
  const kept = [];
  const frame = () => document.querySelector('iframe.app-frame[src]');
  const onMessage = (event) => {
    const f = frame();
    if (f !== null && event.source !== null && event.source === f.contentWindow) kept.push(event);
  };
  const onLoad = (event) => {
    if (event.target === frame()) kept.push('load');
  };
  addEventListener('message', onMessage);
  document.addEventListener('load', onLoad, true);
  window.stradTakeEarly = () => {
    removeEventListener('message', onMessage);
    document.removeEventListener('load', onLoad, true);
    delete window.stradTakeEarly;
    return kept;
  };
})();"#;

/// Placed immediately after the server-rendered frame.
pub const HASH: &str = r#"(() => {
  const frame = document.currentScript.previousElementSibling;
  if (location.hash === '' || !frame.hasAttribute('src')) return;
  if (window.stradTakeEarly) window.stradTakeEarly();
  const empty = frame.cloneNode(false);
  empty.removeAttribute('src');
  empty.setAttribute('data-reopen', '');
  frame.replaceWith(empty);
})();"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keeper_hands_over_through_the_named_property() {
        assert!(KEEPER.contains(&format!("window.{TAKE_EARLY} = ")));
        assert!(KEEPER.contains(&format!("delete window.{TAKE_EARLY}")));
        assert!(HASH.contains(&format!("window.{TAKE_EARLY}()")));
    }

    #[test]
    fn only_a_frame_the_server_started_is_kept_or_replaced() {
        // A frame drawn in the browser has no `src` while it is empty: its initial
        // document's load is not the app's.
        assert!(KEEPER.contains("iframe.app-frame[src]"));
        assert!(HASH.contains("hasAttribute('src')"));
        // The replaced frame is marked, and drops what was kept for the one it replaces
        // before it exists (its own empty document fires a load event when inserted).
        assert!(HASH.contains(&format!("setAttribute('{REOPEN}', '')")));
        let dropped = HASH.find("stradTakeEarly()").unwrap();
        let replaced = HASH.find("replaceWith").unwrap();
        assert!(dropped < replaced);
    }

    #[test]
    fn nothing_in_them_can_end_the_script_element_early() {
        assert!(!KEEPER.contains("</"));
        assert!(!HASH.contains("</"));
    }
}
