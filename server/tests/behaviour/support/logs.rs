//! The log lines of every strad this test process runs, kept for tests to search.

use std::sync::Arc;

static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();

#[derive(Clone)]
struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends every log line of this test process (all the strads it runs) to a buffer that
/// tests can search.
pub(super) fn capture_logs() {
    LOGS.get_or_init(|| {
        let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = LogWriter(buffer.clone());
        let _ = tracing_subscriber::fmt()
            .with_env_filter("warn,strad_app=info,strad_server=info")
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        buffer
    });
}

/// Every log line so far that contains all of `needles`.
pub fn log_lines(needles: &[&str]) -> Vec<String> {
    let logs = LOGS.get().expect("logs captured").lock().unwrap();
    String::from_utf8_lossy(&logs)
        .lines()
        .filter(|line| needles.iter().all(|n| line.contains(n)))
        .map(str::to_owned)
        .collect()
}
