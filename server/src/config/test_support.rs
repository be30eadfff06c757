//! Environments for the loaders' tests.

use std::collections::HashMap;

pub(super) fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(super) fn oidc_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("STRAD_OIDC_ISSUER", "https://id.example.com"),
        ("STRAD_OIDC_CLIENT_ID", "strad"),
        ("STRAD_OIDC_CLIENT_SECRET", "s3cret"),
        ("STRAD_ALLOWED_DOMAINS", "Example.com, corp.test"),
        ("STRAD_BIND", "0.0.0.0:8080"),
        ("STRAD_PUBLIC_URL", "https://strad.example.com"),
    ]
}
