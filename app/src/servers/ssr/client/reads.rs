//! Reads of a server — lists, prompts, resources — each within its byte limit and tried
//! once more on a fresh connection after a transport failure.

use std::time::Instant;

use rmcp::RoleClient;
use rmcp::model::ReadResourceRequestParams;
use rmcp::service::ServiceError;
use serde_json::Value;

use super::plain_failures::service_error;
use super::{Endpoint, Hub, McpError, to_json, to_json_list};
use crate::metrics;

impl Hub {
    /// Every tool, following pagination.
    pub async fn list_tools(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(slug, endpoint, "tools/list", |peer| async move {
            peer.list_all_tools().await
        })
        .await
    }

    /// Every resource, following pagination.
    pub async fn list_resources(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(slug, endpoint, "resources/list", |peer| async move {
            peer.list_all_resources().await
        })
        .await
    }

    /// Every resource template, following pagination.
    pub async fn list_resource_templates(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(
            slug,
            endpoint,
            "resources/templates/list",
            |peer| async move { peer.list_all_resource_templates().await },
        )
        .await
    }

    /// Every prompt, following pagination.
    pub async fn list_prompts(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(slug, endpoint, "prompts/list", |peer| async move {
            peer.list_all_prompts().await
        })
        .await
    }

    /// A whole list (`list` follows pagination, `method` names it), as JSON, within the
    /// response byte limit.
    async fn listed<T, F, Fut>(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        method: &'static str,
        list: F,
    ) -> Result<Vec<Value>, McpError>
    where
        T: serde::Serialize,
        F: Fn(rmcp::Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<Vec<T>, ServiceError>>,
    {
        let limit = self.settings.response_limit;
        self.idempotent(slug, endpoint, method, |peer| {
            let listing = list(peer);
            async move { to_json_list(&listing.await.map_err(service_error)?, limit) }
        })
        .await
    }

    /// One `prompts/get`, as JSON (a read: retried once on a fresh connection).
    pub async fn get_prompt(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<Value, McpError> {
        let limit = self.settings.response_limit;
        let name = name.to_owned();
        self.idempotent(slug, endpoint, "prompts/get", move |peer| {
            let (name, arguments) = (name.clone(), arguments.clone());
            async move {
                let mut params = rmcp::model::GetPromptRequestParams::new(name);
                if let Some(arguments) = arguments {
                    params = params.with_arguments(arguments);
                }
                let result = peer.get_prompt(params).await.map_err(service_error)?;
                to_json(&result, limit)
            }
        })
        .await
    }

    /// One `resources/read`, as JSON, within the resource byte limit.
    pub async fn read_resource(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        uri: &str,
    ) -> Result<Value, McpError> {
        let limit = self.settings.resource_limit;
        let uri = uri.to_owned();
        self.idempotent(slug, endpoint, "resources/read", move |peer| {
            let uri = uri.clone();
            async move {
                let result = peer
                    .read_resource(ReadResourceRequestParams::new(uri))
                    .await
                    .map_err(service_error)?;
                to_json(&result, limit + limit / 3 + 4096)
            }
        })
        .await
    }

    /// Runs an idempotent request (of MCP method `method`); after a transport failure or a
    /// timeout the connection is rebuilt and the request tried once more, which is how a
    /// restarted server is reached. Its time and failure are recorded once, both tries
    /// together.
    pub(super) async fn idempotent<F, Fut, T>(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        method: &'static str,
        request: F,
    ) -> Result<T, McpError>
    where
        F: Fn(rmcp::Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, McpError>>,
    {
        let started = Instant::now();
        let answer = self.retrying_once(slug, endpoint, request).await;
        metrics::upstream(slug, method, started.elapsed(), &answer);
        answer
    }

    async fn retrying_once<F, Fut, T>(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        request: F,
    ) -> Result<T, McpError>
    where
        F: Fn(rmcp::Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, McpError>>,
    {
        let mut last = None;
        for _attempt in 0..2 {
            let connection = self.connection(slug, endpoint).await?;
            match self.timed(request(connection.service.peer().clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(
                    err
                    @ (McpError::Server(_) | McpError::TooLarge { .. } | McpError::Malformed(_)),
                )) => {
                    return Err(err);
                }
                Ok(Err(err)) | Err(err) => {
                    self.forget_connection(slug, &connection).await;
                    if matches!(err, McpError::Timeout(_)) {
                        // A hung server would hang again; do not double the wait.
                        return Err(err);
                    }
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| McpError::Transport("no attempt made".into())))
    }
}
