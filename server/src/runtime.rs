//! strad's async runtime: how many worker threads it runs.
//!
//! By default one fewer than the machine's cores (at least one). strad is rarely alone on
//! its machine: the upstream servers it starts over stdio always run beside it, and
//! PostgreSQL often does. On two cores shared that way, a second worker made every tool call
//! dearer: a call's tasks (the connection, the handler, the upstream client, the audit
//! writer) woke one another across threads, and strad's CPU per call rose by a fifth to a
//! half while throughput fell (docs/benchmarks.md). `TOKIO_WORKER_THREADS` overrides it.

/// Worker threads for `cores` cores, given `TOKIO_WORKER_THREADS` when set: a positive
/// number is taken as it is; anything else is ignored.
pub fn worker_threads(configured: Option<&str>, cores: usize) -> usize {
    configured
        .and_then(|value| value.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| cores.saturating_sub(1).max(1))
}

/// The multi-threaded runtime strad serves on, its threads named `name`.
pub fn build(name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let configured = std::env::var("TOKIO_WORKER_THREADS").ok();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(configured.as_deref(), cores))
        .thread_name(name)
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::worker_threads;

    #[test]
    fn one_core_is_left_to_the_neighbours_but_one_worker_always_runs() {
        assert_eq!(worker_threads(None, 1), 1);
        assert_eq!(worker_threads(None, 2), 1);
        assert_eq!(worker_threads(None, 8), 7);
        assert_eq!(worker_threads(None, 0), 1);
    }

    #[test]
    fn a_positive_setting_wins_and_anything_else_is_ignored() {
        assert_eq!(worker_threads(Some("2"), 2), 2);
        assert_eq!(worker_threads(Some(" 16 "), 2), 16);
        for ignored in ["0", "-1", "two", ""] {
            assert_eq!(worker_threads(Some(ignored), 4), 3, "{ignored:?}");
        }
    }
}
