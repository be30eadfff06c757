//! The request context: the first thing every server function and route obtains. It says
//! who is asking; data functions take it rather than reading the session themselves.

use sqlx::PgPool;
use tower_sessions::Session;

use super::session::{SessionKind, SessionPerson, signed_in_person};
use super::users::{self, UserRow};
use crate::auth::{Me, Role};
use crate::error::{AppError, Responder};
use crate::state::AppState;

#[derive(Clone, Debug)]
pub struct RequestContext {
    pub user: UserRow,
    pub roles: Vec<Role>,
    pub session_kind: SessionKind,
}

impl RequestContext {
    /// Loads the signed-in person from a session. A session naming a user that no longer
    /// exists, or a token session whose token was revoked or has expired, is treated as
    /// anonymous (and deleted).
    pub async fn from_session(pool: &PgPool, session: &Session) -> Result<Option<Self>, AppError> {
        let person = signed_in_person(session)
            .await
            .map_err(AppError::internal)?;
        let Some(person) = person else {
            return Ok(None);
        };
        let (found, token_live) = tokio::join!(
            users::find_user_with_roles(pool, person.user_id),
            token_lives(pool, &person),
        );
        let (Some((user, roles)), true) = (found?, token_live?) else {
            session.flush().await.map_err(AppError::internal)?;
            return Ok(None);
        };
        Ok(Some(Self {
            user,
            roles,
            session_kind: person.kind,
        }))
    }

    /// The context of the current Leptos request (server function or page render).
    pub async fn load() -> Result<Option<Self>, AppError> {
        let state = AppState::from_context()?;
        let session: Session = leptos_axum::extract().await.map_err(AppError::internal)?;
        Self::from_session(&state.pool, &session).await
    }

    /// Signed in, or 401.
    pub async fn require() -> Result<Self, AppError> {
        let responder = Responder::capture();
        Self::load()
            .await?
            .ok_or_else(|| responder.fail(AppError::Unauthorized))
    }

    /// Signed in with `role`, or 401 / 403.
    pub async fn require_role(role: Role) -> Result<Self, AppError> {
        let responder = Responder::capture();
        let ctx = Self::load()
            .await?
            .ok_or_else(|| responder.fail(AppError::Unauthorized))?;
        if ctx.roles.contains(&role) {
            Ok(ctx)
        } else {
            Err(responder.fail(AppError::Forbidden))
        }
    }

    /// Signed in with `role` in a session that may change things (not a token session), or
    /// 401 / 403. Every server function that writes starts here.
    pub async fn require_writer(role: Role) -> Result<Self, AppError> {
        let responder = Responder::capture();
        let ctx = Self::require_role(role).await?;
        if ctx.session_kind.may_write() {
            Ok(ctx)
        } else {
            Err(responder.fail(AppError::Forbidden))
        }
    }

    /// Signed in with any of `roles`, or 401 / 403.
    pub async fn require_any(roles: &[Role]) -> Result<Self, AppError> {
        let responder = Responder::capture();
        let ctx = Self::load()
            .await?
            .ok_or_else(|| responder.fail(AppError::Unauthorized))?;
        if roles.iter().any(|r| ctx.roles.contains(r)) {
            Ok(ctx)
        } else {
            Err(responder.fail(AppError::Forbidden))
        }
    }

    /// Whether this sign-in may change anything (`SessionKind::may_write`).
    pub fn may_write(&self) -> bool {
        self.session_kind.may_write()
    }

    /// The audit actor for changes this person makes.
    pub fn actor(&self) -> crate::audit::ssr::writer::Actor {
        crate::audit::ssr::writer::Actor::person(self.user.id, &self.user.email)
    }

    pub fn me(&self) -> Me {
        Me {
            email: self.user.email.clone(),
            name: self.user.display_name.clone(),
            roles: self.roles.clone(),
            token_session: self.session_kind == SessionKind::Token,
        }
    }
}

/// Whether the session's token (for a token session) still lives; any other session has no
/// token to outlive.
async fn token_lives(pool: &PgPool, person: &SessionPerson) -> Result<bool, AppError> {
    match (person.kind, person.token_id) {
        (SessionKind::Browser, _) => Ok(true),
        (SessionKind::Token, Some(id)) => Ok(crate::tokens::ssr::store::is_live(pool, id).await?),
        // A token session that does not say its token cannot be ended with it.
        (SessionKind::Token, None) => Ok(false),
    }
}
