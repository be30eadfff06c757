//! PostgreSQL: the database is created when missing, then migrated, at start-up.

use std::time::Duration;

use sqlx::Postgres;
use sqlx::migrate::{MigrateDatabase, Migrator};
use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::config::{DatabaseConfig, redact_url};

/// The migrations in `migrations/`, embedded in the binary.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// Creates the database named in the URL if it does not exist, connects, and applies every
/// pending migration. Errors name the (redacted) URL.
pub async fn connect_and_migrate(config: &DatabaseConfig) -> anyhow::Result<PgPool> {
    let url = config.url.expose();
    let shown = redact_url(url);
    let exists = Postgres::database_exists(url)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach PostgreSQL at {shown}: {e}"))?;
    if !exists {
        Postgres::create_database(url)
            .await
            .map_err(|e| anyhow::anyhow!("cannot create the database at {shown}: {e}"))?;
        tracing::info!(database.url = %shown, "created the database");
    }
    let pool = pool_options()
        .connect(url)
        .await
        .map_err(|e| anyhow::anyhow!("cannot connect to {shown}: {e}"))?;
    migrate(&pool).await?;
    Ok(pool)
}

/// How strad pools its connections. A connection is not pinged before each use (sqlx's
/// default): that doubled the round trips of every request, and a broken connection fails
/// its one query and is dropped anyway.
pub fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(5))
        .test_before_acquire(false)
}

/// Applies pending migrations: strad's own, then the session store's table.
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR
        .run(pool)
        .await
        .map_err(|e| anyhow::anyhow!("migrations failed: {e}"))?;
    tower_sessions_sqlx_store::PostgresStore::new(pool.clone())
        .migrate()
        .await
        .map_err(|e| anyhow::anyhow!("session store migration failed: {e}"))?;
    // The session table is the store's, made after strad's migrations: its announcement
    // (`authority_cache`) is added here, every start, in a form that may run again.
    sqlx::raw_sql(SESSION_CHANGES)
        .execute(pool)
        .await
        .map_err(|e| anyhow::anyhow!("session change trigger failed: {e}"))?;
    Ok(())
}

/// A changed or deleted session announces its id on `authority_cache::CHANNEL`. One statement list, so
/// one transaction: instances starting together take turns (the lock) instead of failing on
/// each other's DDL.
const SESSION_CHANGES: &str = "
SELECT pg_advisory_xact_lock(8319400174281651557);
CREATE OR REPLACE FUNCTION strad_session_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('strad_auth', 'session:' || OLD.id);
    ELSE
        PERFORM pg_notify('strad_auth', 'session:' || NEW.id);
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER session_auth_changed
    AFTER UPDATE OR DELETE ON tower_sessions.session
    FOR EACH ROW EXECUTE FUNCTION strad_session_changed();
CREATE OR REPLACE TRIGGER session_auth_truncated
    AFTER TRUNCATE ON tower_sessions.session
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
";

/// Ready: the database answers and every embedded migration has been applied.
pub async fn is_ready(pool: &PgPool) -> Result<(), String> {
    let applied =
        sqlx::query_scalar!(r#"SELECT count(*) AS "applied!" FROM _sqlx_migrations WHERE success"#)
            .fetch_one(pool)
            .await
            .map_err(|e| format!("database: {e}"))?;
    let expected = MIGRATOR.iter().count() as i64;
    if applied >= expected {
        Ok(())
    } else {
        Err(format!("{applied} of {expected} migrations applied"))
    }
}
