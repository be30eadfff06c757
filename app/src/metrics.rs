//! What the console's server-side code counts for Prometheus (SPEC §13), through the
//! `metrics` facade: the server installs the recorder and renders it at `/metrics`
//! (`strad_server::metrics`); until then every count here is a no-op. Each label takes one
//! of a fixed set of values or a server's slug: never a person, a token or a path.

use std::time::Duration;

use ::metrics::{counter, histogram};

use crate::servers::ssr::client::McpError;

/// A step in the life of an approval of a writing tool (SPEC §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    Minted,
    Spent,
    /// Did not match its call, had expired, or was spent already: nothing ran.
    Refused,
}

/// Counts one approval event: `strad_approvals_total{outcome}`.
pub fn approval(event: Approval) {
    let outcome = match event {
        Approval::Minted => "minted",
        Approval::Spent => "spent",
        Approval::Refused => "refused",
    };
    counter!("strad_approvals_total", "outcome" => outcome).increment(1);
}

/// A pin written (SPEC §7): at a person's first open, or on purpose over an older one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pin {
    Pinned,
    Refreshed,
}

/// Counts one pin written: `strad_pins_total{outcome}`.
pub fn pin(event: Pin) {
    let outcome = match event {
        Pin::Pinned => "pinned",
        Pin::Refreshed => "refreshed",
    };
    counter!("strad_pins_total", "outcome" => outcome).increment(1);
}

/// A step in the life of a frame ticket (SPEC §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ticket {
    Issued,
    Spent,
    /// Forged, expired, for another server, or spent already: no frame was served.
    Refused,
    /// Never loaded, and dropped for the person's newer tickets (past the per-person bound).
    Voided,
}

/// Counts one frame-ticket event: `strad_frame_tickets_total{outcome}`.
pub fn ticket(event: Ticket) {
    let outcome = match event {
        Ticket::Issued => "issued",
        Ticket::Spent => "spent",
        Ticket::Refused => "refused",
        Ticket::Voided => "voided",
    };
    counter!("strad_frame_tickets_total", "outcome" => outcome).increment(1);
}

/// Counts audit rows appended: `strad_audit_rows_written_total` (a row appended in a
/// caller's transaction that then rolls back is counted all the same).
pub fn audit_rows(rows: usize) {
    counter!("strad_audit_rows_written_total").increment(rows as u64);
}

/// Records one request to an MCP server: its time in
/// `strad_upstream_request_duration_seconds{slug, method}`, and a failure in
/// `strad_upstream_errors_total{slug, method, error}`. `method` is the MCP method asked.
pub fn upstream<T>(slug: &str, method: &'static str, took: Duration, result: &Result<T, McpError>) {
    let slug = slug.to_owned();
    histogram!(
        "strad_upstream_request_duration_seconds",
        "slug" => slug.clone(),
        "method" => method,
    )
    .record(took.as_secs_f64());
    if let Err(error) = result {
        counter!(
            "strad_upstream_errors_total",
            "slug" => slug,
            "method" => method,
            "error" => error_kind(error),
        )
        .increment(1);
    }
}

/// The kind of an upstream failure, as a label (never the server's own words).
fn error_kind(error: &McpError) -> &'static str {
    match error {
        McpError::Connect(_) => "connect",
        McpError::Timeout(_) => "timeout",
        McpError::Server(_) => "server",
        McpError::Transport(_) => "transport",
        McpError::TooLarge { .. } => "too_large",
        McpError::Malformed(_) => "malformed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_error_label_never_carries_the_servers_words() {
        let said = "secret detail from the server";
        for error in [
            McpError::Connect(said.into()),
            McpError::Timeout(Duration::from_secs(1)),
            McpError::Server(said.into()),
            McpError::Transport(said.into()),
            McpError::TooLarge { limit: 1 },
            McpError::Malformed(said.into()),
        ] {
            let kind = error_kind(&error);
            assert!(!kind.contains("secret"), "{kind}");
            assert!(kind.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
    }
}
