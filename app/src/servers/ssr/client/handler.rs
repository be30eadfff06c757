//! What strad says of itself at initialize, and the list changes a server announces,
//! which reach discovery.

use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

use super::{ChangeSender, UI_EXTENSION};

#[derive(Clone)]
pub(super) struct Handler {
    pub(super) slug: String,
    pub(super) changes: ChangeSender,
}

/// What strad says of itself at initialize: its name and version, and the UI extension.
pub fn client_info() -> InitializeRequestParams {
    let mut capabilities = ClientCapabilities::default();
    let mut ui = serde_json::Map::new();
    ui.insert(
        "mimeTypes".into(),
        Value::from(vec![super::super::discovery::APP_MIME_TYPE]),
    );
    capabilities.extensions = Some([(UI_EXTENSION.to_string(), ui)].into_iter().collect());
    InitializeRequestParams::new(
        capabilities,
        Implementation::new("strad", env!("CARGO_PKG_VERSION")),
    )
}

impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        client_info()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(self.slug.clone());
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(self.slug.clone());
    }
}
