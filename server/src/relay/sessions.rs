//! `/mcp`'s client sessions: rmcp's own session manager, and beside each session what strad
//! keeps for it — its upstream sessions (a hub of its own), its place among the sessions
//! strad may hold, when it was last used, and its requests in flight (`in_flight.rs`), so a
//! request reusing the id of one still in flight is answered at once with an error.
//!
//! A session is idle once no request has named it for `idle`; the sweeper then closes it, as
//! rmcp's own keep-alive would (that one is off here, because it cannot see the requests
//! strad answers itself).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use app::servers::ssr::client::Hub;
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::worker::WorkerTransport;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::in_flight::{self, Answering, InFlight};

/// How long a session may go without a request before it is closed (rmcp's own default).
pub const IDLE: Duration = Duration::from_secs(300);

/// What strad keeps for one open client session.
pub struct Open {
    /// This session's own upstream sessions (one per server, opened on first use, closed
    /// with it): what one client does to a server's session state never meets another's,
    /// nor the console's.
    pub hub: Arc<Hub>,
    _slot: OwnedSemaphorePermit,
    /// The login token whose session this is: the first to name it.
    owner: std::sync::OnceLock<uuid::Uuid>,
    /// Set once the client has sent `notifications/initialized` (seen by the relay).
    initialized: std::sync::atomic::AtomicBool,
    used: Mutex<Instant>,
    /// The session's requests in flight, by their id.
    pub requests: Arc<InFlight>,
}

impl Open {
    pub fn initialized(&self) -> bool {
        self.initialized.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn mark_initialized(&self) {
        self.initialized
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether the session is `token`'s (binding it to `token` when no token has named it).
    pub fn belongs_to(&self, token: uuid::Uuid) -> bool {
        *self.owner.get_or_init(|| token) == token
    }

    fn touch(&self) {
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.used
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error("/mcp holds as many sessions as it may")]
    Full,
}

pub struct Sessions {
    local: LocalSessionManager,
    /// `<instance>.` before every id this instance hands out (empty without an instance
    /// name), so a load balancer can send each request to the instance holding its session.
    prefix: String,
    open: RwLock<HashMap<SessionId, Arc<Open>>>,
    slots: Arc<Semaphore>,
    parent: Arc<Hub>,
    idle: Duration,
}

impl Sessions {
    /// At most `max` sessions at once, each closed after `idle` without a request; the
    /// sweeper runs as long as the sessions are in use.
    pub fn new(parent: Arc<Hub>, max: usize, idle: Duration, instance: Option<&str>) -> Arc<Self> {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = None;
        let sessions = Arc::new(Self {
            local,
            prefix: instance.map(|name| format!("{name}.")).unwrap_or_default(),
            open: RwLock::default(),
            slots: Arc::new(Semaphore::new(max)),
            parent,
            idle,
        });
        tokio::spawn(sweep(Arc::downgrade(&sessions)));
        sessions
    }

    /// Whether another session may be opened now.
    pub fn has_room(&self) -> bool {
        self.slots.available_permits() > 0
    }

    /// The open session `id`, marked as used now.
    pub fn get(&self, id: &str) -> Option<Arc<Open>> {
        let open = self
            .open
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()?;
        open.touch();
        Some(open)
    }

    /// The open session `headers` name (`Mcp-Session-Id`), marked as used now.
    pub fn named_by(&self, headers: &http::HeaderMap) -> Option<Arc<Open>> {
        self.get(headers.get("mcp-session-id")?.to_str().ok()?)
    }

    fn touch(&self, id: &SessionId) {
        let _ = self.get(id);
    }

    fn idle_ones(&self) -> Vec<SessionId> {
        let open = self.open.read().unwrap_or_else(|p| p.into_inner());
        open.iter()
            .filter(|(_, session)| session.idle_for() >= self.idle)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Closes idle sessions until the sessions are dropped.
async fn sweep(sessions: Weak<Sessions>) {
    let Some(every) = sessions
        .upgrade()
        .map(|s| (s.idle / 10).max(Duration::from_millis(100)))
    else {
        return;
    };
    loop {
        tokio::time::sleep(every).await;
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        for id in sessions.idle_ones() {
            tracing::info!(session_id = %id, "closing an idle /mcp session");
            let _ = sessions.close_session(&id).await;
        }
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = Answering<WorkerTransport<LocalSessionWorker>>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| SessionsError::Full)?;
        let (id, transport) = if self.prefix.is_empty() {
            self.local.create_session().await?
        } else {
            // The local manager's own session, under an id that names this instance (an
            // id of another instance is not in its table: 404).
            let id = SessionId::from(format!("{}{}", self.prefix, uuid::Uuid::new_v4()));
            let (handle, worker) =
                create_local_session(id.clone(), self.local.session_config.clone());
            self.local.sessions.write().await.insert(id.clone(), handle);
            (id, WorkerTransport::spawn(worker))
        };
        let requests = Arc::new(InFlight::default());
        let open = Arc::new(Open {
            hub: Arc::new(self.parent.sibling()),
            _slot: slot,
            owner: Default::default(),
            initialized: Default::default(),
            used: Mutex::new(Instant::now()),
            requests: requests.clone(),
        });
        self.open
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), open);
        let transport = Answering {
            inner: transport,
            in_flight: requests,
        };
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let open = self
            .open
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        // Its calls still running end with the session.
        if let Some(open) = open {
            open.requests.cancel_all();
        }
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = self.get(id);
        let request = match (&open, &message) {
            (Some(open), ClientJsonRpcMessage::Request(request)) => {
                Some((open, request.id.clone()))
            }
            _ => None,
        };
        if let Some((open, request)) = &request
            && !open.requests.start_in_session(request.clone())
        {
            let refusal =
                ServerSseMessage::from_message(in_flight::already_in_flight(request.clone()));
            return Ok(futures::stream::iter([refusal]).left_stream());
        }
        match self.local.create_stream(id, message).await {
            Ok(stream) => Ok(stream.right_stream()),
            Err(error) => {
                if let Some((open, request)) = &request {
                    open.requests.end_in_session(request);
                }
                Err(error.into())
            }
        }
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if let Some(open) = self.get(id) {
            open.requests.heard(&message);
        }
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.local.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::servers::ssr::client::HubSettings;
    use rmcp::model::NumberOrString;

    fn sessions(max: usize, idle: Duration) -> Arc<Sessions> {
        let (changes, _) = tokio::sync::mpsc::unbounded_channel();
        let hub = Arc::new(Hub::new(HubSettings::default(), changes));
        Sessions::new(hub, max, idle, None)
    }

    #[tokio::test]
    async fn an_instance_names_its_sessions_and_knows_no_other_instances() {
        let (changes, _) = tokio::sync::mpsc::unbounded_channel();
        let hub = Arc::new(Hub::new(HubSettings::default(), changes));
        let a = Sessions::new(hub.clone(), 4, IDLE, Some("a"));
        let b = Sessions::new(hub, 4, IDLE, Some("b"));
        let (id, _transport) = a.create_session().await.unwrap();
        assert!(id.starts_with("a."), "{id}");
        assert!(a.has_session(&id).await.unwrap());
        assert!(a.get(&id).is_some());
        let bare = SessionId::from(id.strip_prefix("a.").unwrap());
        assert!(!a.has_session(&bare).await.unwrap(), "only the named id");
        assert!(b.get(&id).is_none());
        let (other, _transport) = b.create_session().await.unwrap();
        let as_a = SessionId::from(format!("a.{}", other.strip_prefix("b.").unwrap()));
        assert!(!a.has_session(&as_a).await.unwrap());
        assert!(!a.has_session(&other).await.unwrap());
        a.close_session(&id).await.unwrap();
        assert!(!a.has_session(&id).await.unwrap());
    }

    fn is_open(sessions: &Sessions, id: &SessionId) -> bool {
        sessions.open.read().unwrap().contains_key(id)
    }

    #[tokio::test]
    async fn past_the_most_sessions_a_new_one_is_refused_until_one_closes() {
        let sessions = sessions(2, IDLE);
        let (first, _first) = sessions.create_session().await.unwrap();
        let (_, _second) = sessions.create_session().await.unwrap();
        assert!(!sessions.has_room());
        assert!(matches!(
            sessions.create_session().await,
            Err(SessionsError::Full)
        ));
        sessions.close_session(&first).await.unwrap();
        assert!(sessions.get(&first).is_none());
        assert!(!sessions.has_session(&first).await.unwrap());
        assert!(sessions.has_room());
        let (third, _third) = sessions.create_session().await.unwrap();
        assert!(sessions.has_session(&third).await.unwrap());
    }

    #[tokio::test]
    async fn a_session_without_requests_is_closed_and_one_in_use_is_kept() {
        let sessions = sessions(4, Duration::from_millis(300));
        let (idle, _idle) = sessions.create_session().await.unwrap();
        let (used, _used) = sessions.create_session().await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while is_open(&sessions, &idle) {
            assert!(
                Instant::now() < deadline,
                "the idle session was never closed"
            );
            assert!(sessions.get(&used).is_some(), "a session in use was closed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!sessions.has_session(&idle).await.unwrap());
        assert!(sessions.get(&used).is_some());
        assert!(sessions.has_session(&used).await.unwrap());
    }

    #[tokio::test]
    async fn closing_a_session_cancels_the_calls_still_running_in_it() {
        let sessions = sessions(1, IDLE);
        let (id, _transport) = sessions.create_session().await.unwrap();
        let open = sessions.get(&id).unwrap();
        let mut running = open.requests.start_here(NumberOrString::Number(7)).unwrap();
        sessions.close_session(&id).await.unwrap();
        assert!((&mut running.cancelled).await.is_ok());
    }
}
