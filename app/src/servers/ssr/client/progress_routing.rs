//! A call's progress routed to its caller in the order the server sent it, and a call
//! dropped before its answer cancelled upstream.

use rmcp::model::{
    CancelledNotificationParam, ClientJsonRpcMessage, GetExtensions, GetMeta, JsonRpcMessage,
    ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use rmcp::{Peer, RoleClient};

use std::sync::Arc;

use super::{ProgressRoutes, ProgressSink, lock};

/// Where one request's progress goes, carried in its extensions (never sent). The routing
/// transport takes the sink out as the request leaves, so no copy of the message keeps it.
#[derive(Clone)]
pub(super) struct RouteProgress(pub(super) Arc<std::sync::Mutex<Option<ProgressSink>>>);

/// A connection's transport, which routes progress in the order the server sent it: a
/// call's sink is registered as its request leaves, and each progress notification reaches
/// its sink as it is read, before the answer read after it. (rmcp hands notifications to
/// the handler on tasks of their own, which may run after the answer was delivered.)
pub(super) struct Routed<T> {
    pub(super) inner: T,
    pub(super) routes: ProgressRoutes,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let Some(RouteProgress(sink)) = request.request.extensions().get::<RouteProgress>()
            && let Some(sink) = lock(sink).take()
            && let Some(token) = request.request.get_meta().get_progress_token()
        {
            lock(&self.routes).insert(token, sink);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
            && let Some(sink) = lock(&self.routes).get(&progress.params.progress_token)
        {
            let _ = sink.send(progress.params.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// One `tools/call` in flight upstream: while it lives its progress is routed to its sink;
/// dropped before the answer came (the caller cancelled, or the timeout struck), it tells
/// the server the request is cancelled.
pub(super) struct InFlight {
    pub(super) peer: Peer<RoleClient>,
    pub(super) id: Option<RequestId>,
    pub(super) routes: ProgressRoutes,
    pub(super) token: ProgressToken,
}

impl InFlight {
    pub(super) fn answered(mut self) {
        self.id = None;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.token);
        // (Outside a runtime, as when one shuts down, there is nobody left to tell.)
        if let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) {
            let peer = self.peer.clone();
            let cancelled = CancelledNotificationParam::new(
                Some(id),
                Some("the caller cancelled the request".into()),
            );
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(cancelled).await;
            });
        }
    }
}
