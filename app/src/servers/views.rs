//! What the browser is sent about servers. Rows stay on the server.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub slug: String,
    pub display_name: String,
    pub transport: String,
    /// The URL, or the command line for stdio.
    pub target: String,
    pub from_config: bool,
    pub capabilities: Vec<String>,
    pub enabled: bool,
    pub status: ServerStatus,
    pub tool_count: i64,
    pub app_count: i64,
    pub last_discovery: Option<String>,
    /// Hosts the server's app opens links to without asking.
    pub link_hosts: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerStatus {
    Disabled,
    NeverDiscovered,
    Ok,
    /// The last discovery failed; the message is strad's own description of the failure.
    Failing(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolView {
    pub name: String,
    pub description: Option<String>,
    pub resource_uri: Option<String>,
    pub visibility: Vec<String>,
    pub read_only_hint: bool,
    pub annotations: String,
    pub digest: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppResourceView {
    pub uri: String,
    pub digest: String,
    pub content_digest: String,
    pub size: i64,
    pub resource_domains: Vec<String>,
    pub permissions: Vec<String>,
    /// The tools that declare this resource.
    pub declared_by: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemView {
    pub item: String,
    pub problem: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerDetail {
    pub summary: ServerSummary,
    pub tools: Vec<ToolView>,
    pub apps: Vec<AppResourceView>,
    pub problems: Vec<ProblemView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppChangeView {
    pub id: i64,
    pub at: String,
    pub slug: String,
    pub item_kind: String,
    pub item: String,
    pub change: String,
    pub old_digest: Option<String>,
    pub new_digest: Option<String>,
    pub old_size: Option<i64>,
    pub new_size: Option<i64>,
    pub diff: String,
}
