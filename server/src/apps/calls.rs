//! The console's tool calls (SPEC §6, §8): an app's bridge (`POST /apps/<slug>/tools/call`),
//! the playground (`POST /servers/<slug>/tools/call`) and the host's opening call
//! (`POST /apps/<slug>/opening-call`). Each reads its request and hands the call to
//! `ToolCall::run`, where it is decided, made and audited. An app's answers carry the result
//! with the island actions it proposes, vetted (`app::apps::actions`); the playground's is
//! the result alone.

use std::collections::HashMap;

use app::apps::actions;
use app::apps::ssr::approval_store;
use app::auth::ssr::context::RequestContext;
use app::auth::ssr::session::{SessionPerson, signed_in_person};
use app::entitlements::policy::{Decision, Refusal, Surface};
use app::error::AppError;
use app::servers::ssr::canonical::canonical_json;
use app::servers::ssr::client::ToolAnswer;
use app::servers::ssr::registry::ServerRow;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use tower_sessions::Session;

use super::{Refused, detached, entitled, person_context, require_json, session_binding};
use crate::prefetch;
use crate::state::ServerState;
use crate::tool_call::{CallError, Caller, ToolCall};

#[derive(Deserialize)]
pub struct CallBody {
    name: String,
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
    /// The person's approval of this call, minted by `POST /apps/<slug>/approvals`.
    #[serde(default)]
    approval: Option<String>,
}

/// The bridge's `tools/call`, under the person's authority.
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

/// A person calling a tool by hand in the playground.
pub async fn playground_call(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    body: Bytes,
) -> Response {
    detached(async move {
        let surface = Surface::Playground;
        call_tool(&state, &session, &headers, &slug, &body, surface).await
    })
    .await
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
) -> Result<Response, Refused> {
    require_json(headers)?;
    let pool = &state.app.pool;
    let Ok(call) = serde_json::from_slice::<CallBody>(body) else {
        // Someone not signed in hears 401 whatever they sent.
        signed_in_person(session)
            .await
            .map_err(AppError::internal)?
            .ok_or(AppError::Unauthorized)?;
        return Err(Refused::Status(
            StatusCode::BAD_REQUEST,
            "The body must be {\"name\": string, \"arguments\": object}.".into(),
        ));
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
    let (person, (user, server, decision)) = prefetch::with_person(&state.hints, session, read)
        .await
        .map_err(AppError::internal)?
        .ok_or(AppError::Unauthorized)?;
    let ctx = person_context(session, person, user).await?;
    let (server, decision) = (server?, decision?);
    let call = ToolCall {
        surface,
        slug: slug.to_owned(),
        tool: call.name,
        arguments: call.arguments.unwrap_or_default(),
        bytes_in: body.len(),
        approval: call.approval,
    };
    let answer = from_console(state, &ctx, session, &server, decision, &call).await?;
    let body = match surface {
        // The result's text is passed on as it was serialized, not parsed again.
        Surface::App => {
            let actions = island_actions(state, &ctx, slug, &answer).await?;
            let actions = serde_json::to_string(&actions).map_err(AppError::internal)?;
            format!("{{\"result\":{},\"actions\":{actions}}}", answer.json)
        }
        _ => answer.json,
    };
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response())
}

/// The island actions `answer` proposes, vetted (`actions::Vetted`, with the title and
/// description of each drawn action's tool): each decided as the app's own call of that
/// tool would be, for this person and slug, from the same memo the call itself is decided
/// from (a button the host draws must not run what the page could not).
async fn island_actions(
    state: &ServerState,
    ctx: &RequestContext,
    slug: &str,
    answer: &ToolAnswer,
) -> Result<Vec<Value>, AppError> {
    let proposed = answer
        .result
        .meta
        .as_ref()
        .and_then(|meta| meta.get("x-strad/actions"));
    let proposals = actions::parse(proposed, slug);
    let mut tools: Vec<&str> = proposals
        .iter()
        .filter_map(actions::Proposal::awaited_tool)
        .collect();
    tools.sort_unstable();
    tools.dedup();
    let (pool, memos) = (&state.app.pool, &state.memos);
    let read = tools.iter().map(|tool| async move {
        let decision = memos
            .decision(pool, ctx.session_kind, slug, tool, Surface::App)
            .await?;
        Ok::<_, AppError>((tool.to_string(), decision))
    });
    let decisions: HashMap<String, Decision> = futures::future::try_join_all(read)
        .await?
        .into_iter()
        .collect();
    let vetted = actions::decide_each(proposals, |tool| {
        decisions
            .get(tool)
            .copied()
            .unwrap_or(Decision::Refuse(Refusal::UnknownTool))
    });
    // What a drawn action's tool says of itself, for the approval panel the host shows when
    // the person presses it.
    let mut shown = Vec::with_capacity(vetted.len());
    for action in vetted {
        let mut value = serde_json::to_value(&action).map_err(AppError::internal)?;
        if action.drawn {
            let words = approval_store::tool_words(pool, slug, &action.tool).await?;
            value["title"] = json!(words.title);
            value["description"] = json!(words.description);
        }
        shown.push(value);
    }
    Ok(shown)
}

/// `call` for the person of a console session, with the console's upstream sessions; it
/// runs to its end whatever the page does (the handler is detached). A call waiting for
/// the person's approval is answered with what the host shows them.
async fn from_console(
    state: &ServerState,
    ctx: &RequestContext,
    session: &Session,
    server: &ServerRow,
    decision: Decision,
    call: &ToolCall,
) -> Result<ToolAnswer, Refused> {
    let caller = Caller {
        user_id: ctx.user.id,
        email: ctx.user.email.clone(),
        token_id: None,
        session_binding: session_binding(session),
    };
    let ran = call
        .run(
            state,
            &caller,
            server,
            decision,
            &state.app.hub,
            None,
            std::future::pending(),
        )
        .await;
    match ran {
        Err(CallError::NeedsApproval) => Err(approval_details(state, server, call).await),
        ran => Ok(ran?),
    }
}

/// What the host's approval panel shows of a call (SPEC §8: server, tool and the exact
/// arguments), from the server's row and its tool as discovery recorded it.
async fn approval_details(state: &ServerState, server: &ServerRow, call: &ToolCall) -> Refused {
    let words = match approval_store::tool_words(&state.app.pool, &call.slug, &call.tool).await {
        Ok(words) => words,
        Err(error) => return error.into(),
    };
    let canonical = canonical_json(&Value::Object(call.arguments.clone()));
    let arguments: Value = serde_json::from_str(&canonical).unwrap_or_default();
    Refused::AwaitingApproval(json!({
        "server": server.display_name,
        "slug": call.slug,
        "tool": call.tool,
        "title": words.title,
        "description": words.description,
        "arguments": arguments,
    }))
}

#[derive(Deserialize)]
pub struct OpeningBody {
    uri: String,
}

/// The host's own call of the tool that declares the app, after the page is initialized
/// (SPEC §6 lifecycle). The server picks the tool; the decision is an app call's (its
/// policy list, the capability ceiling), but no page asked for it, so visibility does not
/// bind it and it runs only when read-only.
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
) -> Result<Response, Refused> {
    require_json(&headers)?;
    let pool = &state.app.pool;
    let (ctx, server) = entitled(&state, &session, &slug).await?;
    let Some(tool) = app::apps::ssr::pins::declaring_tool(pool, &slug, &body.uri).await? else {
        return Err(Refused::Status(
            StatusCode::NOT_FOUND,
            "No tool declares this app.".into(),
        ));
    };
    let decision = state
        .memos
        .decision(pool, ctx.session_kind, &slug, &tool, Surface::Host)
        .await?;
    let call = ToolCall {
        surface: Surface::Host,
        slug: slug.clone(),
        tool: tool.clone(),
        arguments: serde_json::Map::new(),
        bytes_in: 0,
        approval: None,
    };
    let answer = from_console(&state, &ctx, &session, &server, decision, &call).await?;
    let actions = island_actions(&state, &ctx, &slug, &answer).await?;
    let answer =
        json!({"tool": tool, "arguments": {}, "result": answer.result, "actions": actions});
    Ok(Json(answer).into_response())
}
