//! Who spent the CPU while the calls ran: strad's threads, the load generator, the upstream
//! Node server, PostgreSQL, and for the frame route nginx and wrk, read from `/proc`.

use super::*;

/// CPU time in milliseconds, by whom: the test server's threads (strad), the rest of this
/// process (the load generator), the upstream Node server and every PostgreSQL process; the
/// whole machine's busy time (all of them and anything else running); and the wall-clock
/// time it was measured over.
#[derive(Clone, Copy, Default)]
pub struct Cpu {
    pub strad: f64,
    pub load: f64,
    pub node: f64,
    pub postgres: f64,
    /// Of `postgres`, its background processes' (checkpointer, WAL writer, background writer,
    /// autovacuum): the database's own work, not answering a connection.
    pub postgres_own: f64,
    /// Every nginx process's (the frame route's comparison).
    pub nginx: f64,
    /// This process's children that ended and were waited for: wrk, the frame route's
    /// load generator, run once per round.
    pub wrk: f64,
    pub machine: f64,
    pub wall: f64,
}

impl Cpu {
    pub fn plus(self, other: Cpu) -> Cpu {
        Cpu {
            strad: self.strad + other.strad,
            load: self.load + other.load,
            node: self.node + other.node,
            postgres: self.postgres + other.postgres,
            postgres_own: self.postgres_own + other.postgres_own,
            nginx: self.nginx + other.nginx,
            wrk: self.wrk + other.wrk,
            machine: self.machine + other.machine,
            wall: self.wall + other.wall,
        }
    }

    /// Busy time of processes other than those above (a build, a backup, another tenant).
    pub fn others(&self) -> f64 {
        let named = self.strad + self.load + self.node + self.postgres + self.nginx + self.wrk;
        (self.machine - named).max(0.0)
    }
}

/// Runs `work` and returns what it gave with the CPU time spent while it ran.
pub async fn with_cpu<T>(node: u32, work: impl Future<Output = T>) -> (T, Cpu) {
    let (before, at) = (cpu_so_far(node), Instant::now());
    let output = work.await;
    let after = cpu_so_far(node);
    let cpu = Cpu {
        strad: after.strad - before.strad,
        load: after.load - before.load,
        node: after.node - before.node,
        postgres: after.postgres - before.postgres,
        postgres_own: after.postgres_own - before.postgres_own,
        nginx: after.nginx - before.nginx,
        wrk: after.wrk - before.wrk,
        machine: after.machine - before.machine,
        wall: at.elapsed().as_secs_f64() * 1000.0,
    };
    (output, cpu)
}

/// The CPU time each party has used so far, from `/proc` (user and system time).
fn cpu_so_far(node: u32) -> Cpu {
    let tick_ms = 1000.0 / clock_ticks_per_second();
    let read = |path: std::path::PathBuf| std::fs::read_to_string(path).ok();
    let mut cpu = Cpu::default();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some((name, ticks)) = read(task.path().join("stat")).as_deref().and_then(used) {
            if name.starts_with(STRAD_THREAD) {
                cpu.strad += ticks * tick_ms;
            } else {
                cpu.load += ticks * tick_ms;
            }
        }
    }
    cpu.wrk = read("/proc/self/stat".into())
        .as_deref()
        .and_then(children_used)
        .map_or(0.0, |ticks| ticks * tick_ms);
    let node_stat = read(format!("/proc/{node}/stat").into());
    cpu.node = node_stat
        .as_deref()
        .and_then(used)
        .map_or(0.0, |(_, t)| t * tick_ms);
    for process in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if !process
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Some((name, ticks)) = read(process.path().join("stat")).as_deref().and_then(used)
        else {
            continue;
        };
        if name == "nginx" {
            cpu.nginx += ticks * tick_ms;
        }
        if name == "postgres" {
            cpu.postgres += ticks * tick_ms;
            // A connection's process is titled "postgres: <cluster>: <user> <database> …".
            let title = std::fs::read(process.path().join("cmdline")).unwrap_or_default();
            let title = String::from_utf8_lossy(&title);
            if [
                "checkpointer",
                "walwriter",
                "background writer",
                "autovacuum",
            ]
            .iter()
            .any(|own| title.contains(own))
            {
                cpu.postgres_own += ticks * tick_ms;
            }
        }
    }
    // The first line of /proc/stat: the machine's time by state, in clock ticks; busy is
    // everything but idle and waiting for I/O, steal included (the hypervisor running its
    // other guests), and guest time is already in user time.
    cpu.machine = read("/proc/stat".into())
        .as_deref()
        .and_then(|stat| stat.lines().next().map(str::to_owned))
        .map_or(0.0, |line| {
            let ticks: Vec<f64> = line
                .split_whitespace()
                .skip(1)
                .filter_map(|t| t.parse().ok())
                .collect();
            let busy: f64 = ticks.iter().take(8).sum::<f64>()
                - ticks.get(3).copied().unwrap_or(0.0)
                - ticks.get(4).copied().unwrap_or(0.0);
            busy * tick_ms
        });
    cpu
}

/// A `/proc/…/stat` line's command name and its user plus system time, in clock ticks.
fn used(stat: &str) -> Option<(String, f64)> {
    // The name is in parentheses and may hold spaces; fields 14 and 15 follow the last one.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    Some((stat[open + 1..close].to_owned(), ticks_at(stat, 11)?))
}

/// A `/proc/…/stat` line's children's user plus system time (those waited for), in ticks:
/// fields 16 and 17.
fn children_used(stat: &str) -> Option<f64> {
    ticks_at(stat, 13)
}

/// Two consecutive fields of a `/proc/…/stat` line summed, counting from the first field
/// after the command name (field 3, the state, is 0).
fn ticks_at(stat: &str, at: usize) -> Option<f64> {
    let mut fields = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .skip(at);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}
