//! Messages of the session sent in the background while a call runs: answers to the
//! server's requests, and the call's cancellation.

use std::sync::Arc;

use http::header;
use rmcp_reqwest as reqwest;
use serde_json::{Value, json};

use super::session_headers::{SessionHeaders, session_headers};
use super::{ACCEPT_BOTH, JSON};

/// Sends a message of the session's in the background (an answer to the server's request,
/// or a cancellation); a failure is the server's to notice, as with rmcp.
#[derive(Clone)]
pub(super) struct Poster {
    pub(super) client: reqwest::Client,
    pub(super) url: Arc<str>,
    pub(super) session: Arc<SessionHeaders>,
}

impl Poster {
    pub(super) fn send(&self, message: Value) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let request = self
            .client
            .post(self.url.as_ref())
            .headers(session_headers(&self.session))
            .header(header::ACCEPT, ACCEPT_BOTH)
            .header(header::CONTENT_TYPE, JSON)
            .body(message.to_string());
        runtime.spawn(async move {
            let _ = request.send().await;
        });
    }
}

/// A call sent and not yet answered: dropped so, it tells the server the call is cancelled.
pub(super) struct Pending {
    pub(super) post: Poster,
    pub(super) id: Option<String>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.post.send(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the caller cancelled the request"}}),
            );
        }
    }
}
