/// The `next` a sign-in returns to, when it is safe: a path on this console. Anything that
/// a browser could read as another origin (`//host`, `/\host`, a scheme, control
/// characters) is refused, so a sign-in link cannot become an open redirect.
pub fn safe_next_path(next: &str) -> Option<&str> {
    let bytes = next.as_bytes();
    let starts_well =
        bytes.first() == Some(&b'/') && !matches!(bytes.get(1), Some(b'/') | Some(b'\\'));
    let clean = next
        .chars()
        .all(|c| !c.is_control() && c != '\\' && !c.is_whitespace());
    (starts_well && clean && next.len() <= 2048).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::safe_next_path;

    #[test]
    fn console_paths_are_kept() {
        for path in ["/", "/people", "/apps/clock?view=week#item-3", "/a%2F%2Fb"] {
            assert_eq!(safe_next_path(path), Some(path));
        }
    }

    #[test]
    fn anything_that_could_leave_the_console_is_refused() {
        for path in [
            "",
            "people",
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "https://evil.example",
            "javascript:alert(1)",
            "/\tevil",
            "/ok\n//evil",
            "/x\\y",
            " /people",
        ] {
            assert_eq!(safe_next_path(path), None, "{path:?}");
        }
    }

    #[test]
    fn overlong_paths_are_refused() {
        assert_eq!(safe_next_path(&format!("/{}", "a".repeat(4096))), None);
    }
}
