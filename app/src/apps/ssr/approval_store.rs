//! Approvals in the database (SPEC §8): the shared signing key, and the spent nonces that
//! make each approval run its call once.

use rand::RngCore;
use sqlx::PgPool;
use uuid::Uuid;

use super::approvals::{ApprovalSecret, SECRET_MIN_BYTES, Verified};
use crate::audit::ssr::event::ApprovedCall;
use crate::audit::ssr::writer::{self, Actor, AuditEvent};
use crate::metrics;

/// The `host_secrets` row of the approval key.
const SECRET_NAME: &str = "approval";

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("reading the approval secret: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the stored approval secret is shorter than {SECRET_MIN_BYTES} bytes")]
    TooShort,
}

/// The approval key every instance on this database shares: created by the first to ask
/// (a conflict means another instance was first), then read, so all of them use that one.
pub async fn shared_secret(pool: &PgPool) -> Result<ApprovalSecret, SecretError> {
    let mut fresh = vec![0u8; SECRET_MIN_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut fresh);
    sqlx::query!(
        "INSERT INTO host_secrets (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        SECRET_NAME,
        fresh,
    )
    .execute(pool)
    .await?;
    let stored = sqlx::query_scalar!(
        "SELECT secret FROM host_secrets WHERE name = $1",
        SECRET_NAME
    )
    .fetch_one(pool)
    .await?;
    ApprovalSecret::new(stored).ok_or(SecretError::TooShort)
}

/// Whether an approval was spent now, or had been before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    Now,
    Already,
}

/// Spends `person`'s verified approval of `tool` of `slug`: its nonce and its
/// `approval_used` row commit together, before the call is made, so a call that runs always
/// has its approval on record, and a nonce spent twice (two tabs, a replay) runs nothing.
pub async fn spend(
    pool: &PgPool,
    person: Uuid,
    email: &str,
    slug: &str,
    tool: &str,
    arguments_sha256: &str,
    approval: &Verified,
) -> Result<Spent, sqlx::Error> {
    let actor = Actor::person(person, email);
    let mut tx = pool.begin().await?;
    if !insert_spend(&mut tx, &approval.nonce, person, approval.expires_at).await? {
        return Ok(Spent::Already);
    }
    let event = AuditEvent::ApprovalUsed {
        call: ApprovedCall {
            tool: tool.to_owned(),
            arguments_sha256: arguments_sha256.to_owned(),
        },
        nonce: approval.nonce.clone(),
    };
    writer::append(&mut tx, &actor, &event, Some(slug)).await?;
    tx.commit().await?;
    metrics::approval(metrics::Approval::Spent);
    Ok(Spent::Now)
}

/// Records `nonce` as spent; `false` when it already was (the primary key conflicts:
/// another spend of it committed first, or is committing now and this one waited for it).
async fn insert_spend(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    nonce: &str,
    person: Uuid,
    expires_at: i64,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO approval_spends (nonce, user_id, expires_at) VALUES ($1, $2, to_timestamp($3))
         ON CONFLICT (nonce) DO NOTHING",
        nonce,
        person,
        expires_at as f64,
    )
    .execute(&mut **tx)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// What the approval panel shows of a tool besides its name: its title (`title`, else
/// `annotations.title`) and its description, as discovery last recorded the definition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolWords {
    pub title: Option<String>,
    pub description: String,
}

pub async fn tool_words(pool: &PgPool, slug: &str, tool: &str) -> Result<ToolWords, sqlx::Error> {
    let body = sqlx::query_scalar!(
        "SELECT body FROM server_items WHERE slug = $1 AND kind = 'tool' AND key = $2",
        slug,
        tool,
    )
    .fetch_optional(pool)
    .await?;
    let definition: serde_json::Value = body
        .and_then(|body| serde_json::from_slice(&body).ok())
        .unwrap_or_default();
    let text = |value: Option<&serde_json::Value>| {
        value.and_then(serde_json::Value::as_str).map(str::to_owned)
    };
    Ok(ToolWords {
        title: text(definition.get("title"))
            .or_else(|| text(definition.pointer("/annotations/title"))),
        description: text(definition.get("description")).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::ssr::approvals::{Binding, mint_at, verify_at};
    use serde_json::json;

    async fn person(pool: &PgPool) -> Uuid {
        sqlx::query_scalar(
            "INSERT INTO users (issuer, subject, email) VALUES ('t', 's', 'p@example.com') RETURNING id",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    }

    fn approval(secret: &ApprovalSecret, person: Uuid) -> Verified {
        let binding = Binding {
            person,
            session: "s".into(),
            slug: "notes".into(),
            tool: "write-note".into(),
            arguments_sha256: "a".into(),
        };
        let minted = mint_at(secret, &binding, 1_000);
        verify_at(secret, &minted.token, &binding, 1_001).unwrap()
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn every_instance_on_a_database_shares_one_secret(pool: PgPool) {
        let first = shared_secret(&pool).await.unwrap();
        let second = shared_secret(&pool).await.unwrap();
        let person = Uuid::new_v4();
        let binding = Binding {
            person,
            session: "s".into(),
            slug: "notes".into(),
            tool: "t".into(),
            arguments_sha256: "a".into(),
        };
        let minted = mint_at(&first, &binding, 1_000);
        assert!(verify_at(&second, &minted.token, &binding, 1_001).is_ok());
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM host_secrets")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(rows, 1);
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn an_approval_is_spent_once_with_its_audit_row(pool: PgPool) {
        let secret = shared_secret(&pool).await.unwrap();
        let person = person(&pool).await;
        let verified = approval(&secret, person);
        let spend_it = || {
            spend(
                &pool,
                person,
                "p@example.com",
                "notes",
                "write-note",
                "a",
                &verified,
            )
        };
        assert_eq!(spend_it().await.unwrap(), Spent::Now);
        assert_eq!(spend_it().await.unwrap(), Spent::Already);
        let used: Vec<serde_json::Value> = sqlx::query_scalar(
            "SELECT payload FROM audit_log WHERE kind = 'approval_used' ORDER BY id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(
            used,
            vec![json!({"tool": "write-note", "arguments_sha256": "a", "nonce": verified.nonce})]
        );
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_spend_whose_audit_row_fails_leaves_the_approval_unspent(pool: PgPool) {
        let secret = shared_secret(&pool).await.unwrap();
        let person = person(&pool).await;
        let verified = approval(&secret, person);
        let spend_it = || {
            spend(
                &pool,
                person,
                "p@example.com",
                "notes",
                "write-note",
                "a",
                &verified,
            )
        };
        sqlx::raw_sql(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'refused'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON audit_log FOR EACH ROW
             WHEN (NEW.kind = 'approval_used') EXECUTE FUNCTION refuse();",
        )
        .execute(&pool)
        .await
        .unwrap();
        assert!(spend_it().await.is_err());
        sqlx::raw_sql("DROP TRIGGER refuse ON audit_log")
            .execute(&pool)
            .await
            .unwrap();
        assert_eq!(spend_it().await.unwrap(), Spent::Now);
    }
}
