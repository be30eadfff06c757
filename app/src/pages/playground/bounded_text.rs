//! Result text shown up to a bound, with how much was left out.

use leptos::prelude::*;

/// The most text shown from one result part; the rest is counted, not shown.
const SHOWN_BYTES: usize = 64 * 1024;

/// `text`, cut at the display bound, with how much was left out.
fn bounded(text: &str) -> (String, Option<usize>) {
    if text.len() <= SHOWN_BYTES {
        return (text.to_owned(), None);
    }
    let mut cut = SHOWN_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (text[..cut].to_owned(), Some(text.len() - cut))
}

#[component]
pub(super) fn Bounded(text: String) -> impl IntoView {
    let (shown, left) = bounded(&text);
    view! {
        <pre class="result-text">{shown}</pre>
        {left.map(|n| view! { <p class="help">{format!("… {n} more bytes not shown.")}</p> })}
    }
}
