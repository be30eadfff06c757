//! A hub's connections: one per server, kept while live, made again after a failure, and
//! shared with its siblings for stdio servers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::connect::{close, connect};
use super::handler::Handler;
use super::{
    ChangeSender, Connection, Connections, Endpoint, Hub, HubSettings, McpError, ProgressRoutes,
    StdioChildren, lock, write,
};

impl Hub {
    pub fn new(settings: HubSettings, changes: ChangeSender) -> Self {
        let seats = (0..settings.stdio_children.max(1))
            .map(|_| Connections::default())
            .collect();
        Self {
            settings,
            changes,
            own: Connections::default(),
            stdio: Arc::new(StdioChildren {
                seats,
                next: AtomicUsize::new(1),
            }),
            seat: 0,
            http: super::super::http::client(),
        }
    }

    /// A hub with the same settings and HTTP connections of its own (one `/mcp` client
    /// session's upstream sessions, closed when it is dropped); its stdio servers are the
    /// processes this hub shares, the next one in turn. List changes its servers announce
    /// still reach discovery.
    pub fn sibling(&self) -> Hub {
        let seat = self.stdio.next.fetch_add(1, Ordering::Relaxed) % self.stdio.seats.len();
        Hub {
            settings: self.settings.clone(),
            changes: self.changes.clone(),
            own: Connections::default(),
            stdio: self.stdio.clone(),
            seat,
            http: self.http.clone(),
        }
    }

    /// Where this hub keeps its connections to `endpoint`.
    pub(super) fn connections(&self, endpoint: &Endpoint) -> &Connections {
        match endpoint {
            Endpoint::Http { .. } => &self.own,
            Endpoint::Stdio { .. } => &self.stdio.seats[self.seat],
        }
    }

    pub fn settings(&self) -> &HubSettings {
        &self.settings
    }

    /// Drops the server's connection (after an edit, or when it is disabled): this hub's
    /// own, and every process of a stdio server.
    pub async fn forget(&self, slug: &str) {
        for connections in std::iter::once(&self.own).chain(self.stdio.seats.iter()) {
            let removed = write(&connections.live).remove(slug);
            if let Some(connection) = removed {
                close(connection);
            }
        }
    }

    pub(super) async fn timed<T>(&self, future: impl Future<Output = T>) -> Result<T, McpError> {
        tokio::time::timeout(self.settings.request_timeout, future)
            .await
            .map_err(|_| McpError::Timeout(self.settings.request_timeout))
    }

    pub(super) async fn forget_connection(&self, slug: &str, connection: &Arc<Connection>) {
        let removed = {
            let mut connections = write(&self.connections(&connection.endpoint).live);
            let current = connections
                .get(slug)
                .is_some_and(|current| Arc::ptr_eq(current, connection));
            if current {
                connections.remove(slug)
            } else {
                None
            }
        };
        if let Some(connection) = removed {
            close(connection);
        }
    }

    /// The live connection of a slug for this endpoint, if there is one.
    pub(super) fn live(&self, slug: &str, endpoint: &Endpoint) -> Option<Arc<Connection>> {
        let connections = self
            .connections(endpoint)
            .live
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        connections
            .get(slug)
            .filter(|c| c.endpoint == *endpoint && !c.service.is_transport_closed())
            .cloned()
    }

    pub(super) async fn connection(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Arc<Connection>, McpError> {
        if let Some(live) = self.live(slug, endpoint) {
            return Ok(live);
        }
        let connections = self.connections(endpoint);
        let gate = lock(&connections.connecting)
            .entry(slug.to_owned())
            .or_default()
            .clone();
        let _connecting = gate.lock().await;
        // Another caller may have connected while this one waited at the gate.
        if let Some(live) = self.live(slug, endpoint) {
            return Ok(live);
        }
        let stale = write(&connections.live).remove(slug);
        if let Some(stale) = stale {
            close(stale);
        }
        let progress = ProgressRoutes::default();
        let handler = Handler {
            slug: slug.to_owned(),
            changes: self.changes.clone(),
        };
        let (service, direct) = self
            .timed(connect(
                handler,
                endpoint,
                &self.http,
                self.settings.stdio_env.of(slug),
                progress.clone(),
            ))
            .await
            .map_err(|_| {
                McpError::Connect(format!(
                    "no answer to initialize within {:?}",
                    self.settings.request_timeout
                ))
            })??;
        let connection = Arc::new(Connection {
            endpoint: endpoint.clone(),
            service,
            progress,
            direct,
        });
        write(&connections.live).insert(slug.to_owned(), connection.clone());
        Ok(connection)
    }
}
