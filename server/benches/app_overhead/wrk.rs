//! wrk (Debian's package: C, in a process of its own) as the frame route's load generator,
//! for strad and nginx alike: no client shares strad's process or its allocator, and a
//! client far cheaper than reqwest leaves more of the two cores to the servers compared.

use super::*;

/// Asks for each path of a list once, in order (a frame load spends its ticket), or for a
/// list's one path again and again, `count` times in all, then ends the run at once:
/// wrk's own clock then stops at the last answer, not at its `-d` limit. Its one thread
/// stops its loop, and `SIGINT` to its main thread (whose sleep wrk ends on that signal)
/// has wrk report. The requests' headers are a file's lines.
const SCRIPT: &str = r#"
local ffi = require("ffi")
ffi.cdef[[ int getpid(void); int tgkill(int tgid, int tid, int sig); ]]
local paths, headers, sent, count = {}, {}, 0, 0
init = function(args)
  for line in io.lines(args[1]) do paths[#paths + 1] = line end
  for line in io.lines(args[2]) do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  count = tonumber(args[3])
end
request = function()
  sent = sent + 1
  if sent == count + 1 then
    wrk.thread:stop()
    local pid = ffi.C.getpid()
    ffi.C.tgkill(pid, pid, 2)
  end
  return wrk.format("GET", paths[math.min(sent, #paths)], headers)
end
"#;

/// A directory for wrk's script and lists, removed with it.
pub struct Wrk {
    dir: std::path::PathBuf,
}

impl Drop for Wrk {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One run's request: where to, with which headers, and how many times.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    /// `http://127.0.0.1:<port>`.
    pub origin: &'a str,
    /// Each asked once, or one asked `count` times.
    pub paths: &'a [String],
    pub count: usize,
    pub headers: &'a [(&'a str, &'a str)],
    /// The length of the gzip every answer must carry.
    pub gzip: usize,
}

impl Wrk {
    pub fn new() -> Wrk {
        let dir = std::env::temp_dir().join(format!("strad-bench-wrk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("script.lua"), SCRIPT).unwrap();
        Wrk { dir }
    }

    /// `run` from `connections` keep-alive connections of one wrk thread.
    pub async fn run(&self, run: &Run<'_>, connections: usize) -> Figures {
        assert!(run.paths.len() == 1 || run.paths.len() >= run.count);
        let (paths, headers) = (self.dir.join("paths"), self.dir.join("headers"));
        std::fs::write(&paths, run.paths.join("\n") + "\n").unwrap();
        let lines: Vec<String> = run
            .headers
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        std::fs::write(&headers, lines.join("\n") + "\n").unwrap();
        let output = tokio::process::Command::new("wrk")
            .args(["-t1", "-d60s", "--latency", "-c"])
            .arg(connections.to_string())
            .arg("-s")
            .arg(self.dir.join("script.lua"))
            .arg(run.origin)
            .arg("--")
            .args([&paths, &headers])
            .arg(run.count.to_string())
            .output()
            .await
            .expect("wrk runs (apt install wrk; ./x bench does)");
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "wrk failed: {report}");
        read_report(&report, run.count, connections, run.gzip)
    }
}

/// Loads per second, p50 and p99 from wrk's report, once it says that every load was
/// answered (the connections' last requests, sent as the run ended, may not be), each a
/// 2xx carrying `gzip` bytes and its headers.
fn read_report(report: &str, count: usize, connections: usize, gzip: usize) -> Figures {
    let lines = || report.lines().map(str::trim);
    let field = |prefix: &str| {
        lines()
            .find_map(|line| line.strip_prefix(prefix))
            .map(str::trim)
    };
    assert!(
        field("Non-2xx or 3xx responses:").is_none() && field("Socket errors:").is_none(),
        "a load failed: {report}"
    );
    let (answered, read) = lines()
        .find_map(|line| line.split_once(" requests in "))
        .and_then(|(n, rest)| Some((n.parse::<usize>().ok()?, rest.split_once(", ")?.1)))
        .expect("wrk's count of answers");
    assert!(
        answered <= count && answered + connections >= count,
        "{answered} of {count} loads answered: {report}"
    );
    let per_load = bytes(read.strip_suffix(" read").unwrap_or(read)) / answered as f64;
    // wrk writes the bytes read with two decimals of its unit.
    assert!(
        per_load > gzip as f64 * 0.99 && per_load < gzip as f64 * 1.01 + 2048.0,
        "{per_load:.0} bytes a load, not the gzip's {gzip}: {report}"
    );
    Figures {
        requests_per_second: field("Requests/sec:")
            .and_then(|r| r.parse().ok())
            .expect("wrk's loads per second"),
        p50: duration(field("50%").expect("wrk's p50")),
        p99: duration(field("99%").expect("wrk's p99")),
    }
}

/// A number and its unit, as wrk writes them (`61.00us`, `225.00MB`).
fn number_and_unit(text: &str) -> (f64, &str) {
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    (number.parse().expect("a number"), unit)
}

fn duration(text: &str) -> Duration {
    let (n, unit) = number_and_unit(text);
    let seconds = match unit {
        "us" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "m" => n * 60.0,
        other => panic!("wrk's unit of time {other}"),
    };
    Duration::from_secs_f64(seconds)
}

fn bytes(text: &str) -> f64 {
    let (n, unit) = number_and_unit(text);
    let power = ["B", "KB", "MB", "GB"]
        .iter()
        .position(|u| *u == unit)
        .expect("wrk's unit of size");
    n * 1024f64.powi(power as i32)
}
