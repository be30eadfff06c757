//! Opening a connection to a server (over HTTP, or by starting its process) and closing it.

use std::sync::Arc;

use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};

use super::super::child_environment::child_environment;
use super::super::direct::{Direct, Negotiated};
use super::handler::Handler;
use super::plain_failures::{ConnectFailure, describe};
use super::progress_routing::Routed;
use super::{Connection, Endpoint, McpError, ProgressRoutes};

/// A connection's rmcp service, and for an HTTP server (over `http`) its direct calls. A
/// stdio server starts with `stdio_env` and the little of strad's environment
/// `child_environment` lets through.
pub(super) async fn connect(
    handler: Handler,
    endpoint: &Endpoint,
    http: &rmcp_reqwest::Client,
    stdio_env: &[(String, String)],
    routes: ProgressRoutes,
) -> Result<(RunningService<RoleClient, Handler>, Option<Direct>), McpError> {
    let connect_error = |err: &dyn ConnectFailure| McpError::Connect(describe(err));
    match endpoint {
        Endpoint::Http { url } => {
            let negotiated = Negotiated::default();
            let inner = super::super::http::recording(url, negotiated.clone(), http);
            let service = handler
                .serve(Routed { inner, routes })
                .await
                .map_err(|e| connect_error(&e))?;
            Ok((service, Some(Direct::new(http.clone(), url, negotiated))))
        }
        Endpoint::Stdio { command } => {
            let (program, args) = command
                .split_first()
                .ok_or_else(|| McpError::Connect("empty command".into()))?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .env_clear()
                .envs(child_environment(|name| std::env::var_os(name), stdio_env))
                .kill_on_drop(true);
            let (transport, _stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| connect_error(&e))?;
            let service = handler
                .serve(Routed {
                    inner: transport,
                    routes,
                })
                .await
                .map_err(|e| connect_error(&e))?;
            Ok((service, None))
        }
    }
}

pub(super) fn close(connection: Arc<Connection>) {
    // Cancelling ends the session (and a stdio child) in the background.
    if let Ok(connection) = Arc::try_unwrap(connection) {
        tokio::spawn(async move {
            let _ = connection.service.cancel().await;
        });
    }
}
