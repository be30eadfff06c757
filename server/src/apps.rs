//! The app surface's non-page routes (SPEC §6, §8): the frame, serving a person's pinned
//! copy under its own CSP, and the tool-call route the bridge posts to.

use app::apps::ssr::{csp, pins, scripts};
use app::auth::ssr::context::RequestContext;
use app::auth::ssr::session::{SessionPerson, signed_in_person};
use app::auth::ssr::users;
use app::entitlements::policy::Surface;
use app::entitlements::ssr::authorize;
use app::error::AppError;
use app::servers::Capability;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tower_sessions::Session;

use crate::prefetch;
use crate::state::ServerState;
use crate::tool_call::{CallError, Caller, ToolCall, upstream_failure};

/// Largest tool-call body accepted from a page (SPEC §6 bridge byte limit).
const CALL_BODY_LIMIT: usize = 256 * 1024;

pub fn routes() -> Router<ServerState> {
    Router::new()
        .route("/apps/{slug}/frame/{ticket}", get(frame))
        .route(
            "/apps/{slug}/tools/call",
            post(tools_call).layer(DefaultBodyLimit::max(CALL_BODY_LIMIT)),
        )
        .route(
            "/servers/{slug}/tools/call",
            post(playground_call).layer(DefaultBodyLimit::max(CALL_BODY_LIMIT)),
        )
        .route(
            "/apps/{slug}/resources/read",
            post(resources_read).layer(DefaultBodyLimit::max(CALL_BODY_LIMIT)),
        )
        .route(
            "/apps/{slug}/opening-call",
            post(opening_call).layer(DefaultBodyLimit::max(CALL_BODY_LIMIT)),
        )
}

fn refusal(status: StatusCode, message: &str) -> Response {
    let mut response = (status, Json(json!({"error": message}))).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The first lines of every app route: signed in (401), entitled to `slug` (403, alike for a
/// slug that does not exist).
async fn entitled(
    state: &ServerState,
    session: &Session,
    slug: &str,
) -> Result<(RequestContext, app::servers::ssr::registry::ServerRow), Response> {
    let pool = &state.app.pool;
    let ctx = match RequestContext::from_session(pool, session).await {
        Ok(Some(ctx)) => ctx,
        Ok(None) => return Err(app_error(AppError::Unauthorized)),
        Err(error) => return Err(app_error(error)),
    };
    match authorize::entitled_server(pool, &ctx, slug).await {
        Ok(server) => Ok((ctx, server)),
        Err(error) => Err(app_error(error)),
    }
}

fn app_error(error: AppError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    refusal(status, &error.to_string())
}

/// What a frame gets instead of the app: a readable message, and no script may run in it.
fn stopped(status: StatusCode, message: &str) -> Response {
    let message = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>stopped</title></head><body><p>{message}</p></body></html>"
    );
    let mut response = (status, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "sandbox; default-src 'none'; script-src 'none'; frame-ancestors 'self'",
        ),
    );
    h.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn inert(message: &str) -> Response {
    stopped(StatusCode::CONFLICT, message)
}

/// The request context of the session's person from their row as just read; a person who
/// no longer exists is signed out (their session cleared).
async fn person_context(
    session: &Session,
    person: SessionPerson,
    user: Result<Option<(users::UserRow, Vec<app::auth::Role>)>, sqlx::Error>,
) -> Result<RequestContext, AppError> {
    match user {
        Ok(Some((user, roles))) => Ok(RequestContext {
            user,
            roles,
            session_kind: person.kind,
        }),
        Ok(None) => {
            let _ = session.flush().await;
            Err(AppError::Unauthorized)
        }
        Err(error) => Err(error.into()),
    }
}

/// A refusal of the frame route, as a page the frame can show.
fn frame_error(error: AppError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    stopped(status, &error.to_string())
}

/// GET /apps/<slug>/frame: the person's pinned copy, with `<base target="_blank">`, under
/// the frame CSP built from exactly the served bytes.
pub async fn frame(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path((slug, ticket)): Path<(String, String)>,
) -> Response {
    // Only as a frame: a browser says where a response goes, and a top-level visit (a link
    // to the frame route, or a page opening it in a new tab) is not an app in the console.
    if let Some(dest) = headers.get("sec-fetch-dest").and_then(|v| v.to_str().ok())
        && dest != "iframe"
    {
        return stopped(
            StatusCode::FORBIDDEN,
            "This address only works inside the console. Open the app from the console.",
        );
    }
    // Only the console starts a frame load: a page that reloads or navigates itself is a
    // cross-site initiator (an opaque origin), and gets an inert page. (Its request carries
    // no session cookie either: SameSite=Lax keeps it home.)
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site != "same-origin")
    {
        return stopped(
            StatusCode::FORBIDDEN,
            "This app was stopped: it tried to load a page by itself. Open the app again from the console.",
        );
    }
    let pool = &state.app.pool;
    // The person, the entitlement and the pin's identity (no bytes) at once, and with the
    // session itself when whose it is can be guessed. The app session (ticket) names the
    // resource; it is spent only once everything else holds.
    let (tickets, slug_ref, ticket_ref, memos) = (
        &state.app.frame_tickets,
        slug.as_str(),
        ticket.as_str(),
        &state.memos,
    );
    let read = |person: SessionPerson| async move {
        let named = tickets.peek(ticket_ref, person.user_id, slug_ref);
        let pin_head = async {
            match &named {
                Some(uri) => memos.pin_head(pool, person.user_id, slug_ref, uri).await,
                None => Ok(None),
            }
        };
        let (user, server, head) = tokio::join!(
            memos.user(pool, person.user_id),
            memos.entitled(pool, person.user_id, slug_ref),
            pin_head,
        );
        (named, user, server, head)
    };
    let (person, (named, user, server, head)) =
        match prefetch::with_person(&state.hints, &session, read).await {
            Ok(Some(found)) => found,
            Ok(None) => return frame_error(AppError::Unauthorized),
            Err(error) => return frame_error(AppError::internal(error)),
        };
    let ctx = match person_context(&session, person, user).await {
        Ok(ctx) => ctx,
        Err(error) => return frame_error(error),
    };
    let server = match server {
        Ok(server) => server,
        Err(error) => return frame_error(error),
    };
    if !server.approves(Capability::Apps) {
        return stopped(
            StatusCode::NOT_FOUND,
            "This server is not approved to show apps.",
        );
    }
    // The app session: issued by the console for this person, this server and one frame
    // load. The resource it names is the one served, whatever the address says.
    let spent = state.app.frame_tickets.redeem(&ticket, ctx.user.id, &slug);
    let Some(uri) = spent.filter(|uri| Some(uri) == named.as_ref()) else {
        tracing::warn!(server.slug = %slug, "a frame load without a valid app session; served an inert document");
        return inert(
            "This app was stopped: it tried to load a second document, or this frame was not opened by the console. Open the app again from the console.",
        );
    };
    // A prepared copy of exactly this pin row version is served from memory; anything else
    // is read, checked and prepared again.
    let head = match head {
        Ok(head) => head,
        Err(error) => return frame_error(error.into()),
    };
    if let Some(head) = &head
        && let Some(prepared) = state.frames.get(ctx.user.id, &slug, &uri, &head.version)
    {
        return prepared.response();
    }
    let pin = match head {
        Some(_) => match pins::get(pool, ctx.user.id, &slug, &uri).await {
            Ok(Some(pin)) => pin,
            Ok(None) => return stopped(StatusCode::NOT_FOUND, "This app is no longer pinned."),
            Err(error) => return frame_error(error.into()),
        },
        None => {
            // The first open pins (a load started by another site was stopped above).
            match pins::pin(
                pool,
                &state.app.hub,
                &server,
                &uri,
                &ctx.actor(),
                ctx.user.id,
                "app_pinned",
            )
            .await
            {
                Ok(pin) => pin,
                Err(pins::PinError::Unreachable(why)) => {
                    return stopped(
                        StatusCode::BAD_GATEWAY,
                        &format!("The server could not be reached: {why}"),
                    );
                }
                Err(pins::PinError::Invalid(why)) => {
                    return stopped(
                        StatusCode::BAD_GATEWAY,
                        &format!("The app is not valid: {why}"),
                    );
                }
                Err(pins::PinError::Database(error)) => return frame_error(error.into()),
            }
        }
    };
    if !pin.is_intact() {
        tracing::error!(server.slug = %slug, app.uri = %uri, "a pinned app's bytes no longer match its digest");
        return stopped(
            StatusCode::CONFLICT,
            "Your pinned copy of this app is corrupt. Refresh it to pin the server's copy again.",
        );
    }
    let Ok(html) = String::from_utf8(pin.bytes.clone()) else {
        return stopped(
            StatusCode::CONFLICT,
            "Your pinned copy of this app is not text.",
        );
    };
    let served = scripts::with_base_target(&html);
    let policy = csp::frame_csp(
        &state.config.http.public_origin(),
        &scripts::script_hashes(&served),
        &pin.resource_domains(),
    );
    let Ok(csp) = HeaderValue::from_str(&policy) else {
        return stopped(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The app could not be served.",
        );
    };
    let prepared = std::sync::Arc::new(PreparedFrame {
        body: Bytes::from(served),
        csp,
    });
    // The version read with the bytes: a row changed since is prepared again next time.
    if let Ok(Some(head)) = pins::head(pool, ctx.user.id, &slug, &uri).await
        && head.sha256 == pin.sha256
    {
        state
            .frames
            .put(ctx.user.id, &slug, &uri, head.version, prepared.clone());
    }
    prepared.response()
}

/// A pinned app ready to serve: the bytes with `<base target>`, and their CSP.
pub struct PreparedFrame {
    body: Bytes,
    csp: HeaderValue,
}

impl PreparedFrame {
    fn response(&self) -> Response {
        let mut response = self.body.clone().into_response();
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        h.insert(header::CONTENT_SECURITY_POLICY, self.csp.clone());
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        // Framed by the console only (the CSP's frame-ancestors says the same).
        h.insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("SAMEORIGIN"),
        );
        response
    }
}

/// Prepared frames by (person, server, resource), each valid for one version of its pin row
/// (Postgres' `xmin`: any write to the row, a refresh or a tampering, makes a new one).
/// Bounded by total bytes; past it, everything is dropped and prepared again on demand.
#[derive(Default)]
pub struct FrameCache(
    std::sync::Mutex<(
        std::collections::HashMap<
            (uuid::Uuid, String, String),
            (String, std::sync::Arc<PreparedFrame>),
        >,
        usize,
    )>,
);

const FRAME_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl FrameCache {
    fn get(
        &self,
        user: uuid::Uuid,
        slug: &str,
        uri: &str,
        version: &str,
    ) -> Option<std::sync::Arc<PreparedFrame>> {
        let held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        held.0
            .get(&(user, slug.to_owned(), uri.to_owned()))
            .filter(|(v, _)| v == version)
            .map(|(_, prepared)| prepared.clone())
    }

    fn put(
        &self,
        user: uuid::Uuid,
        slug: &str,
        uri: &str,
        version: String,
        prepared: std::sync::Arc<PreparedFrame>,
    ) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let size = prepared.body.len();
        if held.1 + size > FRAME_CACHE_BYTES {
            held.0.clear();
            held.1 = 0;
        }
        if let Some((_, old)) = held
            .0
            .insert((user, slug.to_owned(), uri.to_owned()), (version, prepared))
        {
            held.1 = held.1.saturating_sub(old.body.len());
        }
        held.1 += size;
    }
}

/// A cross-site form cannot send `application/json`: it is required of every call from a
/// page (the write gate has already refused any request not from the console).
fn refuse_unless_json(headers: &HeaderMap) -> Option<Response> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    (!json).then(|| refusal(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Send application/json."))
}

#[derive(Deserialize)]
pub struct CallBody {
    name: String,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
}

/// POST /apps/<slug>/tools/call: the bridge's `tools/call`, under the person's authority.
pub async fn tools_call(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    body: Bytes,
) -> Response {
    detached(async move { call_tool(&state, &session, &headers, &slug, &body, Surface::App).await })
        .await
}

/// POST /servers/<slug>/tools/call: a person calling a tool by hand in the playground.
pub async fn playground_call(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    body: Bytes,
) -> Response {
    detached(async move {
        call_tool(
            &state,
            &session,
            &headers,
            &slug,
            &body,
            Surface::Playground,
        )
        .await
    })
    .await
}

/// Runs a tool call's handler in a task of its own, so that a client going away in the
/// middle (which drops the handler) leaves the call to finish and be audited.
async fn detached(call: impl Future<Output = Response> + Send + 'static) -> Response {
    tokio::spawn(call).await.unwrap_or_else(|error| {
        tracing::error!(error.message = %error, "a tool call's task failed");
        StatusCode::INTERNAL_SERVER_ERROR.into_response()
    })
}

/// One tool call from a page of the console (an app's bridge, or the playground): JSON only,
/// signed in, entitled, then `ToolCall::run` under the decision for `surface`.
async fn call_tool(
    state: &ServerState,
    session: &Session,
    headers: &HeaderMap,
    slug: &str,
    body: &Bytes,
    surface: Surface,
) -> Response {
    if let Some(refused) = refuse_unless_json(headers) {
        return refused;
    }
    let pool = &state.app.pool;
    let Ok(call) = serde_json::from_slice::<CallBody>(body) else {
        // Someone not signed in hears 401 whatever they sent.
        return match signed_in_person(session).await {
            Ok(Some(_)) => refusal(
                StatusCode::BAD_REQUEST,
                "The body must be {\"name\": string, \"arguments\": object}.",
            ),
            Ok(None) => app_error(AppError::Unauthorized),
            Err(error) => app_error(AppError::internal(error)),
        };
    };
    // The person, the entitlement and the policy decision at once (three connections), and
    // with the session itself when whose it is can be guessed: the decision is read for the
    // slug asked, and used only once the entitlement holds. Not entitled, or no such slug:
    // the same 403, and nothing recorded under a slug the person cannot see.
    let (tool, memos) = (call.name.as_str(), &state.memos);
    let read = |person: SessionPerson| async move {
        tokio::join!(
            memos.user(pool, person.user_id),
            memos.entitled(pool, person.user_id, slug),
            memos.decision(pool, person.kind, slug, tool, surface),
        )
    };
    let (person, (user, server, decision)) =
        match prefetch::with_person(&state.hints, session, read).await {
            Ok(Some(found)) => found,
            Ok(None) => return app_error(AppError::Unauthorized),
            Err(error) => return app_error(AppError::internal(error)),
        };
    let ctx = match person_context(session, person, user).await {
        Ok(ctx) => ctx,
        Err(error) => return app_error(error),
    };
    let (server, decision) = match (server, decision) {
        (Ok(server), Ok(decision)) => (server, decision),
        (Err(error), _) | (_, Err(error)) => return app_error(error),
    };
    let call = ToolCall {
        surface,
        slug: slug.to_owned(),
        tool: call.name,
        arguments: call.arguments.unwrap_or_default(),
        bytes_in: body.len(),
    };
    let answered = from_console(state, &ctx, &server, decision, &call).await;
    match answered {
        Ok(answer) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            answer.json,
        )
            .into_response(),
        Err(error) => call_error(&error),
    }
}

/// `call` for the person of a console session, with the console's upstream sessions; it
/// runs to its end whatever the page does (the handler is detached).
async fn from_console(
    state: &ServerState,
    ctx: &RequestContext,
    server: &app::servers::ssr::registry::ServerRow,
    decision: app::entitlements::policy::Decision,
    call: &ToolCall,
) -> Result<app::servers::ssr::client::ToolAnswer, CallError> {
    let caller = Caller {
        user_id: ctx.user.id,
        email: ctx.user.email.clone(),
        token_id: None,
    };
    call.run(
        state,
        &caller,
        server,
        decision,
        &state.app.hub,
        None,
        std::future::pending(),
    )
    .await
}

/// A call that did not answer with a result, as the page reads it.
fn call_error(error: &CallError) -> Response {
    let mut response = refusal(error.status(), &error.message());
    if *error == CallError::TooMany {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

#[derive(Deserialize)]
pub struct OpeningBody {
    uri: String,
}

/// POST /apps/<slug>/opening-call: the host's own call of the tool that declares the app,
/// after the page is initialized (SPEC §6 lifecycle). The server picks the tool; the
/// decision is an app call's (its policy list, the capability ceiling), but no page asked
/// for it, so visibility does not bind it and it runs only when read-only.
pub async fn opening_call(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    Json(body): Json<OpeningBody>,
) -> Response {
    detached(run_opening_call(state, session, headers, slug, body)).await
}

async fn run_opening_call(
    state: ServerState,
    session: Session,
    headers: HeaderMap,
    slug: String,
    body: OpeningBody,
) -> Response {
    if let Some(refused) = refuse_unless_json(&headers) {
        return refused;
    }
    let pool = &state.app.pool;
    let (ctx, server) = match entitled(&state, &session, &slug).await {
        Ok(found) => found,
        Err(refused) => return refused,
    };
    let tool = match pins::declaring_tool(pool, &slug, &body.uri).await {
        Ok(Some(tool)) => tool,
        Ok(None) => return refusal(StatusCode::NOT_FOUND, "No tool declares this app."),
        Err(error) => return app_error(error.into()),
    };
    let decision = match state
        .memos
        .decision(pool, ctx.session_kind, &slug, &tool, Surface::Host)
        .await
    {
        Ok(decision) => decision,
        Err(error) => return app_error(error),
    };
    let call = ToolCall {
        surface: Surface::Host,
        slug: slug.clone(),
        tool: tool.clone(),
        arguments: serde_json::Map::new(),
        bytes_in: 0,
    };
    let answered = from_console(&state, &ctx, &server, decision, &call).await;
    match answered {
        Ok(answer) => {
            Json(json!({"tool": tool, "arguments": {}, "result": answer.result})).into_response()
        }
        Err(error) => call_error(&error),
    }
}

#[derive(Deserialize)]
pub struct ReadBody {
    uri: String,
}

/// POST /apps/<slug>/resources/read: the bridge's `resources/read`, for this server's
/// `ui://` resources only, checked as discovery checks them.
pub async fn resources_read(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    Json(body): Json<ReadBody>,
) -> Response {
    if let Some(refused) = refuse_unless_json(&headers) {
        return refused;
    }
    let (ctx, server) = match entitled(&state, &session, &slug).await {
        Ok(found) => found,
        Err(refused) => return refused,
    };
    if !body.uri.starts_with("ui://") || !server.approves(Capability::Apps) {
        return refusal(
            StatusCode::FORBIDDEN,
            "Only this server's ui:// resources can be read.",
        );
    }
    let Some(endpoint) = server.endpoint() else {
        return refusal(StatusCode::BAD_GATEWAY, "The server has no endpoint.");
    };
    let hub = &state.app.hub;
    match hub.read_resource(&slug, &endpoint, &body.uri).await {
        Ok(read) => match app::servers::ssr::discovery::app_resource(
            &body.uri,
            None,
            &read,
            hub.settings().resource_limit,
        ) {
            Ok(_) => Json(read).into_response(),
            Err(problem) => refusal(
                StatusCode::BAD_GATEWAY,
                &format!("The resource is not a valid app resource: {problem}"),
            ),
        },
        Err(error) => {
            let what = format!("resources/read {}", body.uri);
            let reference = upstream_failure(&slug, &what, ctx.user.id, &error.to_string());
            refusal(
                StatusCode::BAD_GATEWAY,
                &format!("The server could not read it (reference {reference})."),
            )
        }
    }
}
