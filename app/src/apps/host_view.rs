//! What the host page draws around a running app, outside its frame (SPEC §8): the prompt
//! waiting for the person's decision, the server's island actions, the page's log and the
//! display mode. The bridge fills these signals; the components (`approval_panel`,
//! `island_actions`, `app_inspect`) draw them. Nothing here is written by the frame: every
//! value comes from the bridge's own reading of a message or of a console route's answer.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One decision the host asks of the person before it does something for the app.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    /// The bridge's number for it (the answer names it).
    pub id: u64,
    pub ask: Ask,
    /// When the person may press Approve (ms since the epoch): a page that raises a prompt
    /// under a pending click or key press does not get it approved by that press.
    pub armed_at: f64,
    /// Set when the page stopped waiting before the person decided.
    pub stale: Option<String>,
}

/// What is asked.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// Run a tool that changes things: asked for by the app, or pressed as an island action.
    ToolCall {
        server: String,
        tool: String,
        title: Option<String>,
        description: String,
        /// The exact arguments, pretty-printed and bounded (`shown_arguments`).
        arguments: String,
        from_action: bool,
    },
    /// Open a link whose host is not on the server's allow-list.
    OpenLink {
        url: String,
        host: String,
        host_ascii: String,
    },
    /// Save files the app offers.
    Download { files: Vec<FileLine> },
    /// Copy text to the clipboard.
    Clipboard { text: String },
}

impl Ask {
    /// The panel's `data-prompt`.
    pub fn kind(&self) -> &'static str {
        match self {
            Ask::ToolCall { .. } => "tool-call",
            Ask::OpenLink { .. } => "open-link",
            Ask::Download { .. } => "download",
            Ask::Clipboard { .. } => "clipboard",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FileLine {
    pub name: String,
    pub content_type: String,
    pub size: Option<usize>,
}

/// What the person chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    Approve,
    Decline,
}

/// An island action as the server vetted it (`apps::actions`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionView {
    pub label: String,
    pub tool: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default)]
    pub kind: String,
    pub drawn: bool,
    #[serde(default)]
    pub why: Option<String>,
    /// The tool's own title and description, for a drawn action.
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// One `notifications/message` from the page.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    pub at: String,
    pub level: String,
    pub logger: Option<String>,
    pub data: String,
}

/// Lines kept for Inspect; older ones are dropped.
pub const LOG_LINES_MAX: usize = 100;
/// Bytes of arguments shown in a prompt; the rest is cut, and the prompt says so.
pub const SHOWN_ARGUMENTS_MAX: usize = 8 * 1024;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DisplayMode {
    #[default]
    Inline,
    Fullscreen,
}

impl DisplayMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DisplayMode::Inline => "inline",
            DisplayMode::Fullscreen => "fullscreen",
        }
    }
}

/// The signals of one app frame's host controls.
#[derive(Clone, Copy)]
pub struct HostView {
    pub prompts: RwSignal<Vec<Prompt>>,
    pub actions: RwSignal<Vec<ActionView>>,
    pub log: RwSignal<Vec<LogLine>>,
    pub display_mode: RwSignal<DisplayMode>,
    /// What the last decision did, said once.
    pub outcome: RwSignal<Option<String>>,
}

impl HostView {
    pub fn new() -> Self {
        Self {
            prompts: RwSignal::new(Vec::new()),
            actions: RwSignal::new(Vec::new()),
            log: RwSignal::new(Vec::new()),
            display_mode: RwSignal::new(DisplayMode::Inline),
            outcome: RwSignal::new(None),
        }
    }
}

impl Default for HostView {
    fn default() -> Self {
        Self::new()
    }
}

/// Arguments as a prompt shows them: pretty JSON, cut at `SHOWN_ARGUMENTS_MAX` bytes with a
/// note saying how much was left out. Shown as text, never as markup.
pub fn shown_arguments(arguments: &Value) -> String {
    let pretty = serde_json::to_string_pretty(arguments).unwrap_or_default();
    if pretty.len() <= SHOWN_ARGUMENTS_MAX {
        return pretty;
    }
    let mut end = SHOWN_ARGUMENTS_MAX;
    while !pretty.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} more bytes not shown)",
        &pretty[..end],
        pretty.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_shown_pretty_and_bounded() {
        assert_eq!(
            shown_arguments(&json!({"to": "a@b"})),
            "{\n  \"to\": \"a@b\"\n}"
        );
        let huge = json!({"body": "é".repeat(10_000)});
        let shown = shown_arguments(&huge);
        assert!(shown.len() < SHOWN_ARGUMENTS_MAX + 64);
        assert!(shown.ends_with("more bytes not shown)"));
    }
}
