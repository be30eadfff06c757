//! What a person, a page or an MCP client is told when an MCP server fails: a reference,
//! never the server's own words (they may carry its internals, or text written to mislead
//! the person). The detail goes to the log under that reference, and to the audit row
//! where the request is audited.

use uuid::Uuid;

/// Logs a server's failure with its detail under a fresh reference, and returns the
/// reference.
pub fn upstream_failure(slug: &str, what: &str, user: Uuid, detail: &str) -> String {
    let reference = format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
    tracing::warn!(
        server.slug = %slug,
        upstream.request = %what,
        call.reference = %reference,
        user.id = %user,
        error.message = %detail,
        "a request to an MCP server failed"
    );
    reference
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_gets_a_reference_of_its_own() {
        let a = upstream_failure("clock", "tools/call now", Uuid::nil(), "boom");
        let b = upstream_failure("clock", "tools/call now", Uuid::nil(), "boom");
        assert_eq!(a.len(), 12);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
