//! OpenID Connect sign-in: discovery, the authorization-code flow with PKCE, `state` and
//! `nonce`, ID-token verification, then the claim checks of `domain.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use app::auth::ssr::session::{PERSON_KEY, SessionPerson};
use app::auth::ssr::users::VerifiedIdentity;
use app::auth::{SignInError, safe_next_path};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tokio::sync::RwLock;
use tower_sessions::Session;

use super::complete::complete_sign_in;
use super::domain::{EmailClaims, Refusal, check_sign_in};
use super::refused;
use crate::config::{AllowedDomains, OidcConfig};
use crate::state::ServerState;

type DiscoveredClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Session key of a sign-in in progress.
const PENDING_KEY: &str = "strad.pending_sign_in";
/// How long a person has to come back from the issuer.
const PENDING_TTL: Duration = Duration::from_secs(10 * 60);
/// Provider metadata (and its signing keys) is fetched again after this long, so a key
/// rotation at the issuer is picked up without a restart.
const METADATA_TTL: Duration = Duration::from_secs(60 * 60);

pub struct Oidc {
    config: OidcConfig,
    redirect_url: RedirectUrl,
    http: openidconnect::reqwest::Client,
    client: RwLock<Option<(Instant, Arc<DiscoveredClient>)>>,
}

/// What the browser's session holds between /auth/login and /auth/callback. It holds the
/// PKCE verifier, so it is never logged (no `Debug`) and lives only in the server-side
/// session row.
#[derive(Serialize, Deserialize)]
struct PendingSignIn {
    state: String,
    nonce: String,
    pkce_verifier: String,
    next: String,
    started_at_unix: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("issuer URL: {0}")]
    Url(String),
    #[error("discovery: {0}")]
    Discovery(String),
    #[error("http client: {0}")]
    Http(String),
}

impl Oidc {
    pub fn new(config: OidcConfig, public_url: &url::Url) -> Result<Self, DiscoveryError> {
        let redirect = public_url
            .join("/auth/callback")
            .map_err(|e| DiscoveryError::Url(e.to_string()))?;
        let http = openidconnect::reqwest::ClientBuilder::new()
            // Following redirects would let an issuer's answer point strad anywhere (SSRF).
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| DiscoveryError::Http(e.to_string()))?;
        Ok(Self {
            config,
            redirect_url: RedirectUrl::from_url(redirect),
            http,
            client: RwLock::new(None),
        })
    }

    pub fn provider_name(&self) -> &str {
        &self.config.provider_name
    }

    /// The discovered client, fetched on first use and again once it is stale.
    pub async fn client(&self) -> Result<Arc<DiscoveredClient>, DiscoveryError> {
        if let Some((at, client)) = self.client.read().await.as_ref()
            && at.elapsed() < METADATA_TTL
        {
            return Ok(client.clone());
        }
        let mut slot = self.client.write().await;
        if let Some((at, client)) = slot.as_ref()
            && at.elapsed() < METADATA_TTL
        {
            return Ok(client.clone());
        }
        let issuer = IssuerUrl::new(self.config.issuer.as_str().trim_end_matches('/').to_owned())
            .map_err(|e| DiscoveryError::Url(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| DiscoveryError::Discovery(error_chain(&e)))?;
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(
                self.config.client_secret.expose().to_owned(),
            )),
        )
        .set_redirect_uri(self.redirect_url.clone());
        let client = Arc::new(client);
        *slot = Some((Instant::now(), client.clone()));
        tracing::info!(oidc.issuer = %self.config.issuer, "OpenID Connect provider discovered");
        Ok(client)
    }
}

#[derive(Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
}

/// GET /auth/login: starts a sign-in and sends the browser to the issuer.
pub async fn login(
    State(state): State<ServerState>,
    session: Session,
    Query(query): Query<LoginQuery>,
) -> Response {
    let Some(oidc) = state.oidc.as_ref() else {
        return Redirect::to("/sign-in").into_response();
    };
    let client = match oidc.client().await {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error.message = %err, "OpenID Connect discovery failed");
            return refused(SignInError::Unavailable).into_response();
        }
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("profile".into()))
        .set_pkce_challenge(challenge);
    if let (true, AllowedDomains::Only(list)) = (
        oidc.config.require_hosted_domain,
        &oidc.config.allowed_domains,
    ) {
        // Google's account chooser shows only accounts of this Workspace; the `hd` claim is
        // still checked on the way back, since a hint is not a control.
        if let [only] = list.as_slice() {
            request = request.add_extra_param("hd", only.clone());
        }
    }
    let (url, csrf, nonce) = request.url();
    let next = query
        .next
        .as_deref()
        .and_then(safe_next_path)
        .unwrap_or("/")
        .to_owned();
    let pending = PendingSignIn {
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        next,
        started_at_unix: time::OffsetDateTime::now_utc().unix_timestamp(),
    };
    if let Err(err) = session.insert(PENDING_KEY, pending).await {
        tracing::error!(error.message = %err, "could not store the pending sign-in");
        return refused(SignInError::Unavailable).into_response();
    }
    Redirect::to(url.as_str()).into_response()
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

/// GET /auth/callback: the issuer sends the browser back here with a code.
pub async fn callback(
    State(state): State<ServerState>,
    session: Session,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(oidc) = state.oidc.as_ref() else {
        return Redirect::to("/sign-in").into_response();
    };
    match verify_callback(oidc, &session, query).await {
        Ok((identity, next)) => {
            match complete_sign_in(
                &state.app.pool,
                &session,
                &identity,
                &state.config.auth.bootstrap_admins,
                &[],
                state.config.auth.session_max,
            )
            .await
            {
                Ok(_) => Redirect::to(&next).into_response(),
                Err(err) => {
                    tracing::error!(error.message = %err, "could not complete the sign-in");
                    let _ = session.flush().await;
                    refused(SignInError::Unavailable).into_response()
                }
            }
        }
        Err(error) => {
            // A refused sign-in leaves nothing behind: its pending sign-in is gone already,
            // and a session with no one in it goes too. Someone signed in stays signed in,
            // or a link to the callback from any site would sign them out.
            if !is_signed_in(&session).await {
                let _ = session.flush().await;
            }
            refused(error).into_response()
        }
    }
}

async fn is_signed_in(session: &Session) -> bool {
    session
        .get::<SessionPerson>(PERSON_KEY)
        .await
        .is_ok_and(|person| person.is_some())
}

async fn verify_callback(
    oidc: &Oidc,
    session: &Session,
    query: CallbackQuery,
) -> Result<(VerifiedIdentity, String), SignInError> {
    // Single use: the pending sign-in is removed before anything else, so a replayed
    // callback finds nothing.
    let pending: PendingSignIn = session
        .remove(PENDING_KEY)
        .await
        .map_err(|err| {
            tracing::error!(error.message = %err, "could not read the session");
            SignInError::Unavailable
        })?
        .ok_or_else(|| {
            tracing::warn!("sign-in callback without a sign-in in progress");
            SignInError::State
        })?;
    let age = time::OffsetDateTime::now_utc().unix_timestamp() - pending.started_at_unix;
    if !(0..=PENDING_TTL.as_secs() as i64).contains(&age) {
        tracing::warn!(
            sign_in.age_seconds = age,
            "sign-in callback after the pending sign-in expired"
        );
        return Err(SignInError::State);
    }
    let returned_state = query.state.unwrap_or_default();
    if !bool::from(returned_state.as_bytes().ct_eq(pending.state.as_bytes())) {
        tracing::warn!("sign-in callback with a state that does not match");
        return Err(SignInError::State);
    }
    if let Some(error) = query.error {
        tracing::warn!(oidc.error = %error.chars().take(64).collect::<String>(), "the issuer returned an error");
        return Err(SignInError::Denied);
    }
    // RFC 9207: when the issuer names itself on the callback, it must be ours (stops an
    // issuer mix-up). oidc-provider and Google both send it.
    if let Some(iss) = query.iss
        && iss.trim_end_matches('/') != oidc.config.issuer.as_str().trim_end_matches('/')
    {
        tracing::warn!("sign-in callback from another issuer");
        return Err(SignInError::Token);
    }
    let code = query.code.ok_or(SignInError::Exchange)?;

    let client = oidc.client().await.map_err(|err| {
        tracing::error!(error.message = %err, "OpenID Connect discovery failed");
        SignInError::Unavailable
    })?;
    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|err| {
            tracing::error!(error.message = %err, "the issuer has no token endpoint");
            SignInError::Unavailable
        })?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier))
        .request_async(&oidc.http)
        .await
        .map_err(|err| {
            tracing::warn!(error.message = %error_chain(&err), "the issuer refused the code exchange");
            SignInError::Exchange
        })?;
    let id_token = token.id_token().ok_or_else(|| {
        tracing::warn!("the token response has no ID token");
        SignInError::Token
    })?;
    let nonce = Nonce::new(pending.nonce);
    let claims = id_token
        .claims(&client.id_token_verifier(), &nonce)
        .map_err(|err| {
            tracing::warn!(error.message = %err, "ID token refused");
            match err {
                ClaimsVerificationError::InvalidNonce(_) => SignInError::Nonce,
                _ => SignInError::Token,
            }
        })?;
    let subject = claims.subject().to_string();
    let issuer = claims.issuer().to_string();
    let name = claims
        .name()
        .and_then(|n| n.get(None))
        .map(|n| n.to_string());
    let hd = hosted_domain(id_token);

    let (email, email_verified) = match claims.email() {
        Some(email) => (email.to_string(), claims.email_verified()),
        None => {
            // Some issuers put email only in userinfo; ask it, bound to the same subject.
            let info = client
                .user_info(token.access_token().clone(), Some(claims.subject().clone()))
                .map_err(|_| SignInError::Unverified)?
                .request_async::<openidconnect::EmptyAdditionalClaims, _, openidconnect::core::CoreGenderClaim>(&oidc.http)
                .await
                .map_err(|err| {
                    tracing::warn!(error.message = %error_chain(&err), "userinfo request failed");
                    SignInError::Unverified
                })?;
            let email = info
                .email()
                .map(|e| e.to_string())
                .ok_or(SignInError::Unverified)?;
            (email, info.email_verified())
        }
    };

    let checked = EmailClaims {
        email: &email,
        email_verified,
        hd: hd.as_deref(),
    };
    check_sign_in(
        checked,
        &oidc.config.allowed_domains,
        oidc.config.require_hosted_domain,
    )
    .map_err(|refusal| {
        tracing::warn!(refusal = %refusal, "sign-in refused");
        match refusal {
            Refusal::Unverified => SignInError::Unverified,
            Refusal::Domain => SignInError::Domain,
        }
    })?;

    let identity = VerifiedIdentity {
        issuer,
        subject,
        email: email.to_ascii_lowercase(),
        display_name: name,
    };
    Ok((identity, pending.next))
}

/// Google's `hd` claim from an ID token whose signature and claims were verified already.
/// The core claim types drop unknown claims, so the payload is read once more here.
fn hosted_domain(id_token: &openidconnect::core::CoreIdToken) -> Option<String> {
    use base64::Engine;
    let jwt = serde_json::to_value(id_token).ok()?;
    let payload = jwt.as_str()?.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("hd")?.as_str().map(str::to_ascii_lowercase)
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
