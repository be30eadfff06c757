//! Login token queries. The secret exists in memory only while it is minted and shown;
//! the table holds its SHA-256.

use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::{FromRow, PgExecutor, Postgres, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::auth::ssr::users;

/// Prefix of every token, so a leaked one is recognisable (and greppable) as strad's.
pub const PREFIX: &str = "strad_";

/// A freshly minted secret. Not `Serialize`, and `Debug` is redacted.
pub struct TokenSecret(String);

impl TokenSecret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSecret([redacted])")
    }
}

#[derive(Clone, Debug, FromRow)]
pub struct TokenRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub last_used_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
}

pub fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error("the person already holds {limit} live tokens")]
    TooMany { limit: u32 },
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Mints a token unless its person already holds `limit` live ones (unrevoked, unexpired).
/// The person's row is locked first, inside the caller's transaction, so two mints at once
/// are counted one after the other and cannot both pass the limit. (`FOR NO KEY UPDATE`:
/// it excludes another mint, not the rows of other tables that merely refer to the person.)
pub async fn mint(
    tx: &mut Transaction<'_, Postgres>,
    user_id: Uuid,
    name: &str,
    lifetime: time::Duration,
    limit: u32,
) -> Result<(TokenRow, TokenSecret), MintError> {
    sqlx::query!("SELECT FROM users WHERE id = $1 FOR NO KEY UPDATE", user_id)
        .execute(&mut **tx)
        .await?;
    let live = sqlx::query_scalar!(
        r#"SELECT count(*) AS "live!" FROM login_tokens
         WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()"#,
        user_id,
    )
    .fetch_one(&mut **tx)
    .await?;
    if live >= i64::from(limit) {
        return Err(MintError::TooMany { limit });
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = format!(
        "{PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    // `lifetime as _`: a `time::Duration` encodes as the interval the statement expects.
    let row = sqlx::query_as!(
        TokenRow,
        "INSERT INTO login_tokens (user_id, name, hash, expires_at) VALUES ($1, $2, $3, now() + $4)
         RETURNING id, user_id, name, created_at, expires_at, last_used_at, revoked_at",
        user_id,
        name,
        hash(&secret),
        lifetime as _,
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok((row, TokenSecret(secret)))
}

/// The live token with this secret (not revoked, not expired), marking it used.
pub async fn verify(
    db: impl PgExecutor<'_>,
    secret: &str,
) -> Result<Option<TokenRow>, sqlx::Error> {
    if !secret.starts_with(PREFIX) || secret.len() > 200 {
        return Ok(None);
    }
    sqlx::query_as!(
        TokenRow,
        "UPDATE login_tokens SET last_used_at = now()
         WHERE hash = $1 AND revoked_at IS NULL AND expires_at > now()
         RETURNING id, user_id, name, created_at, expires_at, last_used_at, revoked_at",
        hash(secret),
    )
    .fetch_optional(db)
    .await
}

/// Whether the token `id` still lives (not revoked, not expired): a token session lasts
/// only as long as its token.
pub async fn is_live(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM login_tokens
                        WHERE id = $1 AND revoked_at IS NULL AND expires_at > now()) AS "live!""#,
        id,
    )
    .fetch_one(db)
    .await
}

/// The owner of a live token, with their roles, and when the token expires, in one
/// statement: what `/mcp` needs on every request. `last_used_at` is kept to the minute, so a
/// busy client does not turn every request into a write (a commit that waits for the disk).
pub async fn verify_with_owner(
    db: impl PgExecutor<'_>,
    secret: &str,
) -> Result<Option<(Uuid, users::UserRow, Vec<crate::auth::Role>, OffsetDateTime)>, sqlx::Error> {
    if !secret.starts_with(PREFIX) || secret.len() > 200 {
        return Ok(None);
    }
    let row = sqlx::query!(
        r#"WITH t AS (
             SELECT id, user_id, last_used_at, expires_at FROM login_tokens
             WHERE hash = $1 AND revoked_at IS NULL AND expires_at > now()),
         touched AS (
             UPDATE login_tokens SET last_used_at = now()
             WHERE id IN (SELECT id FROM t
                          WHERE last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
             RETURNING id)
         SELECT t.id AS "token_id!", t.expires_at AS "expires_at!",
                u.id, u.issuer, u.subject, u.email, u.display_name, u.created_at,
                u.last_sign_in_at,
                COALESCE(array_agg(r.role ORDER BY r.role) FILTER (WHERE r.role IS NOT NULL),
                         '{}') AS "roles!"
         FROM t JOIN users u ON u.id = t.user_id LEFT JOIN user_roles r ON r.user_id = u.id
         GROUP BY t.id, t.expires_at, u.id"#,
        hash(secret),
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| {
        let user = users::UserRow {
            id: row.id,
            issuer: row.issuer,
            subject: row.subject,
            email: row.email,
            display_name: row.display_name,
            created_at: row.created_at,
            last_sign_in_at: row.last_sign_in_at,
        };
        (
            row.token_id,
            user,
            users::known_roles(&row.roles),
            row.expires_at,
        )
    }))
}

pub async fn list(
    db: impl PgExecutor<'_>,
    user_id: Option<Uuid>,
) -> Result<Vec<(TokenRow, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT t.id, t.user_id, t.name, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, u.email
         FROM login_tokens t JOIN users u ON u.id = t.user_id
         WHERE $1::uuid IS NULL OR t.user_id = $1
         ORDER BY t.created_at DESC",
        user_id,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let token = TokenRow {
                id: r.id,
                user_id: r.user_id,
                name: r.name,
                created_at: r.created_at,
                expires_at: r.expires_at,
                last_used_at: r.last_used_at,
                revoked_at: r.revoked_at,
            };
            (token, r.email)
        })
        .collect())
}

/// Revokes a token (of `owner` only, when given). Returns it when it was live.
pub async fn revoke(
    db: impl PgExecutor<'_>,
    id: Uuid,
    owner: Option<Uuid>,
) -> Result<Option<TokenRow>, sqlx::Error> {
    sqlx::query_as!(
        TokenRow,
        "UPDATE login_tokens SET revoked_at = now()
         WHERE id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR user_id = $2)
         RETURNING id, user_id, name, created_at, expires_at, last_used_at, revoked_at",
        id,
        owner,
    )
    .fetch_optional(db)
    .await
}
