//! Token sessions (SPEC §3): a console URL carrying `?token=<login token>` signs the
//! browser in as the token's owner, view-only. The token is taken out of the address at
//! once (a redirect), so it never renders into a page or a Referer.

use app::audit::ssr::writer::{self, Actor, AuditEvent};
use app::auth::ssr::session::SessionKind;
use app::auth::{SignInError, safe_next_path};
use app::tokens::ssr::store;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tower_sessions::Session;

use super::refused;
use crate::state::ServerState;

pub async fn token_sign_in(
    State(state): State<ServerState>,
    session: Session,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let Some((token, rest)) = split_token(request.uri().query().unwrap_or_default()) else {
        return next.run(request).await;
    };
    // A token link from another site would sign this browser in as someone else.
    let fetch_site = request
        .headers()
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok());
    if fetch_site.is_some_and(|site| !matches!(site, "same-origin" | "none")) {
        tracing::warn!("a token link from another site was refused");
        return refused(SignInError::LoginToken).into_response();
    }
    let target = redirect_target(request.uri().path(), &rest);
    match start(&state, &session, &token).await {
        Ok(true) => Redirect::to(&target).into_response(),
        Ok(false) => {
            tracing::warn!("an unknown, expired or revoked login token was refused");
            // Someone already signed in keeps their session and their place; the bad token
            // is only taken out of the address. Anyone else is told the link did not work.
            let signed_in =
                app::auth::ssr::context::RequestContext::from_session(&state.app.pool, &session)
                    .await
                    .is_ok_and(|ctx| ctx.is_some());
            if signed_in {
                Redirect::to(&target).into_response()
            } else {
                refused(SignInError::LoginToken).into_response()
            }
        }
        Err(err) => {
            tracing::error!(error.message = %err, "could not start a token session");
            refused(SignInError::Unavailable).into_response()
        }
    }
}

async fn start(state: &ServerState, session: &Session, token: &str) -> anyhow::Result<bool> {
    let mut tx = state.app.pool.begin().await?;
    let Some(row) = store::verify(&mut *tx, token).await? else {
        return Ok(false);
    };
    let email = sqlx::query_scalar!("SELECT email FROM users WHERE id = $1", row.user_id)
        .fetch_one(&mut *tx)
        .await?;
    let event = AuditEvent::TokenSignIn { token_id: row.id };
    writer::append(&mut tx, &Actor::person(row.user_id, &email), &event, None).await?;
    tx.commit().await?;
    super::complete::start_session(
        session,
        row.user_id,
        SessionKind::Token,
        Some(row.id),
        state.config.auth.session_max,
    )
    .await?;
    Ok(true)
}

/// Where the browser goes once the token is out of the address: the same place, checked as
/// sign-in's `next` is, since a request path such as `//evil.example/x` is another host once
/// it is a `Location`. Anything else goes home.
fn redirect_target(path: &str, rest: &str) -> String {
    let target = match rest {
        "" => path.to_owned(),
        rest => format!("{path}?{rest}"),
    };
    match safe_next_path(&target) {
        Some(_) => target,
        None => "/".to_owned(),
    }
}

/// The `token` parameter and the rest of the query, re-encoded; `None` without a token.
fn split_token(query: &str) -> Option<(String, String)> {
    let mut token = None;
    let mut rest = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if key == "token" {
            token.get_or_insert(value.into_owned());
        } else {
            rest.append_pair(&key, &value);
        }
    }
    token.map(|t| (t, rest.finish()))
}

#[cfg(test)]
mod tests {
    use super::{redirect_target, split_token};

    #[test]
    fn the_redirect_stays_on_the_console() {
        assert_eq!(redirect_target("/people", "view=week"), "/people?view=week");
        assert_eq!(redirect_target("/", ""), "/");
        for path in [
            "//evil.example/x",
            "///evil.example",
            "/\\evil.example",
            "/\\/evil.example",
        ] {
            assert_eq!(redirect_target(path, ""), "/", "{path:?}");
            assert_eq!(redirect_target(path, "view=week"), "/", "{path:?}");
        }
    }

    #[test]
    fn the_token_is_taken_out_and_the_rest_kept() {
        assert_eq!(split_token("token=abc"), Some(("abc".into(), "".into())));
        assert_eq!(
            split_token("view=week&token=abc&x=1"),
            Some(("abc".into(), "view=week&x=1".into()))
        );
        assert_eq!(
            split_token("token=a&token=b"),
            Some(("a".into(), "".into()))
        );
        assert_eq!(split_token("view=week"), None);
        assert_eq!(split_token(""), None);
    }
}
