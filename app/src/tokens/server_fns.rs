use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenView {
    pub id: String,
    pub owner: String,
    pub name: String,
    pub created: String,
    pub expires: String,
    pub last_used: Option<String>,
    pub revoked: bool,
    pub expired: bool,
}

/// A token as minted: the only time its secret leaves the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MintedToken {
    pub token: TokenView,
    pub secret: String,
}

#[cfg(feature = "ssr")]
fn view(row: &super::ssr::store::TokenRow, owner: &str) -> TokenView {
    use crate::servers::ssr::views::format_time;
    TokenView {
        id: row.id.to_string(),
        owner: owner.to_owned(),
        name: row.name.clone(),
        created: format_time(row.created_at),
        expires: format_time(row.expires_at),
        last_used: row.last_used_at.map(format_time),
        revoked: row.revoked_at.is_some(),
        expired: row.expires_at <= time::OffsetDateTime::now_utc(),
    }
}

/// Mints a token for the signed-in person (a browser session only: a token cannot mint
/// more tokens), while they hold fewer live ones than `auth.tokens_per_person`. Audited;
/// the secret is in the answer and nowhere else.
#[server(prefix = "/api", endpoint = "tokens/mint")]
pub async fn mint_token(name: String, days: u32) -> Result<MintedToken, AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use crate::tokens::ssr::store::MintError;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let form_post = crate::error::is_form_post();
    let session: tower_sessions::Session =
        leptos_axum::extract().await.map_err(AppError::internal)?;
    // A browser session only: a token cannot mint more tokens.
    let ctx = RequestContext::require_writer(crate::auth::Role::Member).await?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 80 || name.chars().any(char::is_control) {
        return Err(responder.fail(AppError::Invalid {
            field: "name".into(),
        }));
    }
    if !(1..=365).contains(&days) {
        return Err(responder.fail(AppError::Invalid {
            field: "days".into(),
        }));
    }
    let mut tx = state.pool.begin().await?;
    let (row, secret) = super::ssr::store::mint(
        &mut tx,
        ctx.user.id,
        name,
        time::Duration::days(days.into()),
        state.tokens_per_person,
    )
    .await
    .map_err(|err| match err {
        MintError::TooMany { limit } => responder.fail(AppError::TooManyTokens { limit }),
        MintError::Database(err) => err.into(),
    })?;
    let event = AuditEvent::TokenMinted {
        token_id: row.id,
        name: row.name.clone(),
        expires_at: view(&row, "").expires,
    };
    writer::append(&mut tx, &ctx.actor(), &event, None).await?;
    tx.commit().await?;
    let minted = MintedToken {
        token: view(&row, &ctx.user.email),
        secret: secret.expose().to_owned(),
    };
    if form_post {
        // Without script the answer is dropped by the redirect back to the page; the page
        // takes the secret from the session once instead (`take_minted_token`).
        session
            .insert(MINTED_KEY, &minted)
            .await
            .map_err(AppError::internal)?;
    }
    Ok(minted)
}

/// Session key of a token minted by a plain form post, waiting to be shown once.
#[cfg(feature = "ssr")]
const MINTED_KEY: &str = "strad.minted_token";

/// What `take_minted_token` took during this request: a page may render its form more than
/// once while it waits for data, and each render must see the token the first one took.
#[cfg(feature = "ssr")]
#[derive(Clone, Default)]
pub struct TakenThisRequest(std::sync::Arc<std::sync::Mutex<Option<Option<MintedToken>>>>);

/// The token minted by this browser's last plain form post, once: it is removed from the
/// session as it is read (and kept for the rest of this request).
#[server(prefix = "/api", endpoint = "tokens/take-minted")]
pub async fn take_minted_token() -> Result<Option<MintedToken>, AppError> {
    use crate::auth::ssr::context::RequestContext;
    let taken = leptos::prelude::use_context::<TakenThisRequest>();
    let session: tower_sessions::Session =
        leptos_axum::extract().await.map_err(AppError::internal)?;
    RequestContext::require().await?;
    if let Some(earlier) = taken
        .as_ref()
        .and_then(|t| t.0.lock().unwrap_or_else(|p| p.into_inner()).clone())
    {
        return Ok(earlier);
    }
    let minted = session
        .remove::<MintedToken>(MINTED_KEY)
        .await
        .map_err(AppError::internal)?;
    if let Some(taken) = taken {
        *taken.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(minted.clone());
    }
    Ok(minted)
}

/// The signed-in person's own tokens.
#[server(prefix = "/api", endpoint = "tokens/mine", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_my_tokens() -> Result<Vec<TokenView>, AppError> {
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    let ctx = RequestContext::require().await?;
    let rows = super::ssr::store::list(&state.pool, Some(ctx.user.id)).await?;
    Ok(rows.iter().map(|(row, email)| view(row, email)).collect())
}

/// Every token of everyone. Admins only.
#[server(prefix = "/api", endpoint = "tokens/all", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_all_tokens() -> Result<Vec<TokenView>, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    RequestContext::require_role(Role::Admin).await?;
    let rows = super::ssr::store::list(&state.pool, None).await?;
    Ok(rows.iter().map(|(row, email)| view(row, email)).collect())
}

/// Revokes a token: a person their own, an admin anyone's. Audited.
#[server(prefix = "/api", endpoint = "tokens/revoke")]
pub async fn revoke_token(id: String) -> Result<(), AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Member).await?;
    let id: uuid::Uuid = id.parse().map_err(|_| responder.fail(AppError::NotFound))?;
    let owner = if ctx.roles.contains(&Role::Admin) {
        None
    } else {
        Some(ctx.user.id)
    };
    let mut tx = state.pool.begin().await?;
    // Someone else's token answers like a missing one.
    let row = super::ssr::store::revoke(&mut *tx, id, owner)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let event = AuditEvent::TokenRevoked {
        token_id: row.id,
        name: row.name,
        owner_id: row.user_id,
    };
    writer::append(&mut tx, &ctx.actor(), &event, None).await?;
    tx.commit().await?;
    Ok(())
}
