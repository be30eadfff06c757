use leptos::prelude::*;

/// The person's saved colour theme; absent means "follow the system".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Theme {
    Light,
    Dark,
}

/// Cookie holding the saved theme. Not a secret; readable by script on purpose.
pub const THEME_COOKIE: &str = "strad_theme";

impl Theme {
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    pub fn parse(value: &str) -> Option<Theme> {
        match value {
            "light" => Some(Theme::Light),
            "dark" => Some(Theme::Dark),
            _ => None,
        }
    }

    pub fn other(self) -> Theme {
        match self {
            Theme::Light => Theme::Dark,
            Theme::Dark => Theme::Light,
        }
    }

    /// Reads the theme from a `Cookie` header value; anything but light/dark is ignored.
    pub fn from_cookie_header(header: &str) -> Option<Theme> {
        header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == THEME_COOKIE)
            .and_then(|(_, value)| Theme::parse(value))
    }

    /// The theme of the request being rendered (server side only; `None` in the browser).
    pub fn from_request() -> Option<Theme> {
        #[cfg(feature = "ssr")]
        {
            let parts = use_context::<http::request::Parts>()?;
            let header = parts.headers.get(http::header::COOKIE)?.to_str().ok()?;
            Theme::from_cookie_header(header)
        }
        #[cfg(not(feature = "ssr"))]
        {
            None
        }
    }
}

/// A button that flips between light and dark and remembers the choice. It needs the
/// hydrated app; without script the console follows the system theme.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let (current, set_current) = signal(None::<Theme>);
    Effect::new(move || set_current.set(Some(theme_in_effect())));
    let label = move || match current.get() {
        Some(Theme::Dark) => "Switch to light theme",
        _ => "Switch to dark theme",
    };
    view! {
        <button
            type="button"
            class="theme-toggle"
            aria-label=label
            title=label
            disabled=move || current.get().is_none()
            on:click=move |_| {
                let next = theme_in_effect().other();
                apply_theme(next);
                set_current.set(Some(next));
            }
        >
            <span aria-hidden="true">"◐"</span>
        </button>
    }
}

fn theme_in_effect() -> Theme {
    let root = document().document_element();
    if let Some(theme) = root.and_then(|el| el.get_attribute("data-theme"))
        && let Some(theme) = Theme::parse(&theme)
    {
        return theme;
    }
    let prefers_dark = window()
        .match_media("(prefers-color-scheme: dark)")
        .ok()
        .flatten()
        .map(|query| query.matches())
        .unwrap_or(false);
    if prefers_dark {
        Theme::Dark
    } else {
        Theme::Light
    }
}

fn apply_theme(theme: Theme) {
    use leptos::wasm_bindgen::JsCast;
    if let Some(root) = document().document_element() {
        let _ = root.set_attribute("data-theme", theme.as_str());
    }
    if let Ok(doc) = document().dyn_into::<web_sys::HtmlDocument>() {
        let _ = doc.set_cookie(&format!(
            "{THEME_COOKIE}={}; Path=/; Max-Age=31536000; SameSite=Lax",
            theme.as_str()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_theme_cookie_is_found_among_others() {
        assert_eq!(
            Theme::from_cookie_header("a=1; strad_theme=dark; b=2"),
            Some(Theme::Dark)
        );
        assert_eq!(
            Theme::from_cookie_header("strad_theme=light"),
            Some(Theme::Light)
        );
    }

    #[test]
    fn an_unknown_theme_value_is_ignored() {
        assert_eq!(Theme::from_cookie_header("strad_theme=\"><script>"), None);
        assert_eq!(Theme::from_cookie_header("strad_theme=Dark"), None);
        assert_eq!(Theme::from_cookie_header("xstrad_theme=dark"), None);
        assert_eq!(Theme::from_cookie_header(""), None);
    }
}
