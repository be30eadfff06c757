//! The figures `./x bench` gathers into one table: each is a line of `STRAD_BENCH_SUMMARY`
//! (what, measured, target, tab-separated), written beside the detailed tables printed here.

use std::io::Write;

/// Adds a line to the summary file when `STRAD_BENCH_SUMMARY` names one.
pub fn summary(what: &str, measured: String, target: &str) {
    let Ok(path) = std::env::var("STRAD_BENCH_SUMMARY") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("the summary file opens");
    writeln!(file, "{what}\t{measured}\t{target}").expect("the summary file takes a line");
}
