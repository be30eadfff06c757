use serde::{Deserialize, Serialize};

/// A role is data in Postgres (`roles` table); this enum mirrors its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Role {
    Member,
    Admin,
    Auditor,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Member, Role::Admin, Role::Auditor];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
            Role::Auditor => "auditor",
        }
    }

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_round_trips_through_its_name() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
    }

    #[test]
    fn unknown_or_differently_cased_names_are_not_roles() {
        assert_eq!(Role::parse("Admin"), None);
        assert_eq!(Role::parse("root"), None);
        assert_eq!(Role::parse(""), None);
    }
}
