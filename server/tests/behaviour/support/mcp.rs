//! Real MCP peers for tests: the official example servers from npm (Streamable HTTP on a
//! loopback port, or stdio), and strad's own controllable test server.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub fn end2end_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end")
}

/// Path of an npm bin in end2end/node_modules.
pub fn npm_bin(name: &str) -> String {
    let path = end2end_dir().join("node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix end2end`",
        path.display()
    );
    path.canonicalize().unwrap().to_string_lossy().into_owned()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An example server from npm, serving Streamable HTTP on a loopback port.
pub struct ExampleServer {
    pub url: String,
    _child: Child,
}

impl ExampleServer {
    pub async fn start(bin: &str) -> ExampleServer {
        let port = free_port();
        let child = Command::new(npm_bin(bin))
            .env("PORT", port.to_string())
            .arg(format!(
                "--log-file={}",
                std::env::temp_dir()
                    .join(format!("strad-debug-{port}.log"))
                    .display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the example server starts");
        wait_for_port(port).await;
        ExampleServer {
            url: format!("http://127.0.0.1:{port}/mcp"),
            _child: child,
        }
    }

    /// The server's process id (Node itself: the npm bin is a script Node runs).
    #[allow(dead_code, reason = "the benchmarks read it; they share this harness")]
    pub fn pid(&self) -> Option<u32> {
        self._child.id()
    }
}

/// strad's own test server (end2end/support/test-mcp-server.mjs): its app HTML, tools and
/// faults change on request.
pub struct TestServer {
    pub url: String,
    control: String,
    child: Option<Child>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_on(0).await
    }

    pub async fn start_on(port: u16) -> TestServer {
        Self::start_with(port, &[]).await
    }

    /// A test server that keeps its sessions' events, so a client can resume a stream.
    pub async fn resumable() -> TestServer {
        Self::start_with(0, &[("RESUMABLE", "1")]).await
    }

    /// A test server that answers every POST with one JSON body instead of an event stream.
    pub async fn json_responses() -> TestServer {
        Self::start_with(0, &[("JSON_RESPONSE", "1")]).await
    }

    async fn start_with(port: u16, env: &[(&str, &str)]) -> TestServer {
        let script = end2end_dir().join("support/test-mcp-server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .envs(env.iter().copied())
            .env("PORT", port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the test server");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the test server starts")
            .unwrap()
            .expect("it prints its address");
        let ready: serde_json::Value = serde_json::from_str(&line).unwrap();
        let port = ready["port"].as_u64().unwrap() as u16;
        TestServer {
            url: ready["url"].as_str().unwrap().to_owned(),
            control: format!("http://127.0.0.1:{port}/control"),
            child: Some(child),
        }
    }

    /// A test server with a read-only tool `slow`: two steps 400 ms apart before it answers,
    /// each a progress notification when the call carries a progress token (strad's upstream
    /// calls carry one when their caller asked for progress).
    pub async fn with_slow_tool() -> TestServer {
        let server = Self::start().await;
        server
            .control(serde_json::json!({"addTool": {"name": "slow",
                "annotations": {"readOnlyHint": true},
                "progress": {"steps": 2, "intervalMs": 400}}}))
            .await;
        server
    }

    pub async fn control(&self, body: serde_json::Value) {
        let status = reqwest::Client::new()
            .post(&self.control)
            .json(&body)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 204, "control {body}");
    }

    pub async fn state(&self) -> Option<serde_json::Value> {
        let response = reqwest::Client::new()
            .get(&self.control)
            .send()
            .await
            .ok()?;
        response.json().await.ok()
    }

    /// Waits for the process to exit (after a `die` fault).
    pub async fn wait_exit(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        }
    }
}
