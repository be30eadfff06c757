//! App-change detection: what differs between the items discovery stored last time and the
//! ones it found now, with a capped unified diff of the text (SPEC §4).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Diffs longer than this are cut (with a note), so one event stays a sane size.
pub const DIFF_CAP: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Tool,
    AppResource,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::AppResource => "app_resource",
        }
    }

    pub fn parse(value: &str) -> Option<ItemKind> {
        match value {
            "tool" => Some(ItemKind::Tool),
            "app_resource" => Some(ItemKind::AppResource),
            _ => None,
        }
    }
}

/// One fingerprinted item: a tool (body = its pretty canonical JSON) or an app resource
/// (body = its bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub kind: ItemKind,
    pub key: String,
    pub digest: String,
    pub size: i64,
    pub body: Vec<u8>,
    pub info: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Changed,
    Removed,
}

/// The payload of an `app_change` audit event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppChange {
    pub item_kind: ItemKind,
    pub item: String,
    pub change: Change,
    pub old_digest: Option<String>,
    pub new_digest: Option<String>,
    pub old_size: Option<i64>,
    pub new_size: Option<i64>,
    pub diff: String,
}

/// Every added, changed and removed item, ordered by kind then key.
pub fn changes(old: &[Item], new: &[Item]) -> Vec<AppChange> {
    let find = |items: &[Item], kind: ItemKind, key: &str| {
        items
            .iter()
            .find(|i| i.kind == kind && i.key == key)
            .cloned()
    };
    let mut keys: Vec<(ItemKind, String)> = old
        .iter()
        .chain(new.iter())
        .map(|i| (i.kind, i.key.clone()))
        .collect();
    keys.sort_by(|a, b| (a.0.as_str(), &a.1).cmp(&(b.0.as_str(), &b.1)));
    keys.dedup();
    keys.into_iter()
        .filter_map(|(kind, key)| {
            let before = find(old, kind, &key);
            let after = find(new, kind, &key);
            let change = match (&before, &after) {
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Removed,
                (Some(b), Some(a)) if b.digest != a.digest => Change::Changed,
                _ => return None,
            };
            let text = |item: &Option<Item>| {
                item.as_ref()
                    .map(|i| String::from_utf8_lossy(&i.body).into_owned())
                    .unwrap_or_default()
            };
            Some(AppChange {
                item_kind: kind,
                item: key,
                change,
                old_digest: before.as_ref().map(|i| i.digest.clone()),
                new_digest: after.as_ref().map(|i| i.digest.clone()),
                old_size: before.as_ref().map(|i| i.size),
                new_size: after.as_ref().map(|i| i.size),
                diff: unified_diff(&text(&before), &text(&after), DIFF_CAP),
            })
        })
        .collect()
}

/// A unified diff (3 lines of context), cut at `cap` bytes on a line boundary.
pub fn unified_diff(old: &str, new: &str, cap: usize) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("before", "after")
        .to_string();
    if text.len() <= cap {
        return text;
    }
    let mut cut = text[..text.floor_char_boundary(cap)].to_owned();
    if let Some(end) = cut.rfind('\n') {
        cut.truncate(end + 1);
    }
    cut.push_str(&format!("… diff cut at {cap} bytes of {}\n", text.len()));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(kind: ItemKind, key: &str, body: &str) -> Item {
        Item {
            kind,
            key: key.into(),
            digest: super::super::canonical::sha256_hex(body.as_bytes()),
            size: body.len() as i64,
            body: body.as_bytes().to_vec(),
            info: json!({}),
        }
    }

    #[test]
    fn nothing_changed_is_no_change() {
        let items = vec![
            item(ItemKind::Tool, "a", "x"),
            item(ItemKind::AppResource, "ui://a", "<p>"),
        ];
        assert!(changes(&items, &items.clone()).is_empty());
    }

    #[test]
    fn added_changed_and_removed_items_are_each_one_change() {
        let old = vec![
            item(ItemKind::Tool, "kept", "1"),
            item(ItemKind::Tool, "gone", "2"),
            item(ItemKind::AppResource, "ui://a", "<p>old</p>\n"),
        ];
        let new = vec![
            item(ItemKind::Tool, "kept", "1"),
            item(ItemKind::Tool, "new", "3"),
            item(ItemKind::AppResource, "ui://a", "<p>new</p>\n"),
        ];
        let found = changes(&old, &new);
        let summary: Vec<(&str, &str, Change)> = found
            .iter()
            .map(|c| (c.item_kind.as_str(), c.item.as_str(), c.change))
            .collect();
        assert_eq!(
            summary,
            [
                ("app_resource", "ui://a", Change::Changed),
                ("tool", "gone", Change::Removed),
                ("tool", "new", Change::Added)
            ]
        );
        let html = &found[0];
        assert_eq!(html.old_digest.as_deref(), Some(old[2].digest.as_str()));
        assert_eq!(html.new_digest.as_deref(), Some(new[2].digest.as_str()));
        assert!(
            html.diff.contains("-<p>old</p>") && html.diff.contains("+<p>new</p>"),
            "{}",
            html.diff
        );
        assert_eq!(found[1].new_digest, None);
        assert_eq!(found[2].old_size, None);
    }

    #[test]
    fn long_diffs_are_cut_with_a_note() {
        let old: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..5000).map(|i| format!("LINE {i}\n")).collect();
        let diff = unified_diff(&old, &new, 1000);
        assert!(diff.len() < 1100);
        assert!(diff.contains("diff cut at 1000 bytes"));
    }
}
