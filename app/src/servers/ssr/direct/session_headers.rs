//! The headers of the session rmcp opened, and whether a direct call may use them.

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};

use super::super::client::write;
use super::{PROTOCOL_VERSION, SESSION_ID};

/// The protocol versions whose requests carry nothing but the session id and the version.
const PLAIN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The headers of the session rmcp's transport opened, as its latest request carried them.
#[derive(Clone, Default)]
pub struct Negotiated(Arc<std::sync::RwLock<Option<Arc<SessionHeaders>>>>);

#[derive(Debug, PartialEq, Eq)]
pub struct SessionHeaders {
    pub(super) session: Option<HeaderValue>,
    version: Option<HeaderValue>,
}

impl Negotiated {
    /// Records what one of rmcp's POSTs carried (every POST passes here as it leaves).
    pub(in crate::servers::ssr) fn saw(
        &self,
        message: &ClientJsonRpcMessage,
        session: Option<&str>,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) {
        if let JsonRpcMessage::Request(request) = message
            && matches!(request.request, ClientRequest::InitializeRequest(_))
        {
            return;
        }
        let seen = plain(session, headers).map(Arc::new);
        let mut current = write(&self.0);
        if current.as_deref() != seen.as_deref() {
            *current = seen;
        }
    }

    pub(super) fn current(&self) -> Option<Arc<SessionHeaders>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Forgets `stale` (the server no longer knows it), unless rmcp has moved on already.
    pub(super) fn forget(&self, stale: &Arc<SessionHeaders>) {
        let mut current = write(&self.0);
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, stale)) {
            *current = None;
        }
    }
}

/// The session's headers, when they are all a direct call needs to send.
fn plain(
    session: Option<&str>,
    headers: &HashMap<HeaderName, HeaderValue>,
) -> Option<SessionHeaders> {
    if headers.keys().any(|name| *name != PROTOCOL_VERSION) {
        return None;
    }
    let version = headers.get(&PROTOCOL_VERSION).cloned();
    if let Some(version) = &version
        && !PLAIN_VERSIONS.iter().any(|plain| version == plain)
    {
        return None;
    }
    let session = match session {
        Some(id) => Some(HeaderValue::from_str(id).ok()?),
        None => None,
    };
    Some(SessionHeaders { session, version })
}

pub(super) fn session_headers(session: &SessionHeaders) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(id) = &session.session {
        headers.insert(SESSION_ID, id.clone());
    }
    if let Some(version) = &session.version {
        headers.insert(PROTOCOL_VERSION, version.clone());
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HashMap<HeaderName, HeaderValue> {
        pairs
            .iter()
            .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn only_a_session_of_plain_headers_is_called_directly() {
        let plain_one = plain(
            Some("abc"),
            &headers(&[("mcp-protocol-version", "2025-06-18")]),
        )
        .unwrap();
        assert_eq!(plain_one.session.unwrap(), "abc");
        assert_eq!(plain_one.version.unwrap(), "2025-06-18");
        assert!(
            plain(None, &HashMap::new()).is_some(),
            "no session, no version"
        );
        assert!(
            plain(
                Some("abc"),
                &headers(&[("mcp-protocol-version", "2026-07-28")])
            )
            .is_none(),
            "a version with standard headers"
        );
        assert!(
            plain(
                Some("abc"),
                &headers(&[
                    ("mcp-protocol-version", "2025-06-18"),
                    ("mcp-method", "tools/call")
                ])
            )
            .is_none(),
            "any other header"
        );
        assert!(
            plain(
                Some("bad\u{7f}"),
                &headers(&[("mcp-protocol-version", "2025-06-18")])
            )
            .is_none()
        );
    }
}
