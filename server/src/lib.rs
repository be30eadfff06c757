#![recursion_limit = "512"]
#![deny(unsafe_code)]
//! The strad server: configuration, start-up, and the routes that are not Leptos pages.

pub mod apps;
pub mod audit_export;
pub mod auth;
pub mod authority_cache;
pub mod cli;
pub mod config;
pub mod db;
pub mod demo;
pub mod frame_loads;
pub mod health;
pub mod instances;
pub mod metrics;
pub mod prefetch;
pub mod relay;
pub mod runtime;
pub mod sandbox;
pub mod security_headers;
pub mod servers;
pub mod session_store;
pub mod site_files;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod tool_call;
pub mod write_gate;

/// mimalloc rather than glibc's allocator, for every binary built on this crate (strad, and
/// the tests and benchmarks that run it in process). A tool call allocates and frees a few
/// hundred small buffers across threads; with glibc's allocator that was the largest single
/// share of strad's CPU under load (docs/benchmarks.md).
///
/// Built with `no_thp`: mimalloc otherwise asks the kernel for transparent huge pages on its
/// arenas, and with THP in `madvise` mode (Debian's default) every touched 2 MiB stays
/// resident, which more than doubled the idle heap (docs/benchmarks.md, memory). The
/// setting is per process and children inherit it, so stdio servers strad starts run
/// without THP too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hands memory the calling thread has freed back to the system now. mimalloc keeps a
/// thread's freed pages for that thread and purges them only as it goes on allocating, so
/// a thread that allocates much once and then waits (the frame compressor: brotli's
/// working memory) would keep it resident. The one unsafe call in the crate.
#[allow(unsafe_code)]
pub fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointer and may be called on any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
