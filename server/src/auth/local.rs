//! Local mode's one-time sign-in links (SPEC §3): with no OIDC issuer, strad listens on
//! loopback only and prints a link that signs in the local admin once. Each use prints
//! the next link, so a person who signed out can sign in again from the terminal.

use std::sync::Mutex;

use app::audit::ssr::writer::Actor;
use app::auth::ssr::users::{UserRow, VerifiedIdentity};
use app::auth::{Role, SignInError};
use app::entitlements::ssr::entitle;
use app::entitlements::ssr::grants::Grantee;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use rand::RngCore;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use tower_sessions::Session;

use super::complete::{CompleteError, complete_sign_in};
use super::refused;
use crate::config::DeclaredServer;
use crate::state::ServerState;

pub const LOCAL_ISSUER: &str = "strad:local";
pub const LOCAL_SUBJECT: &str = "local-admin";
pub const LOCAL_EMAIL: &str = "admin@localhost";

/// Holds the digest of the one live code, never the code itself.
pub struct LocalLinks {
    base: url::Url,
    current: Mutex<Option<[u8; 32]>>,
}

impl LocalLinks {
    pub fn new(public_url: &url::Url) -> Self {
        Self {
            base: public_url.clone(),
            current: Mutex::new(None),
        }
    }

    /// Mints a new link, invalidating the previous one, and returns it.
    pub fn mint(&self) -> String {
        let mut code = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut code);
        let code = hex::encode(code);
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Sha256::digest(code.as_bytes()).into());
        let mut url = self.base.join("/auth/local").expect("a fixed path joins");
        url.query_pairs_mut().append_pair("code", &code);
        url.to_string()
    }

    /// Consumes the live code when `code` is it. Constant-time; any answer but a match
    /// leaves the live code as it was.
    pub fn consume(&self, code: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(code.as_bytes()).into();
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        match current.as_ref() {
            Some(live) if bool::from(live.ct_eq(&digest)) => {
                *current = None;
                true
            }
            _ => false,
        }
    }
}

/// Prints a sign-in link where the operator reads it. Deliberately stdout rather than the
/// log: it is a credential, and logs are shipped elsewhere.
pub fn announce(link: &str) {
    println!("strad local mode: sign in (one time) at {link}");
}

#[derive(Deserialize)]
pub struct LocalQuery {
    code: Option<String>,
}

/// GET /auth/local?code=…
pub async fn sign_in(
    State(state): State<ServerState>,
    session: Session,
    Query(query): Query<LocalQuery>,
) -> Response {
    let Some(links) = state.local.as_ref() else {
        return refused(SignInError::LocalLink).into_response();
    };
    if !links.consume(query.code.as_deref().unwrap_or_default()) {
        tracing::warn!("local sign-in link refused");
        return refused(SignInError::LocalLink).into_response();
    }
    let identity = VerifiedIdentity {
        issuer: LOCAL_ISSUER.into(),
        subject: LOCAL_SUBJECT.into(),
        email: LOCAL_EMAIL.into(),
        display_name: Some("Local admin".into()),
    };
    // The local operator is the whole team on their own machine: every role.
    let roles = [Role::Admin, Role::Auditor];
    let result = complete_sign_in(
        &state.app.pool,
        &session,
        &identity,
        &[],
        &roles,
        state.config.auth.session_max,
    )
    .await;
    announce(&links.mint());
    let result = match result {
        Ok(user) => entitle_to_declared(&state.app.pool, &user, &state.config.servers)
            .await
            .map_err(CompleteError::from),
        Err(err) => Err(err),
    };
    match result {
        Ok(()) => Redirect::to("/").into_response(),
        Err(err) => {
            tracing::error!(error.message = %err, "could not complete the local sign-in");
            refused(SignInError::Unavailable).into_response()
        }
    }
}

/// The person at the keyboard owns the machine: local mode entitles its admin to every
/// server the file declares (the demo among them), granted by themself and audited, so a
/// declared server is on the home page without a trip to the admin pages.
async fn entitle_to_declared(
    pool: &PgPool,
    user: &UserRow,
    servers: &[DeclaredServer],
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let actor = Actor::person(user.id, &user.email);
    let grantee = Grantee::Person(user.email.clone());
    for server in servers.iter().filter(|server| server.enabled) {
        entitle::grant(
            &mut tx,
            &actor,
            &server.slug,
            &grantee,
            user.id,
            Some("local mode: declared in the file"),
        )
        .await?;
    }
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links() -> LocalLinks {
        LocalLinks::new(&url::Url::parse("http://127.0.0.1:3000").unwrap())
    }

    fn code_of(link: &str) -> String {
        url::Url::parse(link)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "code")
            .unwrap()
            .1
            .into_owned()
    }

    #[test]
    fn a_link_signs_in_once() {
        let links = links();
        let link = links.mint();
        assert!(link.starts_with("http://127.0.0.1:3000/auth/local?code="));
        let code = code_of(&link);
        assert_eq!(code.len(), 64);
        assert!(links.consume(&code));
        assert!(!links.consume(&code));
    }

    #[test]
    fn a_new_link_invalidates_the_previous_one() {
        let links = links();
        let first = code_of(&links.mint());
        let second = code_of(&links.mint());
        assert_ne!(first, second);
        assert!(!links.consume(&first));
        assert!(links.consume(&second));
    }

    #[test]
    fn wrong_codes_do_not_burn_the_live_one() {
        let links = links();
        let code = code_of(&links.mint());
        assert!(!links.consume(""));
        assert!(!links.consume("00"));
        assert!(!links.consume(&code.to_uppercase()));
        assert!(links.consume(&code));
    }

    #[test]
    fn no_link_before_one_is_minted() {
        assert!(!links().consume(""));
    }
}
