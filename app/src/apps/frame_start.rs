//! The app page's first paint starts the frame's load without waiting for the console's
//! WebAssembly, or for its stylesheet: the server-rendered page carries two small inline
//! scripts (allowed by the response's CSP nonce) that keep every load event of the frame and
//! every message whose source is the frame's window, then request the frame's document.
//! Once hydrated, the bridge takes what was kept and handles it first, in order, under its
//! own rules (origin `"null"`, one document per frame), so an app's `ui/initialize` sent
//! before hydration is answered (SPEC §6 "Bridge").
//!
//! The first script ([`head_script`]) sits in `<head>` above the stylesheet, which a script
//! below it would wait for: where the browser can move a frame without reloading it
//! (`moveBefore`), it makes the frame there, hidden, and starts its load at once. The second
//! ([`SCRIPT`]), right after the page's own frame element, moves that early frame into the
//! element's place, with the element's attributes, and removes the element; the hydrated
//! page then finds the early frame where it drew its own. Where the browser cannot move a
//! frame, the second script starts the page's own frame instead.
//!
//! Either way the script sets the frame's `src` itself (the frame URL plus the host's
//! `#hash`), so nothing can arrive before it listens, and the app's first document sees the
//! hash the address bar holds (SPEC §6 "Location"), which the server never sees.

/// The frame's sandbox: scripts and popups (which escape it, so a link opens a normal tab),
/// nothing else — no same origin, no forms, no top navigation.
pub const SANDBOX: &str = "allow-scripts allow-popups allow-popups-to-escape-sandbox";

/// The property of the frame element holding the function that hands over what was kept
/// (an array of `"load"` and `MessageEvent`s) and stops keeping.
pub const TAKE_EARLY: &str = "stradTakeEarly";

/// Defines `keep(frame)`, which keeps the frame's load events and messages until
/// `frame.stradTakeEarly()` hands them over.
macro_rules! keep_js {
    () => {
        "const keep = (frame) => {
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
  };"
    };
}

/// The inline script placed immediately after the frame element.
pub const SCRIPT: &str = concat!(
    "(() => {
  const frame = document.currentScript.previousElementSibling;
  const early = document.documentElement.stradEarlyFrames?.get(frame.dataset.src);
  if (early) {
    document.documentElement.stradEarlyFrames.delete(frame.dataset.src);
    early.removeAttribute('style');
    for (const { name, value } of frame.attributes) {
      if (early.getAttribute(name) !== value) early.setAttribute(name, value);
    }
    frame.parentNode.moveBefore(early, frame);
    frame.remove();
    return;
  }
  ",
    keep_js!(),
    "
  keep(frame);
  frame.src = frame.dataset.src + location.hash;
})();"
);

/// The inline script for `<head>` that starts the load of the frame for `src` (the frame
/// element's `data-src`) before the stylesheet has loaded, where the browser can later move
/// the frame into place without reloading it.
pub fn head_script(src: &str) -> String {
    // A JSON string is a JavaScript string literal; `<` escaped, nothing in it can end the
    // script element.
    let literal = |s: &str| {
        serde_json::Value::from(s)
            .to_string()
            .replace('<', "\\u003c")
    };
    [
        "(() => {
  if (!('moveBefore' in Element.prototype)) return;
  ",
        keep_js!(),
        "
  const src = ",
        &literal(src),
        ";
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', ",
        &literal(SANDBOX),
        ");
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.style.position = 'absolute';
  frame.style.visibility = 'hidden';
  frame.src = src + location.hash;
  document.documentElement.append(frame);
  keep(frame);
  const root = document.documentElement;
  (root.stradEarlyFrames ??= new Map()).set(src, frame);
})();",
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_keep_what_arrives_from_the_moment_the_frame_can_load() {
        for script in [SCRIPT.to_string(), head_script("https://x/f")] {
            assert!(script.contains(&format!("frame.{TAKE_EARLY} = ")));
            // Nothing in it can end the script element early in the page.
            assert!(!script.contains("</"));
        }
        // The page's own frame: kept, then started.
        assert!(SCRIPT.find("keep(frame);").unwrap() < SCRIPT.find("frame.src = ").unwrap());
        // The early frame: kept in the same task that attaches it (nothing it loads or sends
        // is delivered before that task ends), and not before, so the empty document a frame
        // may report as it is attached is not taken for the app's.
        let early = head_script("https://x/f");
        let attached = early
            .find("document.documentElement.append(frame);")
            .unwrap();
        assert!(
            early[attached..]
                .starts_with("document.documentElement.append(frame);\n  keep(frame);")
        );
    }

    #[test]
    fn the_early_frame_is_sandboxed_before_it_loads_and_its_url_cannot_end_the_script() {
        let script = head_script("https://a/</script><script>alert(1)//\"'");
        assert!(!script.contains("</"));
        assert!(
            script.contains(r#"const src = "https://a/\u003c/script>\u003cscript>alert(1)//\"'";"#)
        );
        let sandboxed = script
            .find(&format!("frame.setAttribute('sandbox', \"{SANDBOX}\")"))
            .unwrap();
        let no_referrer = script.find("'referrerpolicy', 'no-referrer'").unwrap();
        let starts = script.find("frame.src = ").unwrap();
        let attached = script
            .find("document.documentElement.append(frame)")
            .unwrap();
        assert!(sandboxed < starts && no_referrer < starts && starts < attached);
    }
}
