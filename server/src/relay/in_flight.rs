//! The requests a client session has in flight, by JSON-RPC id: whether strad answers them
//! itself (`fast.rs`) or rmcp's session worker does.
//!
//! A client that reuses the id of a request still in flight is misusing the protocol, and
//! rmcp cannot tell the two requests apart: it routes the first answer to the later request's
//! stream and drops the other, so one of them never gets an answer. Such a request is
//! answered at once with an error instead (`Sessions::create_stream`), whatever its method,
//! and the one in flight goes on undisturbed. An id is free again once its request is
//! answered or cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, RequestId, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::oneshot;

/// The answer to a request whose id is in flight: JSON-RPC's "invalid request".
pub fn already_in_flight(id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        rmcp::ErrorData::invalid_request(
            "a request with this id is already in flight under this Mcp-Session-Id",
            None,
        ),
        Some(id),
    )
}

/// One session's requests in flight.
#[derive(Default)]
pub struct InFlight(Mutex<HashMap<RequestId, Runner>>);

/// Who answers a request in flight.
enum Runner {
    /// strad itself; sending cancels the call.
    Here(oneshot::Sender<()>),
    /// rmcp's session worker.
    Session,
}

impl InFlight {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Runner>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a call strad answers itself under `id`; `None` when `id` is in flight.
    pub fn start_here(self: &Arc<Self>, id: RequestId) -> Option<Running> {
        let (cancel, cancelled) = oneshot::channel();
        let mut ids = self.ids();
        if ids.contains_key(&id) {
            return None;
        }
        ids.insert(id.clone(), Runner::Here(cancel));
        Some(Running {
            in_flight: self.clone(),
            id,
            cancelled,
        })
    }

    /// Registers a request going to rmcp's session worker; false when `id` is in flight.
    pub fn start_in_session(&self, id: RequestId) -> bool {
        let mut ids = self.ids();
        if ids.contains_key(&id) {
            return false;
        }
        ids.insert(id, Runner::Session);
        true
    }

    /// The session worker has answered `id`, or will not (the client cancelled it).
    pub fn end_in_session(&self, id: &RequestId) {
        let mut ids = self.ids();
        if matches!(ids.get(id), Some(Runner::Session)) {
            ids.remove(id);
        }
    }

    /// Cancels the call `id` strad answers itself; false when there is none (a request of
    /// the session worker's is cancelled by the worker).
    pub fn cancel(&self, id: &RequestId) -> bool {
        let mut ids = self.ids();
        if !matches!(ids.get(id), Some(Runner::Here(_))) {
            return false;
        }
        if let Some(Runner::Here(cancel)) = ids.remove(id) {
            let _ = cancel.send(());
        }
        true
    }

    /// Cancels every call strad answers itself (the session has ended).
    pub fn cancel_all(&self) {
        for (_, runner) in self.ids().drain() {
            if let Runner::Here(cancel) = runner {
                let _ = cancel.send(());
            }
        }
    }

    /// Notes what the client sends without an answer: a cancellation frees its id.
    pub fn heard(&self, message: &ClientJsonRpcMessage) {
        if let ClientJsonRpcMessage::Notification(note) = message
            && let ClientNotification::CancelledNotification(cancelled) = &note.notification
            && let Some(id) = &cancelled.params.request_id
        {
            self.end_in_session(id);
        }
    }
}

/// A call strad is answering itself; its id is free again when this is dropped.
pub struct Running {
    in_flight: Arc<InFlight>,
    id: RequestId,
    /// Resolves when the client cancels the call.
    pub cancelled: oneshot::Receiver<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut ids = self.in_flight.ids();
        if matches!(ids.get(&self.id), Some(Runner::Here(_))) {
            ids.remove(&self.id);
        }
    }
}

/// rmcp's transport of one session, which frees a request's id as its answer leaves (before
/// the client can read it, so the client may reuse the id as soon as it has the answer).
pub struct Answering<T> {
    pub inner: T,
    pub in_flight: Arc<InFlight>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Answering<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        if let Some(id) = answered {
            self.in_flight.end_in_session(id);
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[tokio::test]
    async fn an_id_is_in_flight_once_whoever_answers_it() {
        let in_flight = Arc::new(InFlight::default());
        let call = NumberOrString::Number(7);
        let mut running = in_flight.start_here(call.clone()).unwrap();
        assert!(in_flight.start_here(call.clone()).is_none());
        assert!(!in_flight.start_in_session(call.clone()));
        assert!(
            !in_flight.cancel(&NumberOrString::Number(8)),
            "no such call"
        );
        assert!(in_flight.cancel(&call));
        assert!((&mut running.cancelled).await.is_ok());
        drop(running);

        assert!(
            in_flight.start_in_session(call.clone()),
            "the id is free again"
        );
        assert!(in_flight.start_here(call.clone()).is_none());
        assert!(
            !in_flight.cancel(&call),
            "the session worker cancels its own"
        );
        in_flight.end_in_session(&call);
        let mut again = in_flight
            .start_here(call.clone())
            .expect("free once answered");
        in_flight.end_in_session(&call);
        assert!(
            !in_flight.start_in_session(call),
            "not the worker's to free"
        );
        in_flight.cancel_all();
        assert!((&mut again.cancelled).await.is_ok());
    }
}
