//! The app page's first paint starts the frame's load without waiting for the console's
//! WebAssembly: the server-rendered page carries, right after the frame, a small inline
//! script (allowed by the response's CSP nonce) that keeps every load event of the frame
//! and every message whose source is the frame's window, then requests the frame's
//! document. Once hydrated, the bridge takes what was kept and handles it first, in order,
//! under its own rules (origin `"null"`, one document per frame), so an app's
//! `ui/initialize` sent before hydration is answered (SPEC §6 "Bridge").
//!
//! The script sets the frame's `src` itself (its `data-src` plus the host's `#hash`), so
//! nothing can arrive before it listens, and the app's first document sees the hash the
//! address bar holds (SPEC §6 "Location"), which the server never sees.
//!
//! Then, once the page is idle, it constructs an `Intl.DateTimeFormat`: the bridge's answer
//! to `ui/initialize` reads the browser's time zone through one, and the first a page
//! constructs loads the locale's date data, 11-35 ms in a fresh Chromium page (later ones
//! take under 0.1 ms). Done here, while the page waits for its WebAssembly, the app does
//! not wait for it.

/// The property of the frame element holding the function that hands over what was kept
/// (an array of `"load"` and `MessageEvent`s) and stops keeping.
pub const TAKE_EARLY: &str = "stradTakeEarly";

/// The inline script, placed immediately after the frame.
pub const SCRIPT: &str = r#"(() => {
  const frame = document.currentScript.previousElementSibling;
  const kept = [];
  const onMessage = (event) => {
    if (event.source !== null && event.source === frame.contentWindow) kept.push(event);
  };
  const onLoad = () => kept.push('load');
  addEventListener('message', onMessage);
  frame.addEventListener('load', onLoad);
  frame.stradTakeEarly = () => {
    removeEventListener('message', onMessage);
    frame.removeEventListener('load', onLoad);
    delete frame.stradTakeEarly;
    return kept;
  };
  frame.src = frame.dataset.src + location.hash;
  const warm = () => new Intl.DateTimeFormat().resolvedOptions();
  if (window.requestIdleCallback) requestIdleCallback(warm, { timeout: 250 }); else setTimeout(warm, 0);
})();"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_listens_before_it_starts_the_frame_and_warms_up_after() {
        assert!(SCRIPT.contains(&format!("frame.{TAKE_EARLY} = ")));
        let listens = SCRIPT.find("addEventListener('message'").unwrap();
        let loads = SCRIPT.find("frame.addEventListener('load'").unwrap();
        let starts = SCRIPT.find("frame.src = ").unwrap();
        assert!(listens < starts && loads < starts);
        // The date data is loaded after the frame's request is on its way, and only when idle.
        let warms = SCRIPT.find("requestIdleCallback(warm").unwrap();
        assert!(starts < warms);
        // Nothing in it can end the script element early in the page.
        assert!(!SCRIPT.contains("</"));
    }
}
