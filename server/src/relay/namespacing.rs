//! Names and URIs as an `/mcp` client sees them: namespaced per slug, and mapped back on
//! the way in.

use serde_json::Value;

/// Separates a slug from a tool name (slugs are `[a-z0-9-]`, so it cannot occur in one).
pub const SEPARATOR: &str = "__";

/// `<slug>__<tool>`.
pub fn namespaced(slug: &str, tool: &str) -> String {
    format!("{slug}{SEPARATOR}{tool}")
}

/// The slug and tool of a namespaced name; `None` when it is not one.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let (slug, tool) = name.split_once(SEPARATOR)?;
    (app::servers::is_valid_slug(slug) && !tool.is_empty()).then_some((slug, tool))
}

/// `ui://x/y` of `slug` as the client sees it: `ui://<slug>/x/y`.
pub fn relayed_uri(slug: &str, uri: &str) -> Option<String> {
    uri.strip_prefix("ui://")
        .map(|rest| format!("ui://{slug}/{rest}"))
}

/// The slug and the server's own URI of a relayed `ui://` URI.
pub fn original_uri(uri: &str) -> Option<(&str, String)> {
    let rest = uri.strip_prefix("ui://")?;
    let (slug, inner) = rest.split_once('/')?;
    (app::servers::is_valid_slug(slug) && !inner.is_empty())
        .then(|| (slug, format!("ui://{inner}")))
}

/// Any other resource of `slug` as the client sees it: `strad://<slug>/<its own URI>`.
/// Clients treat resource URIs as opaque, so the server's URI rides along unchanged.
pub fn relayed_resource_uri(slug: &str, uri: &str) -> String {
    format!("{RESOURCE_SCHEME}{slug}/{uri}")
}

/// The slug and the server's own URI of a relayed `strad://` URI (never a `ui://` one: app
/// resources are reached only under `ui://`, and only from servers approved for apps).
pub fn original_resource_uri(uri: &str) -> Option<(&str, &str)> {
    let (slug, inner) = uri.strip_prefix(RESOURCE_SCHEME)?.split_once('/')?;
    (app::servers::is_valid_slug(slug) && !inner.is_empty() && !inner.starts_with("ui://"))
        .then_some((slug, inner))
}

const RESOURCE_SCHEME: &str = "strad://";

/// A server's own resources or templates (`field` holds their URI) as the client sees them,
/// under `strad://<slug>/`; app (`ui://`) ones are left out.
pub(super) fn relay_plain<'a>(
    slug: &'a str,
    listed: Vec<Value>,
    field: &'a str,
) -> impl Iterator<Item = Value> + 'a {
    listed.into_iter().filter_map(move |mut entry| {
        let uri = entry.get(field)?.as_str()?;
        if uri.starts_with("ui://") {
            return None;
        }
        entry[field] = Value::String(relayed_resource_uri(slug, uri));
        Some(entry)
    })
}

/// Points a tool's app resource at the relayed URI (both metadata keys), or removes it when
/// the server may not show apps.
pub(super) fn rewrite_tool_meta(definition: &mut Value, slug: &str, apps: bool) {
    let Some(meta) = definition.get_mut("_meta").and_then(Value::as_object_mut) else {
        return;
    };
    let rewrite = |value: &mut Value| {
        if let Some(uri) = value
            .as_str()
            .and_then(|u| if apps { relayed_uri(slug, u) } else { None })
        {
            *value = Value::String(uri);
            true
        } else {
            false
        }
    };
    if let Some(flat) = meta.get_mut("ui/resourceUri")
        && !rewrite(flat)
    {
        meta.remove("ui/resourceUri");
    }
    if let Some(ui) = meta.get_mut("ui").and_then(Value::as_object_mut)
        && let Some(uri) = ui.get_mut("resourceUri")
        && !rewrite(uri)
    {
        ui.remove("resourceUri");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_and_uris_are_namespaced_and_mapped_back() {
        assert_eq!(namespaced("clock", "get-time"), "clock__get-time");
        assert_eq!(split_name("clock__get-time"), Some(("clock", "get-time")));
        assert_eq!(split_name("clock__a__b"), Some(("clock", "a__b")));
        assert_eq!(split_name("get-time"), None);
        assert_eq!(split_name("Bad_Slug__x"), None);
        assert_eq!(split_name("clock__"), None);
        assert_eq!(
            relayed_uri("clock", "ui://clock/app.html").as_deref(),
            Some("ui://clock/clock/app.html")
        );
        assert_eq!(
            original_uri("ui://clock/clock/app.html"),
            Some(("clock", "ui://clock/app.html".into()))
        );
        assert_eq!(original_uri("ui://clock"), None);
        assert_eq!(original_uri("https://clock/x"), None);
        assert_eq!(relayed_uri("clock", "https://x"), None);
        assert_eq!(
            relayed_resource_uri("clock", "file:///a/b.txt"),
            "strad://clock/file:///a/b.txt"
        );
        assert_eq!(
            original_resource_uri("strad://clock/file:///a/b.txt"),
            Some(("clock", "file:///a/b.txt"))
        );
        assert_eq!(
            original_resource_uri("strad://clock/ui://x/app.html"),
            None,
            "app resources are not reachable around the apps approval"
        );
        assert_eq!(original_resource_uri("strad://Clock/x"), None);
        assert_eq!(original_resource_uri("strad://clock/"), None);
    }

    #[test]
    fn tool_meta_points_at_the_relayed_resource() {
        let mut tool = json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://a/b.html", "visibility": ["model"]}, "ui/resourceUri": "ui://a/b.html"}});
        rewrite_tool_meta(&mut tool, "s", true);
        assert_eq!(tool["_meta"]["ui"]["resourceUri"], "ui://s/a/b.html");
        assert_eq!(tool["_meta"]["ui/resourceUri"], "ui://s/a/b.html");
        rewrite_tool_meta(&mut tool, "s", false);
        assert!(tool["_meta"]["ui"].get("resourceUri").is_none());
        assert!(tool["_meta"].get("ui/resourceUri").is_none());
    }
}
