//! The tool-call decision (SPEC §5, §8), as one pure function: given who is asking, from
//! which surface, under which policy, for which tool, may it run?

use serde::{Deserialize, Serialize};

use crate::audit::AuditKind;
use crate::servers::Capability;

/// Where a tool call comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Surface {
    /// A person calling a tool by hand in the console.
    Playground,
    /// A page served as an MCP App, through the host's bridge.
    App,
    /// An MCP client on `/mcp`, authenticated by a login token.
    McpClient,
    /// The host's own opening call of the tool that declares an app (SPEC §6 lifecycle): an
    /// app call that no page asked for, so visibility does not bind it, and it runs only
    /// when read-only.
    Host,
}

impl Surface {
    /// The capabilities a server must be approved for to be called from this surface
    /// (SPEC §4: approved capabilities are a ceiling on every surface).
    pub fn needs(self) -> &'static [Capability] {
        match self {
            Surface::Playground | Surface::McpClient => &[Capability::Tools],
            Surface::App | Surface::Host => &[Capability::Tools, Capability::Apps],
        }
    }

    /// The audit kind of a call from this surface.
    pub fn audit_kind(self) -> AuditKind {
        match self {
            Surface::App | Surface::Host => AuditKind::AppToolCall,
            Surface::Playground => AuditKind::PlaygroundToolCall,
            Surface::McpClient => AuditKind::McpToolCall,
        }
    }

    /// The audit payload's name of this surface.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Playground => "playground",
            Surface::App => "app",
            Surface::McpClient => "mcp",
            Surface::Host => "host",
        }
    }
}

/// Which tools a surface may call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolList {
    All,
    Only(Vec<String>),
}

impl ToolList {
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            ToolList::All => true,
            ToolList::Only(names) => names.iter().any(|n| n == tool),
        }
    }
}

/// What an app's request for a writing tool does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WritingRule {
    /// Answer 403 (the default).
    #[default]
    Deny,
    /// The host draws an approval outside the frame.
    Ask,
}

impl WritingRule {
    pub fn as_str(self) -> &'static str {
        match self {
            WritingRule::Deny => "deny",
            WritingRule::Ask => "ask",
        }
    }

    pub fn parse(value: &str) -> Option<WritingRule> {
        match value {
            "deny" => Some(WritingRule::Deny),
            "ask" => Some(WritingRule::Ask),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub playground: ToolList,
    pub apps: ToolList,
    pub writing_from_apps: WritingRule,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            playground: ToolList::All,
            apps: ToolList::All,
            writing_from_apps: WritingRule::Deny,
        }
    }
}

/// What discovery and the admin know of one tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFacts {
    pub visible_to_model: bool,
    pub visible_to_app: bool,
    pub read_only_hint: bool,
    pub marked_read_only: bool,
}

impl ToolFacts {
    /// Read-only: annotated `readOnlyHint: true` by the server, or marked by an admin
    /// (SPEC §5). Everything else writes.
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint || self.marked_read_only
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// A session signed in from a login token may view but not call tools.
    TokenSession,
    /// The server did not list this tool at the last discovery.
    UnknownTool,
    /// The tool's visibility leaves this surface out.
    NotVisible,
    /// The slug's policy does not list this tool for this surface.
    NotInPolicy,
    /// A writing tool asked for by an app, under the `deny` rule; or, for the host's
    /// opening call, any writing tool (the page calls it when the person asks).
    WritingDenied,
    /// The server is not approved for what this surface needs (tools; apps for an app).
    NotApproved,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    Run,
    /// Run only after the person approves it in the host (an app's writing tool, `ask`).
    Ask,
    Refuse(Refusal),
}

/// The decision for a person already known to be entitled to a slug whose server is
/// approved for `approved`.
pub fn decide(
    token_session: bool,
    surface: Surface,
    approved: &[Capability],
    policy: &Policy,
    tool: &str,
    facts: Option<&ToolFacts>,
) -> Decision {
    if token_session && surface != Surface::McpClient {
        return Decision::Refuse(Refusal::TokenSession);
    }
    if !surface.needs().iter().all(|c| approved.contains(c)) {
        return Decision::Refuse(Refusal::NotApproved);
    }
    let Some(facts) = facts else {
        return Decision::Refuse(Refusal::UnknownTool);
    };
    let (visible, list) = match surface {
        Surface::App => (facts.visible_to_app, &policy.apps),
        // The host's own call is no page's: visibility does not bind it, the list does.
        Surface::Host => (true, &policy.apps),
        // A tool hidden from the model is hidden from people calling tools by hand too.
        Surface::Playground | Surface::McpClient => (facts.visible_to_model, &policy.playground),
    };
    if !visible {
        return Decision::Refuse(Refusal::NotVisible);
    }
    if !list.allows(tool) {
        return Decision::Refuse(Refusal::NotInPolicy);
    }
    match (surface, facts.is_read_only(), policy.writing_from_apps) {
        (Surface::Host, false, _) | (Surface::App, false, WritingRule::Deny) => {
            Decision::Refuse(Refusal::WritingDenied)
        }
        (Surface::App, false, WritingRule::Ask) => Decision::Ask,
        _ => Decision::Run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(model: bool, app: bool, hint: bool, mark: bool) -> ToolFacts {
        ToolFacts {
            visible_to_model: model,
            visible_to_app: app,
            read_only_hint: hint,
            marked_read_only: mark,
        }
    }

    const WRITER: fn() -> ToolFacts = || facts(true, true, false, false);
    const ALL: &[Capability] = &Capability::ALL;

    #[test]
    fn approved_capabilities_are_a_ceiling_on_every_surface() {
        let reader = facts(true, true, true, false);
        let decision = |surface, approved: &[Capability]| {
            decide(
                false,
                surface,
                approved,
                &Policy::default(),
                "r",
                Some(&reader),
            )
        };
        let not_approved = Decision::Refuse(Refusal::NotApproved);
        for surface in [
            Surface::Playground,
            Surface::App,
            Surface::McpClient,
            Surface::Host,
        ] {
            assert_eq!(decision(surface, &[]), not_approved, "{surface:?}");
            assert_eq!(
                decision(surface, &[Capability::Apps, Capability::Resources]),
                not_approved,
                "{surface:?}"
            );
            assert_eq!(decision(surface, ALL), Decision::Run, "{surface:?}");
        }
        for surface in [Surface::App, Surface::Host] {
            assert_eq!(decision(surface, &[Capability::Tools]), not_approved);
        }
        for surface in [Surface::Playground, Surface::McpClient] {
            assert_eq!(decision(surface, &[Capability::Tools]), Decision::Run);
        }
    }

    #[test]
    fn the_hosts_opening_call_runs_a_read_only_tool_whatever_its_visibility() {
        let ask = Policy {
            writing_from_apps: WritingRule::Ask,
            ..Policy::default()
        };
        let model_only_reader = facts(true, false, true, false);
        assert_eq!(
            decide(
                false,
                Surface::Host,
                ALL,
                &ask,
                "r",
                Some(&model_only_reader)
            ),
            Decision::Run
        );
        assert_eq!(
            decide(false, Surface::Host, ALL, &ask, "w", Some(&WRITER())),
            Decision::Refuse(Refusal::WritingDenied)
        );
        let listed = Policy {
            apps: ToolList::Only(vec!["other".into()]),
            ..Policy::default()
        };
        assert_eq!(
            decide(
                false,
                Surface::Host,
                ALL,
                &listed,
                "r",
                Some(&model_only_reader)
            ),
            Decision::Refuse(Refusal::NotInPolicy)
        );
        assert_eq!(
            decide(
                true,
                Surface::Host,
                ALL,
                &ask,
                "r",
                Some(&model_only_reader)
            ),
            Decision::Refuse(Refusal::TokenSession)
        );
    }

    #[test]
    fn a_token_session_never_calls_a_tool_from_the_console() {
        for surface in [Surface::Playground, Surface::App, Surface::Host] {
            assert_eq!(
                decide(
                    true,
                    surface,
                    ALL,
                    &Policy::default(),
                    "t",
                    Some(&facts(true, true, true, false))
                ),
                Decision::Refuse(Refusal::TokenSession)
            );
        }
        assert_eq!(
            decide(
                true,
                Surface::McpClient,
                ALL,
                &Policy::default(),
                "t",
                Some(&WRITER())
            ),
            Decision::Run
        );
    }

    #[test]
    fn an_unknown_tool_is_refused() {
        assert_eq!(
            decide(
                false,
                Surface::Playground,
                ALL,
                &Policy::default(),
                "t",
                None
            ),
            Decision::Refuse(Refusal::UnknownTool)
        );
    }

    #[test]
    fn visibility_decides_the_surface() {
        let app_only = facts(false, true, true, false);
        let model_only = facts(true, false, true, false);
        assert_eq!(
            decide(
                false,
                Surface::App,
                ALL,
                &Policy::default(),
                "t",
                Some(&app_only)
            ),
            Decision::Run
        );
        assert_eq!(
            decide(
                false,
                Surface::Playground,
                ALL,
                &Policy::default(),
                "t",
                Some(&app_only)
            ),
            Decision::Refuse(Refusal::NotVisible)
        );
        assert_eq!(
            decide(
                false,
                Surface::McpClient,
                ALL,
                &Policy::default(),
                "t",
                Some(&app_only)
            ),
            Decision::Refuse(Refusal::NotVisible)
        );
        assert_eq!(
            decide(
                false,
                Surface::App,
                ALL,
                &Policy::default(),
                "t",
                Some(&model_only)
            ),
            Decision::Refuse(Refusal::NotVisible)
        );
        assert_eq!(
            decide(
                false,
                Surface::Playground,
                ALL,
                &Policy::default(),
                "t",
                Some(&model_only)
            ),
            Decision::Run
        );
    }

    #[test]
    fn the_policy_list_of_each_surface_applies() {
        let policy = Policy {
            playground: ToolList::Only(vec!["a".into()]),
            apps: ToolList::Only(vec!["b".into()]),
            writing_from_apps: WritingRule::Ask,
        };
        let reader = facts(true, true, true, false);
        assert_eq!(
            decide(false, Surface::Playground, ALL, &policy, "a", Some(&reader)),
            Decision::Run
        );
        assert_eq!(
            decide(false, Surface::Playground, ALL, &policy, "b", Some(&reader)),
            Decision::Refuse(Refusal::NotInPolicy)
        );
        assert_eq!(
            decide(false, Surface::McpClient, ALL, &policy, "b", Some(&reader)),
            Decision::Refuse(Refusal::NotInPolicy)
        );
        assert_eq!(
            decide(false, Surface::App, ALL, &policy, "b", Some(&reader)),
            Decision::Run
        );
        assert_eq!(
            decide(false, Surface::App, ALL, &policy, "a", Some(&reader)),
            Decision::Refuse(Refusal::NotInPolicy)
        );
    }

    #[test]
    fn an_apps_writing_tool_is_denied_by_default_and_asked_under_ask() {
        assert_eq!(
            decide(
                false,
                Surface::App,
                ALL,
                &Policy::default(),
                "w",
                Some(&WRITER())
            ),
            Decision::Refuse(Refusal::WritingDenied)
        );
        let ask = Policy {
            writing_from_apps: WritingRule::Ask,
            ..Policy::default()
        };
        assert_eq!(
            decide(false, Surface::App, ALL, &ask, "w", Some(&WRITER())),
            Decision::Ask
        );
    }

    #[test]
    fn a_read_only_tool_runs_from_an_app_whether_annotated_or_marked() {
        for read_only in [
            facts(true, true, true, false),
            facts(true, true, false, true),
        ] {
            assert_eq!(
                decide(
                    false,
                    Surface::App,
                    ALL,
                    &Policy::default(),
                    "r",
                    Some(&read_only)
                ),
                Decision::Run
            );
        }
    }

    #[test]
    fn a_person_runs_writing_tools_by_hand_in_the_playground() {
        assert_eq!(
            decide(
                false,
                Surface::Playground,
                ALL,
                &Policy::default(),
                "w",
                Some(&WRITER())
            ),
            Decision::Run
        );
    }
}
