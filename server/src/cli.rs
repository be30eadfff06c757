//! The command line: `strad` serves; `strad audit verify` checks the audit chain (SPEC §10)
//! and exits 0 when it is intact, 1 when a row is broken, 2 on a usage or start-up error;
//! `strad demo-server` speaks the demo MCP Apps server on stdio (local mode starts it).

use app::audit::ChainReport;
use app::audit::ssr::chain;

use crate::config::Config;
use crate::db;

pub const USAGE: &str = "usage: strad [audit verify | demo-server]";

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Serve,
    AuditVerify,
    DemoServer,
}

impl Command {
    /// The command named by the arguments after the program name; `None` is a usage error.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Option<Command> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        match args.as_slice() {
            [] => Some(Command::Serve),
            ["audit", "verify"] => Some(Command::AuditVerify),
            ["demo-server"] => Some(Command::DemoServer),
            _ => None,
        }
    }
}

/// What `strad audit verify` prints: the verdict, then the chain's head, to write down
/// outside the database (rows later removed from the end break no link; a noted head that
/// is gone shows them).
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict(pub ChainReport);

impl Verdict {
    pub fn exit_code(&self) -> i32 {
        match self.0.first_broken {
            None => 0,
            Some(_) => 1,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.first_broken {
            None => writeln!(f, "audit log intact: {} rows", self.0.rows)?,
            Some(id) => writeln!(f, "audit log broken at row {id}")?,
        }
        match &self.0.head {
            Some(head) => write!(f, "head: row {}, sha256 {}", head.id, head.hash),
            None => write!(f, "head: none (the log is empty)"),
        }
    }
}

/// `strad audit verify`: needs only the database setting, and binds nothing. Prints the
/// verdict and returns the exit code.
pub async fn run_audit_verify(config: &Config) -> anyhow::Result<i32> {
    let pool = db::connect_and_migrate(&config.database).await?;
    let report = chain::check(&pool).await;
    pool.close().await;
    let verdict = Verdict(report.map_err(|e| anyhow::anyhow!("cannot read the audit log: {e}"))?);
    println!("{verdict}");
    Ok(verdict.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::audit::ChainHead;

    #[test]
    fn no_arguments_serve() {
        assert_eq!(Command::parse::<&str>(&[]), Some(Command::Serve));
    }

    #[test]
    fn audit_verify_and_demo_server_are_the_only_subcommands() {
        assert_eq!(
            Command::parse(&["audit", "verify"]),
            Some(Command::AuditVerify)
        );
        assert_eq!(Command::parse(&["demo-server"]), Some(Command::DemoServer));
        for args in [
            &["audit"][..],
            &["verify"],
            &["audit", "verify", "extra"],
            &["audit", "Verify"],
            &["--help"],
            &["serve"],
            &["demo-server", "--stdio"],
        ] {
            assert_eq!(Command::parse(args), None, "{args:?}");
        }
    }

    #[test]
    fn verdicts_print_and_exit_as_documented() {
        let head = Some(ChainHead {
            id: 3,
            hash: "ab".repeat(32),
        });
        let intact = Verdict(ChainReport {
            rows: 3,
            first_broken: None,
            head: head.clone(),
        });
        assert_eq!(
            intact.to_string(),
            format!(
                "audit log intact: 3 rows\nhead: row 3, sha256 {}",
                "ab".repeat(32)
            )
        );
        assert_eq!(intact.exit_code(), 0);
        let broken = Verdict(ChainReport {
            rows: 3,
            first_broken: Some(2),
            head,
        });
        assert!(
            broken
                .to_string()
                .starts_with("audit log broken at row 2\nhead: row 3, sha256 ")
        );
        assert_eq!(broken.exit_code(), 1);
        let empty = Verdict(ChainReport {
            rows: 0,
            first_broken: None,
            head: None,
        });
        assert_eq!(
            empty.to_string(),
            "audit log intact: 0 rows\nhead: none (the log is empty)"
        );
    }
}
