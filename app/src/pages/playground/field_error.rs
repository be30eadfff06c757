//! A form field's validation message.

use leptos::prelude::*;

use super::id_part;
use crate::playground::schema_form::Problem;

/// The message for the field at `pointer`, if validation found one.
#[component]
pub(super) fn FieldError(problems: RwSignal<Vec<Problem>>, pointer: String) -> impl IntoView {
    let id = format!("error-{}", id_part(&pointer));
    move || {
        problems.with(|found| {
            found
                .iter()
                .find(|p| p.path == pointer)
                .map(|p| view! { <p class="field-error" id=id.clone() role="alert">{p.message.clone()}</p> })
        })
    }
}
