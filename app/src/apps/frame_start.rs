//! The app page's frame starts loading as the browser parses the page, without waiting for
//! the console's stylesheet or WebAssembly: the server renders the frame with its `src`
//! (the frame route, with this load's ticket). Two small inline scripts, allowed by the
//! response's CSP nonce, make that safe:
//!
//! - [`KEEPER`], in every page's `<head>` ahead of the stylesheet (which would hold an inline
//!   script up), keeps every load event and every message of the page's app frames until
//!   each frame's own script claims what is its; what nobody claimed is dropped when the
//!   page is parsed.
//! - The script right after each server-rendered frame ([`after_frame`]) claims what the
//!   keeper kept of its frame and keeps what follows, until the bridge, once hydrated,
//!   takes it all (the frame's [`TAKE_EARLY`] property) and handles it first, in order,
//!   under its own rules (origin `"null"`, one document per frame), so an app's
//!   `ui/initialize` sent before hydration is answered (SPEC §6 "Bridge").
//!
//! The server never sees the address bar's `#hash`, and the app's first document must
//! (SPEC §6 "Location"). When there is one, the script replaces the frame the server started
//! with an empty copy (the started load, its ticket and anything it sent are dropped), asks
//! the console for a new ticket (`/api/apps/open`, as the page's own open does) and loads
//! the copy with it and the hash. If the console refuses, or the pinned copy is no longer
//! the one the page shows, the page is loaded again without the hash: the server then
//! renders what is true now.
//!
//! Last, once the page is idle, the script constructs an `Intl.DateTimeFormat`: the bridge's
//! answer to `ui/initialize` reads the browser's time zone through one, and the first a page
//! constructs loads the locale's date data, 11-35 ms in a fresh Chromium page (later ones
//! take under 0.1 ms). Done here, while the page waits for its WebAssembly, the app does not
//! wait for it.

/// The property of the frame element holding the function that hands over what was kept
/// (an array of `"load"` and `MessageEvent`s) and stops keeping.
pub const TAKE_EARLY: &str = "stradTakeEarly";

/// The keeper, for every page's `<head>`.
pub const KEEPER: &str = r#"(() => {
  const kept = [];
  const claimed = new Set();
  const frames = () => [...document.querySelectorAll('iframe.app-frame')].filter((f) => !claimed.has(f));
  const onMessage = (event) => {
    const frame = frames().find((f) => event.source !== null && f.contentWindow === event.source);
    if (frame !== undefined) kept.push([frame, event]);
  };
  const onLoad = (event) => {
    if (frames().includes(event.target)) kept.push([event.target, 'load']);
  };
  const stop = () => {
    removeEventListener('message', onMessage);
    document.removeEventListener('load', onLoad, true);
    delete window.stradClaim;
    kept.length = 0;
  };
  addEventListener('message', onMessage);
  document.addEventListener('load', onLoad, true);
  document.addEventListener('DOMContentLoaded', stop, { once: true });
  window.stradClaim = (frame) => {
    claimed.add(frame);
    return kept.filter(([f]) => f === frame).map(([, item]) => item);
  };
})();"#;

/// What the script after a frame needs to load it again with a new ticket.
#[derive(serde::Serialize)]
pub struct Reopen<'a> {
    pub slug: &'a str,
    pub uri: &'a str,
    /// The pinned copy's digest the page shows: a new ticket for another is not used.
    pub digest: &'a str,
    /// The frame's address up to its ticket, and from its query on.
    pub before: &'a str,
    pub after: &'a str,
}

const AFTER_FRAME: &str = r#"(() => {
  const app = STRAD_APP;
  let frame = document.currentScript.previousElementSibling;
  const claim = (f) => (window.stradClaim ? window.stradClaim(f) : []);
  const kept = claim(frame);
  const hash = location.hash;
  if (hash !== '') {
    const empty = frame.cloneNode(false);
    empty.removeAttribute('src');
    frame.replaceWith(empty);
    frame = empty;
    claim(frame);
    kept.length = 0;
  }
  let taken = false;
  const onMessage = (event) => {
    if (event.source !== null && event.source === frame.contentWindow) kept.push(event);
  };
  const onLoad = () => kept.push('load');
  addEventListener('message', onMessage);
  frame.stradTakeEarly = () => {
    taken = true;
    removeEventListener('message', onMessage);
    frame.removeEventListener('load', onLoad);
    delete frame.stradTakeEarly;
    return kept;
  };
  if (hash === '') {
    frame.addEventListener('load', onLoad);
  } else {
    fetch('/api/apps/open', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ slug: app.slug, uri: app.uri }),
    })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then((opened) => {
        if (typeof opened.ticket !== 'string' || opened.digest !== app.digest) throw opened;
        if (!taken) frame.addEventListener('load', onLoad);
        frame.src = app.before + encodeURIComponent(opened.ticket) + app.after + hash;
      })
      .catch(() => location.replace(location.pathname + location.search));
  }
  const warm = () => new Intl.DateTimeFormat().resolvedOptions();
  if (window.requestIdleCallback) requestIdleCallback(warm, { timeout: 250 }); else setTimeout(warm, 0);
})();"#;

/// The script placed immediately after a server-rendered frame.
pub fn after_frame(reopen: &Reopen) -> String {
    let app = serde_json::to_string(reopen).unwrap_or_else(|_| "{}".into());
    // Nothing in the values can end the script element or open a comment in it.
    AFTER_FRAME.replace("STRAD_APP", &app.replace('<', "\\u003c"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script() -> String {
        after_frame(&Reopen {
            slug: "s",
            uri: "ui://x</script><!--",
            digest: "d",
            before: "http://localhost:1/apps/s/frame/",
            after: "?uri=ui%3A%2F%2Fx",
        })
    }

    #[test]
    fn the_frames_script_claims_and_listens_before_anything_can_start_a_load() {
        let script = script();
        assert!(script.contains(&format!("frame.{TAKE_EARLY} = ")));
        let claims = script.find("const kept = claim(frame)").unwrap();
        let listens = script.find("addEventListener('message'").unwrap();
        let reloads = script.find("frame.src = ").unwrap();
        assert!(claims < listens && listens < reloads);
        // The date data is loaded after the frame's request is on its way, and only when idle.
        let warms = script.find("requestIdleCallback(warm").unwrap();
        assert!(reloads < warms);
    }

    #[test]
    fn a_replaced_frame_keeps_nothing_of_the_one_it_replaces() {
        let script = script();
        let replaced = script.find("frame.replaceWith(empty)").unwrap();
        let dropped = script.find("kept.length = 0").unwrap();
        assert!(replaced < dropped);
        // Its own empty document's load is not the app's: heard only once it has a `src`.
        let loads = script
            .rfind("frame.addEventListener('load', onLoad)")
            .unwrap();
        assert!(loads > script.find("fetch(").unwrap());
    }

    #[test]
    fn nothing_in_them_can_end_the_script_element_early() {
        for text in [KEEPER.to_string(), script()] {
            assert!(!text.contains("</"), "{text}");
            assert!(!text.contains("<!--"), "{text}");
        }
        assert!(script().contains(r#""uri":"ui://x\u003c/script>\u003c!--""#));
    }
}
