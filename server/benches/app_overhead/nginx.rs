//! nginx from Debian's package, serving the frame route's bytes for comparison.

use super::*;

/// nginx from Debian's package on a free loopback port, serving one file and its gzip.
pub struct Nginx {
    /// `http://127.0.0.1:<port>`, serving `/app.html`.
    pub origin: String,
    port: u16,
    _dir: TempDir,
    _child: tokio::process::Child,
}

impl Drop for Nginx {
    /// Its workers outlive a killed master: ask the master to stop them all first.
    fn drop(&mut self) {
        let dir = self._dir.0.display().to_string();
        let _ = std::process::Command::new("nginx")
            .args(["-p", &dir, "-c"])
            .arg(self._dir.0.join("nginx.conf"))
            .args(["-s", "stop"])
            .status();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Nginx {
    pub fn start(body: &[u8], gzipped: &[u8], csp: &str) -> Nginx {
        use std::os::unix::fs::PermissionsExt;
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("strad-bench-nginx-{port}"));
        std::fs::create_dir_all(dir.join("www")).unwrap();
        for path in [dir.clone(), dir.join("www")] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.join("www/app.html"), body).unwrap();
        std::fs::write(dir.join("www/app.html.gz"), gzipped).unwrap();
        let user = if is_root() { "user root;" } else { "" };
        let d = dir.display();
        // nginx at its best on loopback: `sendfile` without `tcp_nopush` (nginx's default).
        // With `tcp_nopush on` (Debian's stock nginx.conf) one load in a few dozen waited
        // 40 ms for the client's delayed ACK (`wrk -c1`: 2 500 loads/s, p99 42.7 ms, against
        // 36 000 and 0.04 ms without), which would flatter strad.
        let config = format!(
            "{user}
worker_processes auto;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  gzip_static on;
  gzip_vary on;
  keepalive_requests 1000000;
  client_body_temp_path {d}/client;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  types {{ text/html html; }}
  server {{
    listen 127.0.0.1:{port};
    root {d}/www;
    location / {{
      add_header Content-Security-Policy \"{csp}\" always;
      add_header Cache-Control no-store always;
    }}
  }}
}}
"
        );
        std::fs::write(dir.join("nginx.conf"), config).unwrap();
        let child = tokio::process::Command::new("nginx")
            .args(["-p", &d.to_string(), "-c"])
            .arg(dir.join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("nginx runs (apt install nginx-light; ./x bench does)");
        Nginx {
            origin: format!("http://127.0.0.1:{port}"),
            port,
            _dir: TempDir(dir),
            _child: child,
        }
    }

    pub async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "nginx did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
