//! The command line: `strad` serves; `strad audit verify` checks the audit chain (SPEC §10)
//! and exits 0 when it is intact, 1 when a row is broken, 2 on a usage or start-up error.

use app::audit::ssr::writer;
use sqlx::PgPool;

use crate::config::Config;
use crate::db;

pub const USAGE: &str = "usage: strad [audit verify]";

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Serve,
    AuditVerify,
}

impl Command {
    /// The command named by the arguments after the program name; `None` is a usage error.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Option<Command> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        match args.as_slice() {
            [] => Some(Command::Serve),
            ["audit", "verify"] => Some(Command::AuditVerify),
            _ => None,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Intact { rows: i64 },
    BrokenAt { id: i64 },
}

impl Verdict {
    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Intact { .. } => 0,
            Verdict::BrokenAt { .. } => 1,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Intact { rows } => write!(f, "audit log intact: {rows} rows"),
            Verdict::BrokenAt { id } => write!(f, "audit log broken at row {id}"),
        }
    }
}

/// `strad audit verify`: needs only the database setting, and binds nothing. Prints the
/// verdict and returns the exit code.
pub async fn run_audit_verify(config: &Config) -> anyhow::Result<i32> {
    let pool = db::connect_and_migrate(&config.database).await?;
    let verdict = verify(&pool).await;
    pool.close().await;
    let verdict = verdict.map_err(|e| anyhow::anyhow!("cannot read the audit log: {e}"))?;
    println!("{verdict}");
    Ok(verdict.exit_code())
}

/// Walks the chain and counts the rows in one read-only snapshot, so rows appended while it
/// runs are in neither.
pub async fn verify(pool: &PgPool) -> Result<Verdict, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let verdict = match writer::first_broken_row(&mut tx).await? {
        Some(id) => Verdict::BrokenAt { id },
        None => Verdict::Intact {
            rows: sqlx::query_scalar("SELECT count(*) FROM audit_log")
                .fetch_one(&mut *tx)
                .await?,
        },
    };
    tx.rollback().await?;
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_serve() {
        assert_eq!(Command::parse::<&str>(&[]), Some(Command::Serve));
    }

    #[test]
    fn audit_verify_is_the_only_subcommand() {
        assert_eq!(
            Command::parse(&["audit", "verify"]),
            Some(Command::AuditVerify)
        );
        for args in [
            &["audit"][..],
            &["verify"],
            &["audit", "verify", "extra"],
            &["audit", "Verify"],
            &["--help"],
            &["serve"],
        ] {
            assert_eq!(Command::parse(args), None, "{args:?}");
        }
    }

    #[test]
    fn verdicts_print_and_exit_as_documented() {
        let intact = Verdict::Intact { rows: 3 };
        assert_eq!(intact.to_string(), "audit log intact: 3 rows");
        assert_eq!(intact.exit_code(), 0);
        let broken = Verdict::BrokenAt { id: 42 };
        assert_eq!(broken.to_string(), "audit log broken at row 42");
        assert_eq!(broken.exit_code(), 1);
    }
}
