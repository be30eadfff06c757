/// A server's slug: `[a-z0-9-]{1,40}` (SPEC §4). The one name a server has in URLs,
/// entitlements and namespaced tool names.
pub fn is_valid_slug(slug: &str) -> bool {
    (1..=40).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::is_valid_slug;

    #[test]
    fn slugs_are_short_lowercase_words() {
        for good in ["a", "clock", "budget-2", &"x".repeat(40)] {
            assert!(is_valid_slug(good), "{good}");
        }
        for bad in [
            "",
            "Clock",
            "a_b",
            "a b",
            "a/b",
            "é",
            "../x",
            &"x".repeat(41),
        ] {
            assert!(!is_valid_slug(bad), "{bad}");
        }
    }
}
