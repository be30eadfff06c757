use leptos::prelude::*;

/// Auditors and admins: the audit log.
#[component]
pub fn AuditPage() -> impl IntoView {
    view! { <h1>"Audit log"</h1> }
}
