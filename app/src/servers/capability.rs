use serde::{Deserialize, Serialize};

/// What an admin approved a server for: the authority ceiling (SPEC §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Tools,
    Prompts,
    Resources,
    Apps,
}

impl Capability {
    pub const ALL: [Capability; 4] = [
        Capability::Tools,
        Capability::Prompts,
        Capability::Resources,
        Capability::Apps,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Tools => "tools",
            Capability::Prompts => "prompts",
            Capability::Resources => "resources",
            Capability::Apps => "apps",
        }
    }

    pub fn parse(value: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == value)
    }
}
