//! Each event's payload against the JSON its rows have always held: the audit page, the
//! exports and existing rows read these fields.

use serde_json::json;

use super::*;
use crate::entitlements::policy::WritingRule;
use crate::servers::ssr::changes::{Change, ItemKind};

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn call() -> ApprovedCall {
    ApprovedCall {
        tool: "write-note".into(),
        arguments_sha256: "abc".into(),
    }
}

fn pin() -> Pin {
    Pin {
        uri: "ui://notes".into(),
        sha256: "d1".into(),
        size: 12,
        server_fingerprint: "f1".into(),
    }
}

fn assert_row(event: AuditEvent, kind: &str, payload: Value) {
    assert_eq!(event.kind().as_str(), kind, "{event:?}");
    assert_eq!(event.payload(), payload, "{event:?}");
}

#[test]
fn sign_ins_record_how() {
    assert_row(
        AuditEvent::SignIn {
            issuer: "https://issuer".into(),
        },
        "sign_in",
        json!({"issuer": "https://issuer", "via": "browser"}),
    );
    assert_row(
        AuditEvent::TokenSignIn { token_id: id(1) },
        "sign_in",
        json!({"via": "login token", "token_id": id(1)}),
    );
    assert_row(AuditEvent::SignOut, "sign_out", json!({}));
}

#[test]
fn role_changes_record_the_email_and_role() {
    assert_row(
        AuditEvent::RoleGranted {
            email: "a@example.com".into(),
            role: Role::Auditor,
            reason: None,
        },
        "role_granted",
        json!({"email": "a@example.com", "role": "auditor"}),
    );
    assert_row(
        AuditEvent::RoleGranted {
            email: "a@example.com".into(),
            role: Role::Admin,
            reason: Some("bootstrap admin".into()),
        },
        "role_granted",
        json!({"email": "a@example.com", "role": "admin", "reason": "bootstrap admin"}),
    );
    assert_row(
        AuditEvent::RoleRevoked {
            email: "a@example.com".into(),
            role: Role::Admin,
        },
        "role_revoked",
        json!({"email": "a@example.com", "role": "admin"}),
    );
}

#[test]
fn entitlements_record_the_grant_with_nulls_for_the_other_grantee() {
    assert_row(
        AuditEvent::EntitlementGranted {
            grant_id: 7,
            email: Some("a@example.com".into()),
            domain: None,
            reason: None,
        },
        "entitlement_granted",
        json!({"grant_id": 7, "email": "a@example.com", "domain": null}),
    );
    assert_row(
        AuditEvent::EntitlementGranted {
            grant_id: 7,
            email: None,
            domain: Some("example.com".into()),
            reason: Some("local mode".into()),
        },
        "entitlement_granted",
        json!({"grant_id": 7, "email": null, "domain": "example.com", "reason": "local mode"}),
    );
    assert_row(
        AuditEvent::EntitlementRevoked {
            grant_id: 7,
            email: None,
            domain: Some("example.com".into()),
        },
        "entitlement_revoked",
        json!({"grant_id": 7, "email": null, "domain": "example.com"}),
    );
}

#[test]
fn a_policy_change_records_old_and_new() {
    let new = Policy {
        writing_from_apps: WritingRule::Ask,
        ..Policy::default()
    };
    assert_row(
        AuditEvent::PolicyChanged {
            old: Policy::default(),
            new: new.clone(),
            reason: None,
        },
        "policy_changed",
        json!({"old": Policy::default(), "new": new}),
    );
    assert_row(
        AuditEvent::PolicyChanged {
            old: Policy::default(),
            new: new.clone(),
            reason: Some("the demo asks before it writes".into()),
        },
        "policy_changed",
        json!({"old": Policy::default(), "new": new,
            "reason": "the demo asks before it writes"}),
    );
}

#[test]
fn read_only_marks_record_the_tool_and_its_fingerprint() {
    assert_row(
        AuditEvent::ReadOnlyMarked {
            tool: "t".into(),
            digest: "d".into(),
        },
        "read_only_marked",
        json!({"tool": "t", "digest": "d"}),
    );
    assert_row(
        AuditEvent::ReadOnlyUnmarked {
            tool: "t".into(),
            digest: "d".into(),
        },
        "read_only_unmarked",
        json!({"tool": "t", "digest": "d"}),
    );
    assert_row(
        AuditEvent::ReadOnlyMarkCleared {
            tool: "t".into(),
            marked_digest: "d".into(),
        },
        "read_only_mark_cleared",
        json!({"tool": "t", "marked_digest": "d", "reason": "the tool's definition changed"}),
    );
}

#[test]
fn tokens_record_their_id_and_name() {
    assert_row(
        AuditEvent::TokenMinted {
            token_id: id(1),
            name: "laptop".into(),
            expires_at: "2030-01-01 00:00 UTC".into(),
        },
        "token_minted",
        json!({"token_id": id(1), "name": "laptop", "expires_at": "2030-01-01 00:00 UTC"}),
    );
    assert_row(
        AuditEvent::TokenRevoked {
            token_id: id(1),
            name: "laptop".into(),
            owner_id: id(2),
        },
        "token_revoked",
        json!({"token_id": id(1), "name": "laptop", "owner_id": id(2)}),
    );
}

#[test]
fn server_changes_record_the_settings() {
    let old = json!({"display_name": "A", "enabled": true});
    let new = json!({"display_name": "B", "enabled": false});
    assert_row(
        AuditEvent::ServerRegistered {
            server: old.clone(),
        },
        "server_registered",
        old.clone(),
    );
    assert_row(
        AuditEvent::ServerChanged {
            old: old.clone(),
            new: new.clone(),
            reason: None,
        },
        "server_changed",
        json!({"old": old, "new": new}),
    );
    assert_row(
        AuditEvent::ServerChanged {
            old: old.clone(),
            new: new.clone(),
            reason: Some("no longer declared".into()),
        },
        "server_changed",
        json!({"old": old, "new": new, "reason": "no longer declared"}),
    );
    assert_row(
        AuditEvent::LinkHostsChanged {
            before: vec![],
            after: vec!["example.com".into()],
        },
        "link_hosts_changed",
        json!({"before": [], "after": ["example.com"]}),
    );
}

#[test]
fn an_app_change_records_the_change_as_discovery_found_it() {
    let change = AppChange {
        item_kind: ItemKind::Tool,
        item: "t".into(),
        change: Change::Changed,
        old_digest: Some("a".into()),
        new_digest: Some("b".into()),
        old_size: Some(1),
        new_size: Some(2),
        diff: "-a\n+b".into(),
    };
    assert_row(
        AuditEvent::AppChange(change.clone()),
        "app_change",
        serde_json::to_value(&change).unwrap(),
    );
}

#[test]
fn pins_record_the_resource_and_its_digests() {
    let pinned = json!({"uri": "ui://notes", "sha256": "d1", "size": 12,
        "server_fingerprint": "f1"});
    assert_row(AuditEvent::AppPinned(pin()), "app_pinned", pinned.clone());
    assert_row(AuditEvent::AppRepinned(pin()), "app_repinned", pinned);
    assert_row(
        AuditEvent::AppPinRevoked {
            uri: "ui://notes".into(),
            sha256: "d1".into(),
        },
        "app_pin_revoked",
        json!({"uri": "ui://notes", "sha256": "d1"}),
    );
}

#[test]
fn a_host_action_records_what_was_asked_and_answered() {
    assert_row(
        AuditEvent::HostAction {
            action: "open-link",
            decision: "allowed",
            detail: json!({"url": "https://example.com"}),
        },
        "host_action",
        json!({"action": "open-link", "decision": "allowed",
            "detail": {"url": "https://example.com"}}),
    );
}

#[test]
fn approvals_record_the_call_and_what_became_of_it() {
    assert_row(
        AuditEvent::ApprovalGranted {
            call: call(),
            minted: Some(MintedApproval {
                nonce: "n1".into(),
                expires_at: 1_700_000_000,
            }),
        },
        "approval_granted",
        json!({"tool": "write-note", "arguments_sha256": "abc", "nonce": "n1",
            "expires_at": 1_700_000_000}),
    );
    assert_row(
        AuditEvent::ApprovalGranted {
            call: call(),
            minted: None,
        },
        "approval_granted",
        json!({"tool": "write-note", "arguments_sha256": "abc"}),
    );
    assert_row(
        AuditEvent::ApprovalDeclined { call: call() },
        "approval_declined",
        json!({"tool": "write-note", "arguments_sha256": "abc"}),
    );
    assert_row(
        AuditEvent::ApprovalAbandoned { call: call() },
        "approval_expired",
        json!({"tool": "write-note", "arguments_sha256": "abc",
            "reason": "the app stopped waiting"}),
    );
    assert_row(
        AuditEvent::ApprovalExpired {
            call: call(),
            nonce: "n1".into(),
        },
        "approval_expired",
        json!({"tool": "write-note", "arguments_sha256": "abc", "nonce": "n1"}),
    );
    assert_row(
        AuditEvent::ApprovalUsed {
            call: call(),
            nonce: "n1".into(),
        },
        "approval_used",
        json!({"tool": "write-note", "arguments_sha256": "abc", "nonce": "n1"}),
    );
}

#[test]
fn a_refused_write_records_the_request_and_the_token() {
    assert_row(
        AuditEvent::WriteRefused {
            method: "POST".into(),
            path: "/api/x".into(),
            token_id: Some(id(1)),
        },
        "write_refused",
        json!({"method": "POST", "path": "/api/x", "reason": "token session",
            "token_id": id(1)}),
    );
    assert_row(
        AuditEvent::WriteRefused {
            method: "POST".into(),
            path: "/api/x".into(),
            token_id: None,
        },
        "write_refused",
        json!({"method": "POST", "path": "/api/x", "reason": "token session",
            "token_id": null}),
    );
}

#[test]
fn a_tool_call_is_recorded_under_its_surfaces_kind() {
    let row = |surface, token_id, reference| {
        AuditEvent::ToolCall(ToolCallRow {
            surface,
            tool: "t".into(),
            arguments_sha256: "abc".into(),
            outcome: "ok".into(),
            bytes_in: 10,
            bytes_out: 20,
            token_id,
            reference,
        })
    };
    let plain = |surface: &str| {
        json!({"tool": "t", "arguments_sha256": "abc", "outcome": "ok", "bytes_in": 10,
            "bytes_out": 20, "surface": surface})
    };
    assert_row(
        row(Surface::Playground, None, None),
        "playground_tool_call",
        plain("playground"),
    );
    assert_row(row(Surface::App, None, None), "app_tool_call", plain("app"));
    assert_row(
        row(Surface::Host, None, None),
        "app_tool_call",
        plain("host"),
    );
    let mut mcp = plain("mcp");
    mcp["token_id"] = json!(id(1));
    assert_row(
        row(Surface::McpClient, Some(id(1)), None),
        "mcp_tool_call",
        mcp,
    );
    let mut failed = plain("playground");
    failed["reference"] = json!("r-1");
    assert_row(
        row(Surface::Playground, None, Some("r-1".into())),
        "playground_tool_call",
        failed,
    );
}
