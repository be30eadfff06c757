//! The console's own Content-Security-Policy: scripts only from the console's origin or
//! carrying this response's nonce (Leptos puts it on its hydration script), WebAssembly
//! compiled by those scripts, no plugins, no framing of the console, and frames only of app
//! frames (`/apps/`; the app page narrows that to its own slug's). The frame route has its
//! own policy (`apps::ssr::csp`).

/// The policy for a console page whose response carries `nonce` and which may frame what is
/// under `frame_src` (an origin and a path prefix).
pub fn console_policy(nonce: &str, frame_src: &str) -> String {
    let nonce: String = nonce
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_'))
        .collect();
    let frames: String = frame_src
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, ';' | ',' | '\''))
        .collect();
    format!(
        "script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; frame-src {frames}; \
         frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'"
    )
}

/// Puts the console policy on the current server-rendered response (nothing in the
/// browser); the page may frame what is under `frame_path` (default `/apps/`).
pub fn set_console_policy(frame_path: Option<String>) {
    #[cfg(feature = "ssr")]
    if let (Some(options), Some(nonce), Ok(state)) = (
        leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
        leptos::nonce::use_nonce(),
        crate::state::AppState::from_context(),
    ) {
        let frames = format!(
            "{}{}",
            state.frame_origin(),
            frame_path.as_deref().unwrap_or("/apps/")
        );
        let policy = console_policy(&nonce.to_string(), &frames);
        if let Ok(value) = http::HeaderValue::from_str(&policy) {
            options.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
        }
    }
    #[cfg(not(feature = "ssr"))]
    let _ = frame_path;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_need_the_origin_or_the_nonce_and_nothing_frames_the_console() {
        let policy = console_policy("abc+/=", "https://s.example/apps/");
        assert_eq!(
            policy,
            "script-src 'self' 'nonce-abc+/=' 'wasm-unsafe-eval'; frame-src https://s.example/apps/; \
             frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'"
        );
        for forbidden in ["unsafe-inline", "'unsafe-eval'", "*", "data:"] {
            assert!(!policy.contains(forbidden), "{forbidden}");
        }
    }

    #[test]
    fn the_app_page_frames_one_path_and_a_nonce_cannot_add_a_directive() {
        let policy = console_policy("x'; script-src *", "https://s.example/apps/clock/frame/");
        assert!(policy.contains("frame-src https://s.example/apps/clock/frame/;"));
        assert!(policy.contains("'nonce-xscript-src'"), "{policy}");
        assert_eq!(policy.matches(';').count(), 5);
        let policy = console_policy("x", "https://s.example/a; script-src 'unsafe-inline'");
        assert!(policy.contains("frame-src https://s.example/ascript-srcunsafe-inline;"));
        assert_eq!(policy.matches(';').count(), 5);
    }
}
