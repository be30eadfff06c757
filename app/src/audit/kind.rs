//! What an audit row records, as one closed set (SPEC §10). The stored names never change:
//! existing rows, and the hash chain over them, hold them as written.

/// One table of kinds and their stored names, so the enum, `ALL`, `as_str` and `parse` can
/// never disagree.
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident => $name:literal,)+) => {
        /// The kind of an audit row.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum AuditKind {
            $($(#[$doc])* $kind,)+
        }

        impl AuditKind {
            /// Every kind, in the order the audit page offers them.
            pub const ALL: &[AuditKind] = &[$(AuditKind::$kind,)+];

            /// The name stored in `audit_log.kind`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AuditKind::$kind => $name,)+
                }
            }

            pub fn parse(name: &str) -> Option<AuditKind> {
                match name {
                    $($name => Some(AuditKind::$kind),)+
                    _ => None,
                }
            }
        }
    };
}

kinds! {
    /// A person signed in, in a browser or with a login token.
    SignIn => "sign_in",
    SignOut => "sign_out",
    RoleGranted => "role_granted",
    RoleRevoked => "role_revoked",
    EntitlementGranted => "entitlement_granted",
    EntitlementRevoked => "entitlement_revoked",
    PolicyChanged => "policy_changed",
    ReadOnlyMarked => "read_only_marked",
    ReadOnlyUnmarked => "read_only_unmarked",
    /// Discovery saw a marked tool change, so its mark no longer holds.
    ReadOnlyMarkCleared => "read_only_mark_cleared",
    TokenMinted => "token_minted",
    TokenRevoked => "token_revoked",
    ServerRegistered => "server_registered",
    ServerChanged => "server_changed",
    LinkHostsChanged => "link_hosts_changed",
    /// Discovery found a tool or app resource added, changed or removed.
    AppChange => "app_change",
    AppPinned => "app_pinned",
    AppRepinned => "app_repinned",
    AppPinRevoked => "app_pin_revoked",
    /// A page asked the host to act outside its frame; what the person answered.
    HostAction => "host_action",
    ApprovalGranted => "approval_granted",
    ApprovalDeclined => "approval_declined",
    ApprovalExpired => "approval_expired",
    ApprovalUsed => "approval_used",
    /// A login-token session tried to change something.
    WriteRefused => "write_refused",
    AppToolCall => "app_tool_call",
    PlaygroundToolCall => "playground_tool_call",
    McpToolCall => "mcp_tool_call",
}

impl std::fmt::Display for AuditKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_stored_name() {
        for &kind in AuditKind::ALL {
            assert_eq!(AuditKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(AuditKind::parse("no_such_kind"), None);
        assert_eq!(AuditKind::parse("Sign_In"), None, "names are exact");
    }

    #[test]
    fn no_two_kinds_share_a_name() {
        let names: std::collections::HashSet<_> =
            AuditKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), AuditKind::ALL.len());
    }

    #[test]
    fn the_stored_names_are_those_existing_rows_hold() {
        let names: Vec<_> = AuditKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "sign_in",
                "sign_out",
                "role_granted",
                "role_revoked",
                "entitlement_granted",
                "entitlement_revoked",
                "policy_changed",
                "read_only_marked",
                "read_only_unmarked",
                "read_only_mark_cleared",
                "token_minted",
                "token_revoked",
                "server_registered",
                "server_changed",
                "link_hosts_changed",
                "app_change",
                "app_pinned",
                "app_repinned",
                "app_pin_revoked",
                "host_action",
                "approval_granted",
                "approval_declined",
                "approval_expired",
                "approval_used",
                "write_refused",
                "app_tool_call",
                "playground_tool_call",
                "mcp_tool_call",
            ]
        );
    }

    #[test]
    fn the_audit_page_offers_every_kind_and_only_kinds() {
        let offered = crate::pages::audit_page::kind_options();
        assert_eq!(offered.len(), AuditKind::ALL.len());
        for name in offered {
            assert!(AuditKind::parse(name).is_some(), "{name}");
        }
    }
}
