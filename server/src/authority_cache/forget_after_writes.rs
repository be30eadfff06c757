//! This strad's own writes forget everything before their answer is sent.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

use super::Memos;

/// Paths whose requests write no row authority is read from: the busy ones, and what a
/// running app posts as often as it likes (its log lines, its downloads), which would
/// otherwise make this instance forget every person's authority each time.
fn writes_no_authority(path: &str) -> bool {
    path == "/mcp"
        || path.starts_with("/mcp/")
        || (path.starts_with("/apps/")
            && (path.ends_with("/tools/call")
                || path.ends_with("/resources/read")
                || path.ends_with("/opening-call")
                || path.ends_with("/log")
                || path.ends_with("/download")))
        || (path.starts_with("/servers/") && path.ends_with("/tools/call"))
}

/// Forgets everything once a request that may have changed authority has been answered
/// by the handler, before the answer leaves: any method but GET, HEAD and OPTIONS, and
/// sign-in (a GET that writes the person). The busy routes write only audit rows.
pub async fn forget_after_writes(
    State(memos): State<Arc<Memos>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let may_write = (!matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) && !writes_no_authority(path))
        || path.starts_with("/auth/");
    let response = next.run(request).await;
    if may_write {
        memos.forget_all();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::writes_no_authority;

    #[test]
    fn only_the_busy_routes_and_an_apps_own_posts_keep_what_is_remembered() {
        for keeps in [
            "/mcp",
            "/mcp/x",
            "/apps/clock/tools/call",
            "/apps/clock/resources/read",
            "/apps/clock/opening-call",
            "/apps/clock/log",
            "/apps/clock/download",
            "/servers/clock/tools/call",
        ] {
            assert!(writes_no_authority(keeps), "{keeps}");
        }
        for forgets in [
            "/apps/clock/approvals",
            "/apps/clock/host-actions",
            "/api/entitlements/grant",
            "/api/apps/open",
            "/auth/sign-out",
            "/servers/clock/refresh",
            "/log",
            "/x/apps/clock/log",
        ] {
            assert!(!writes_no_authority(forgets), "{forgets}");
        }
    }
}
