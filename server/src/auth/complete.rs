//! The last step of every sign-in, whichever way the person proved who they are.

use app::audit::ssr::writer::{self, Actor, AuditEvent};
use app::auth::Role;
use app::auth::ssr::session::{PERSON_KEY, SessionKind, SessionPerson, TOUCHED_KEY};
use app::auth::ssr::users::{self, UserRow, VerifiedIdentity};
use sqlx::PgPool;
use tower_sessions::Session;

#[derive(Debug, thiserror::Error)]
pub enum CompleteError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("session: {0}")]
    Session(#[from] tower_sessions::session::Error),
}

/// Upserts the person, grants `member` (and `admin` for a bootstrap email, and whatever
/// `extra_roles` says), then cycles the session id before storing the person in it, so an
/// id planted before sign-in is worthless after it.
pub async fn complete_sign_in(
    pool: &PgPool,
    session: &Session,
    identity: &VerifiedIdentity,
    bootstrap_admins: &[String],
    extra_roles: &[Role],
    lifetime: time::Duration,
) -> Result<UserRow, CompleteError> {
    let mut tx = pool.begin().await?;
    let user = users::upsert_user(&mut *tx, identity).await?;
    users::grant_role(&mut *tx, user.id, Role::Member).await?;
    if bootstrap_admins
        .iter()
        .any(|admin| admin.eq_ignore_ascii_case(&identity.email))
        && users::grant_role(&mut *tx, user.id, Role::Admin).await?
    {
        tracing::info!(user.email = %identity.email, "bootstrap admin granted the admin role");
        let event = AuditEvent::RoleGranted {
            email: user.email.clone(),
            role: Role::Admin,
            reason: Some("bootstrap admin".into()),
        };
        writer::append(&mut tx, &Actor::system(), &event, None).await?;
    }
    for role in extra_roles {
        users::grant_role(&mut *tx, user.id, *role).await?;
    }
    let actor = Actor::person(user.id, &user.email);
    let event = AuditEvent::SignIn {
        issuer: user.issuer.clone(),
    };
    writer::append(&mut tx, &actor, &event, None).await?;
    tx.commit().await?;

    start_session(session, user.id, SessionKind::Browser, None, lifetime).await?;
    tracing::info!(user.id = %user.id, user.issuer = %user.issuer, "signed in");
    Ok(user)
}

/// Signs the browser in: a new session id first (an id planted before sign-in is worthless
/// after it), then the person, with the token a token session comes from and the end of
/// the session's `lifetime`.
pub async fn start_session(
    session: &Session,
    user_id: uuid::Uuid,
    kind: SessionKind,
    token_id: Option<uuid::Uuid>,
    lifetime: time::Duration,
) -> Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    let now = time::OffsetDateTime::now_utc();
    let person = SessionPerson {
        user_id,
        kind,
        token_id,
        ends_at: (now + lifetime).unix_timestamp(),
    };
    session.insert(PERSON_KEY, person).await?;
    session.insert(TOUCHED_KEY, now.unix_timestamp()).await
}
