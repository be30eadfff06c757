//! Island actions: buttons a tool result proposes in `_meta["x-strad/actions"]`, drawn by the
//! host under the frame. A page cannot draw outside its frame, so every proposal is vetted
//! here first: well-formed, of this server, and a tool this person may call from an app. The
//! rules are one pure function so they read in one screen; the decision is passed in.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::entitlements::policy::{Decision, Refusal};

/// Actions drawn at most; the rest are listed as not drawn.
pub const MAX_DRAWN: usize = 6;
/// A label longer than this would not fit on a button.
const LABEL_CHARS: usize = 60;
/// The longest tool name accepted.
const TOOL_CHARS: usize = 128;
/// The largest arguments object accepted, as JSON text.
const ARGUMENTS_BYTES: usize = 16 * 1024;

/// How the host draws a button.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    #[default]
    Primary,
    Danger,
}

/// One proposed action, vetted: drawn as a button, or listed under Inspect with why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vetted {
    pub label: String,
    pub tool: String,
    pub arguments: Map<String, Value>,
    pub kind: ActionKind,
    pub drawn: bool,
    pub why: Option<String>,
}

/// A proposal parsed without its decision: refused already, or waiting on the decision for
/// its tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    action: Vetted,
    awaits_decision: bool,
}

impl Proposal {
    /// The tool whose decision this proposal waits on.
    pub fn awaited_tool(&self) -> Option<&str> {
        self.awaits_decision.then_some(self.action.tool.as_str())
    }
}

/// Every proposal in `actions` (the value of `_meta["x-strad/actions"]`, `None` when absent)
/// of a result from the server `slug`, checked for everything but the decision.
pub fn parse(actions: Option<&Value>, slug: &str) -> Vec<Proposal> {
    let Some(actions) = actions else {
        return Vec::new();
    };
    let Some(entries) = actions.as_array() else {
        let whole = refused(
            String::new(),
            String::new(),
            "x-strad/actions is not a list",
        );
        return vec![whole];
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| match entry_of(entry, slug) {
            Ok(action) if index < MAX_DRAWN => Proposal {
                action,
                awaits_decision: true,
            },
            Ok(action) => refused(action.label, action.tool, "more than 6 actions"),
            Err(_) if index >= MAX_DRAWN => {
                let (label, tool) = echoed(entry);
                refused(label, tool, "more than 6 actions")
            }
            Err(why) => {
                let (label, tool) = echoed(entry);
                refused(label, tool, &why)
            }
        })
        .collect()
}

/// The proposals with the decision for each awaited tool: a tool that may run, or run once
/// approved, is drawn; any refusal is said as why not.
pub fn decide_each(proposals: Vec<Proposal>, decide: impl Fn(&str) -> Decision) -> Vec<Vetted> {
    proposals
        .into_iter()
        .map(|proposal| {
            let mut action = proposal.action;
            if !proposal.awaits_decision {
                return action;
            }
            match decide(&action.tool) {
                Decision::Run | Decision::Ask => {
                    action.drawn = true;
                    action.why = None;
                }
                Decision::Refuse(Refusal::UnknownTool) => {
                    action.why = Some("the server has no such tool".into());
                }
                Decision::Refuse(_) => action.why = Some("outside this server's policy".into()),
            }
            action
        })
        .collect()
}

/// `parse`, then `decide_each`.
pub fn vet(actions: Option<&Value>, slug: &str, decide: impl Fn(&str) -> Decision) -> Vec<Vetted> {
    decide_each(parse(actions, slug), decide)
}

/// One entry, well-formed and naming no other server; else why not.
fn entry_of(entry: &Value, slug: &str) -> Result<Vetted, String> {
    let malformed = |what: &str| format!("malformed: {what}");
    let Some(entry) = entry.as_object() else {
        return Err(malformed("an action must be an object"));
    };
    let label = match entry.get("label").and_then(Value::as_str) {
        Some(label) if is_label(label) => label.to_owned(),
        _ => {
            return Err(malformed(
                "label must be 1 to 60 characters without control characters",
            ));
        }
    };
    let tool = match entry.get("tool").and_then(Value::as_str) {
        Some(tool) if (1..=TOOL_CHARS).contains(&tool.chars().count()) => tool.to_owned(),
        _ => return Err(malformed("tool must be a name of 1 to 128 characters")),
    };
    let arguments = match entry.get("arguments") {
        None => Map::new(),
        Some(Value::Object(arguments)) if json_len(arguments) <= ARGUMENTS_BYTES => {
            arguments.clone()
        }
        Some(_) => return Err(malformed("arguments must be an object of at most 16 KiB")),
    };
    let kind = match entry.get("kind").map(|k| k.as_str()) {
        None => ActionKind::Primary,
        Some(Some("primary")) => ActionKind::Primary,
        Some(Some("danger")) => ActionKind::Danger,
        Some(_) => return Err(malformed("kind must be primary or danger")),
    };
    // A result may only propose its own server's tools: the button is drawn under this
    // server's name, and runs with this server's entitlement.
    if entry
        .get("server")
        .is_some_and(|server| server.as_str() != Some(slug))
    {
        return Err("names another server".into());
    }
    Ok(Vetted {
        label,
        tool,
        arguments,
        kind,
        drawn: false,
        why: None,
    })
}

fn is_label(label: &str) -> bool {
    (1..=LABEL_CHARS).contains(&label.chars().count()) && !label.chars().any(char::is_control)
}

fn json_len(arguments: &Map<String, Value>) -> usize {
    serde_json::to_string(arguments).map_or(usize::MAX, |text| text.len())
}

/// What of a refused entry is shown under Inspect: its label and tool when they are strings,
/// cut to their limits and without control characters.
fn echoed(entry: &Value) -> (String, String) {
    let text = |key: &str, limit: usize| {
        entry
            .get(key)
            .and_then(Value::as_str)
            .map(|s| s.chars().filter(|c| !c.is_control()).take(limit).collect())
            .unwrap_or_default()
    };
    (text("label", LABEL_CHARS), text("tool", TOOL_CHARS))
}

fn refused(label: String, tool: String, why: &str) -> Proposal {
    Proposal {
        action: Vetted {
            label,
            tool,
            arguments: Map::new(),
            kind: ActionKind::Primary,
            drawn: false,
            why: Some(why.to_owned()),
        },
        awaits_decision: false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every tool runs but `writer` (asks), `ghost` (unknown) and `hidden` (not in policy).
    fn decide(tool: &str) -> Decision {
        match tool {
            "writer" => Decision::Ask,
            "ghost" => Decision::Refuse(Refusal::UnknownTool),
            "hidden" => Decision::Refuse(Refusal::NotInPolicy),
            "token" => Decision::Refuse(Refusal::TokenSession),
            _ => Decision::Run,
        }
    }

    fn vetted(actions: Value) -> Vec<Vetted> {
        vet(Some(&actions), "clock", decide)
    }

    fn one(entry: Value) -> Vetted {
        let mut all = vetted(json!([entry]));
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    fn why(entry: Value) -> Option<String> {
        one(entry).why
    }

    #[test]
    fn no_proposed_actions_vet_to_none() {
        assert_eq!(vet(None, "clock", decide), []);
        assert_eq!(vetted(json!([])), []);
    }

    #[test]
    fn a_value_that_is_not_a_list_is_one_entry_not_drawn() {
        for value in [
            json!({"label": "Go", "tool": "t"}),
            json!("go"),
            json!(null),
        ] {
            let all = vetted(value);
            assert_eq!(all.len(), 1);
            assert_eq!(all[0].label, "");
            assert!(!all[0].drawn);
            assert_eq!(all[0].why.as_deref(), Some("x-strad/actions is not a list"));
        }
    }

    #[test]
    fn a_well_formed_action_of_a_tool_that_runs_is_drawn_as_proposed() {
        let action = one(json!({"label": "Refresh", "tool": "refresh",
            "arguments": {"city": "Oslo"}, "kind": "danger", "server": "clock"}));
        assert_eq!(
            action,
            Vetted {
                label: "Refresh".into(),
                tool: "refresh".into(),
                arguments: json!({"city": "Oslo"}).as_object().unwrap().clone(),
                kind: ActionKind::Danger,
                drawn: true,
                why: None,
            }
        );
    }

    #[test]
    fn absent_arguments_are_empty_and_an_absent_kind_is_primary() {
        let action = one(json!({"label": "Go", "tool": "go"}));
        assert!(action.drawn);
        assert_eq!(action.arguments, Map::new());
        assert_eq!(action.kind, ActionKind::Primary);
    }

    #[test]
    fn a_tool_that_asks_first_is_drawn_and_the_approval_comes_when_pressed() {
        assert!(one(json!({"label": "Save", "tool": "writer"})).drawn);
    }

    #[test]
    fn a_refused_tool_is_not_drawn_and_says_why() {
        let refused = |tool: &str| one(json!({"label": "Go", "tool": tool}));
        let ghost = refused("ghost");
        assert!(!ghost.drawn);
        assert_eq!(ghost.why.as_deref(), Some("the server has no such tool"));
        for tool in ["hidden", "token"] {
            let action = refused(tool);
            assert!(!action.drawn, "{tool}");
            assert_eq!(action.why.as_deref(), Some("outside this server's policy"));
        }
    }

    #[test]
    fn an_action_naming_another_server_is_not_drawn_whatever_its_tool() {
        for server in [json!("weather"), json!(""), json!(null), json!(["clock"])] {
            let action = one(json!({"label": "Go", "tool": "go", "server": server}));
            assert!(!action.drawn);
            assert_eq!(action.why.as_deref(), Some("names another server"));
        }
    }

    #[test]
    fn an_entry_that_is_not_an_object_is_malformed() {
        for entry in [json!("Go"), json!(1), json!(null), json!([])] {
            let why = why(entry.clone()).unwrap();
            assert!(why.starts_with("malformed: "), "{entry}: {why}");
        }
    }

    #[test]
    fn labels_must_be_1_to_60_characters_without_control_characters() {
        let label = |label: Value| one(json!({"label": label, "tool": "go"}));
        assert!(label(json!("x".repeat(60))).drawn);
        assert!(label(json!("é".repeat(60))).drawn, "characters, not bytes");
        assert!(label(json!("Save & close")).drawn);
        for bad in [
            json!(""),
            json!("x".repeat(61)),
            json!("two\nlines"),
            json!("bell\u{7}"),
            json!("next\u{85}line"),
            json!(7),
            json!(null),
        ] {
            let action = label(bad.clone());
            assert!(!action.drawn, "{bad}");
            assert!(action.why.unwrap().starts_with("malformed: label"), "{bad}");
        }
        let missing = one(json!({"tool": "go"}));
        assert!(missing.why.unwrap().starts_with("malformed: label"));
    }

    #[test]
    fn tools_must_be_names_of_1_to_128_characters() {
        assert!(one(json!({"label": "Go", "tool": "t".repeat(128)})).drawn);
        for bad in [json!(""), json!("t".repeat(129)), json!(3), json!(null)] {
            let why = why(json!({"label": "Go", "tool": bad})).unwrap();
            assert!(why.starts_with("malformed: tool"), "{bad}: {why}");
        }
        let why = why(json!({"label": "Go"})).unwrap();
        assert!(why.starts_with("malformed: tool"));
    }

    #[test]
    fn arguments_must_be_an_object_of_at_most_16_kib() {
        // `{"a":"…"}` is 8 bytes around the text.
        let fits = json!({"a": "x".repeat(ARGUMENTS_BYTES - 8)});
        assert_eq!(serde_json::to_string(&fits).unwrap().len(), ARGUMENTS_BYTES);
        assert!(one(json!({"label": "Go", "tool": "go", "arguments": fits})).drawn);
        let over = json!({"a": "x".repeat(ARGUMENTS_BYTES - 7)});
        for bad in [over, json!([1]), json!("a=1"), json!(null)] {
            let action = one(json!({"label": "Go", "tool": "go", "arguments": bad}));
            assert!(!action.drawn);
            assert!(action.why.unwrap().starts_with("malformed: arguments"));
            assert_eq!(action.arguments, Map::new(), "nothing malformed is echoed");
        }
    }

    #[test]
    fn kind_must_be_primary_or_danger() {
        let kind = |kind: Value| one(json!({"label": "Go", "tool": "go", "kind": kind}));
        assert_eq!(kind(json!("primary")).kind, ActionKind::Primary);
        assert_eq!(kind(json!("danger")).kind, ActionKind::Danger);
        for bad in [json!("Danger"), json!("secondary"), json!(null), json!(1)] {
            let action = kind(bad.clone());
            assert!(!action.drawn, "{bad}");
            assert!(action.why.unwrap().starts_with("malformed: kind"));
        }
    }

    #[test]
    fn a_malformed_entry_echoes_only_its_label_and_tool_cut_and_cleaned() {
        let action = one(json!({"label": format!("a\u{1b}[31m{}", "b".repeat(80)),
            "tool": "go", "kind": "loud"}));
        assert!(!action.drawn);
        assert_eq!(action.label, format!("a[31m{}", "b".repeat(55)));
        assert_eq!(action.tool, "go");
        let action = one(json!({"label": 5, "tool": {"x": 1}}));
        assert_eq!((action.label.as_str(), action.tool.as_str()), ("", ""));
    }

    #[test]
    fn the_seventh_action_on_is_not_drawn() {
        let entries: Vec<Value> = (0..9)
            .map(|i| json!({"label": format!("A{i}"), "tool": "go"}))
            .collect();
        let all = vetted(Value::Array(entries));
        assert_eq!(all.len(), 9);
        assert!(all[..6].iter().all(|a| a.drawn && a.why.is_none()));
        for action in &all[6..] {
            assert!(!action.drawn);
            assert_eq!(action.why.as_deref(), Some("more than 6 actions"));
        }
        assert_eq!(all[8].label, "A8");
    }

    #[test]
    fn refused_actions_count_toward_the_six() {
        let mut entries = vec![json!("junk"); 6];
        entries.push(json!({"label": "Late", "tool": "go"}));
        let all = vetted(Value::Array(entries));
        assert!(all.iter().all(|a| !a.drawn));
        assert_eq!(all[6].why.as_deref(), Some("more than 6 actions"));
    }

    #[test]
    fn only_the_first_six_well_formed_tools_await_a_decision() {
        let mut entries: Vec<Value> = (0..8)
            .map(|i| json!({"label": "Go", "tool": format!("t{i}")}))
            .collect();
        entries[1] = json!({"label": "Go", "tool": "t1", "server": "weather"});
        entries[2] = json!({"label": "", "tool": "t2"});
        let proposals = parse(Some(&Value::Array(entries)), "clock");
        let awaited: Vec<&str> = proposals
            .iter()
            .filter_map(Proposal::awaited_tool)
            .collect();
        assert_eq!(awaited, ["t0", "t3", "t4", "t5"]);
    }

    #[test]
    fn the_decision_is_asked_only_for_awaited_tools() {
        let asked = std::cell::RefCell::new(Vec::new());
        let all = vet(
            Some(
                &json!([{"label": "Go", "tool": "a"}, {"label": "", "tool": "b"},
                {"label": "Go", "tool": "c", "server": "x"}]),
            ),
            "clock",
            |tool| {
                asked.borrow_mut().push(tool.to_owned());
                Decision::Run
            },
        );
        assert_eq!(asked.into_inner(), ["a"]);
        assert_eq!(all.iter().filter(|a| a.drawn).count(), 1);
    }

    #[test]
    fn vetted_actions_serialize_as_the_page_reads_them() {
        let action = one(json!({"label": "Go", "tool": "ghost", "kind": "danger"}));
        assert_eq!(
            serde_json::to_value(&action).unwrap(),
            json!({"label": "Go", "tool": "ghost", "arguments": {}, "kind": "danger",
                "drawn": false, "why": "the server has no such tool"})
        );
        let back: Vetted = serde_json::from_value(serde_json::to_value(&action).unwrap()).unwrap();
        assert_eq!(back, action);
    }
}
