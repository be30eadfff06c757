//! Failures as a person can act on them.

use rmcp::service::ServiceError;

use super::McpError;

pub(super) trait ConnectFailure: std::fmt::Display + std::fmt::Debug {}
impl<T: std::fmt::Display + std::fmt::Debug> ConnectFailure for T {}

/// A failure as a person can act on it. rmcp's transport errors carry a chain of wrapper
/// type names and rarely expose their cause through `source()`, so the text is read: a
/// known cause is named plainly, anything else has the type names stripped and is cut short.
pub(crate) fn describe<E: std::fmt::Display + std::fmt::Debug + ?Sized>(err: &E) -> String {
    let text = err.to_string();
    // The cause often shows only in the Debug form.
    let full = format!("{text} {err:?}");
    let known = [
        (
            "Connection refused",
            "connection refused (is the server running?)",
        ),
        ("dns error", "the host name does not resolve"),
        ("certificate", "the TLS certificate was refused"),
        ("connection closed", "the server closed the connection"),
        ("Transport closed", "the server closed the connection"),
        (
            "could not parse JSON",
            "the server's answer is not valid JSON-RPC",
        ),
        (
            "UnexpectedContentType",
            "the server answered with an unexpected content type",
        ),
    ];
    if let Some((_, plain)) = known.iter().find(|(needle, _)| full.contains(needle)) {
        return (*plain).to_owned();
    }
    let mut cleaned = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => cleaned.push(c),
            _ => {}
        }
    }
    let cleaned = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    if cleaned.chars().count() > 200 {
        format!("{}…", cleaned.chars().take(200).collect::<String>())
    } else {
        cleaned
    }
}

pub(super) fn service_error(err: ServiceError) -> McpError {
    match err {
        ServiceError::McpError(data) => McpError::Server(data.message.to_string()),
        ServiceError::UnexpectedResponse => McpError::Malformed("unexpected response type".into()),
        ServiceError::Timeout { timeout } => McpError::Timeout(timeout),
        other => McpError::Transport(describe(&other)),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn known_failures_are_named_plainly() {
        let refused = "Send message error Transport [rmcp::transport::worker::WorkerTransport<X>] error: Client error: error sending request (tcp connect error, Connection refused)";
        assert_eq!(
            describe(refused),
            "connection refused (is the server running?)"
        );
    }

    #[test]
    fn type_names_are_stripped_and_long_text_cut() {
        assert_eq!(
            describe("Transport [a::b<c>] failed   badly"),
            "Transport failed badly"
        );
        assert!(describe("x".repeat(500).as_str()).chars().count() <= 201);
    }
}
