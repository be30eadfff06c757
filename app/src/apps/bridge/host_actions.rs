//! Ask-first host actions (SPEC §6): opening a link the server's allow-list does not name,
//! saving files, copying text. Each waits for the person in `prompts`, and each decision is
//! recorded by the console (`/apps/<slug>/host-actions`). The rules — which hosts open
//! unasked, which names and types files are saved under — are `apps::host_actions`.

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use serde_json::{Value, json};

use super::super::bridge_message::{self, Id};
use super::super::host_actions::{Body, DownloadItem, link_host_allowed, readable_host};
use super::super::host_view::{Ask, FileLine};
use super::prompts::{self, Outcome};
use super::{Shared, calls, error, result, send, view};

/// `ui/open-link`: an http(s) URL only; a host on the server's allow-list opens at once,
/// any other after the person approves, in a new tab with no opener and no referrer.
pub(super) fn open_link(session: &Shared, id: Id, url: String) {
    let host = web_sys::Url::new(&url).ok().map(|u| u.hostname());
    let (Some(host), true) = (host, bridge_message::is_openable_link(&url)) else {
        return send(session, error(&id, -32000, "only http(s) links open"));
    };
    let allowed = link_host_allowed(&host, &session.borrow().app.link_hosts);
    if allowed {
        let opened = open_window(&url);
        record(
            session,
            "open-link",
            "allowed",
            json!({"url": url, "host": host}),
        );
        return send(session, answer(&id, opened, "the link could not be opened"));
    }
    let ask = Ask::OpenLink {
        url: url.clone(),
        host: readable_host(&host),
        host_ascii: host.clone(),
    };
    prompts::ask(session, ask, move |session, outcome| match outcome {
        // Runs inside the person's click, so the new tab is theirs to open.
        Outcome::Approved => {
            let opened = open_window(&url);
            record(
                session,
                "open-link",
                "approved",
                json!({"url": url, "host": host}),
            );
            send(session, answer(&id, opened, "the link could not be opened"));
        }
        Outcome::Declined | Outcome::Expired => {
            record(
                session,
                "open-link",
                "declined",
                json!({"url": url, "host": host}),
            );
            send(
                session,
                error(&id, -32000, "The person declined to open this link."),
            );
        }
    });
}

fn open_window(url: &str) -> bool {
    web_sys::window()
        .and_then(|w| {
            w.open_with_url_and_target_and_features(url, "_blank", "noopener,noreferrer")
                .ok()
        })
        .is_some()
}

/// `ui/download-file`: the files are listed for the person; approved, each is saved through
/// the host under a safe name and an inert type (a resource link is read from the same
/// server through the console).
pub(super) fn download(session: &Shared, id: Id, items: Vec<DownloadItem>) {
    let files: Vec<FileLine> = items
        .iter()
        .map(|item| FileLine {
            name: item.file_name(),
            content_type: item.content_type().into(),
            size: item.size(),
        })
        .collect();
    let described = json!(
        files
            .iter()
            .map(|f| json!({"name": f.name, "type": f.content_type, "bytes": f.size}))
            .collect::<Vec<_>>()
    );
    prompts::ask(
        session,
        Ask::Download { files },
        move |session, outcome| match outcome {
            Outcome::Approved => {
                let session = session.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    let saved = save_all(&session, &items).await;
                    let detail = json!({"files": described, "saved": saved.is_ok()});
                    record(&session, "download", "approved", detail);
                    if saved.is_err() {
                        view(&session)
                            .outcome
                            .set(Some("The download failed.".into()));
                    }
                    send(
                        &session,
                        answer(&id, saved.is_ok(), &saved.err().unwrap_or_default()),
                    );
                });
            }
            Outcome::Declined | Outcome::Expired => {
                record(session, "download", "declined", json!({"files": described}));
                send(
                    session,
                    error(&id, -32000, "The person declined the download."),
                );
            }
        },
    );
}

async fn save_all(session: &Shared, items: &[DownloadItem]) -> Result<(), String> {
    let slug = session.borrow().app.slug.clone();
    for item in items {
        let body = match item {
            DownloadItem::Embedded { body, .. } => body.clone(),
            DownloadItem::Link { uri, .. } => {
                let read =
                    calls::post(&format!("/apps/{slug}/download"), &json!({"uri": uri})).await?;
                let first = &read["contents"][0];
                match (first["text"].as_str(), first["blob"].as_str()) {
                    (Some(text), _) => Body::Text(text.to_owned()),
                    (None, Some(blob)) => Body::Base64(blob.to_owned()),
                    _ => return Err("the server had nothing to download".into()),
                }
            }
        };
        save(&item.file_name(), item.content_type(), &body)?;
    }
    Ok(())
}

/// Saves one file with an `<a download>` the host makes and clicks.
fn save(name: &str, content_type: &str, body: &Body) -> Result<(), String> {
    let failed = |_| "the file could not be saved".to_string();
    let parts = js_sys::Array::new();
    match body {
        Body::Text(text) => {
            parts.push(&text.into());
        }
        Body::Base64(blob) => {
            let window = web_sys::window().ok_or("no window")?;
            let binary = window.atob(blob).map_err(failed)?;
            let bytes: Vec<u8> = binary.chars().map(|c| c as u32 as u8).collect();
            parts.push(&js_sys::Uint8Array::from(bytes.as_slice()).into());
        }
    }
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(content_type);
    let blob =
        web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(failed)?;
    let href = web_sys::Url::create_object_url_with_blob(&blob).map_err(failed)?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let anchor: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(failed)?
        .dyn_into()
        .map_err(|_| "no anchor".to_string())?;
    anchor.set_href(&href);
    anchor.set_download(name);
    anchor.set_rel("noopener");
    anchor.click();
    let _ = web_sys::Url::revoke_object_url(&href);
    Ok(())
}

/// `x-strad/clipboard-write`: the text is shown; approved, it is copied within the
/// person's click.
pub(super) fn clipboard(session: &Shared, id: Id, text: String) {
    let shown: String = text.chars().take(8 * 1024).collect();
    let bytes = text.len();
    prompts::ask(
        session,
        Ask::Clipboard { text: shown },
        move |session, outcome| match outcome {
            Outcome::Approved => {
                let written =
                    web_sys::window().map(|w| w.navigator().clipboard().write_text(&text));
                record(session, "clipboard", "approved", json!({"bytes": bytes}));
                let session = session.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    let copied = match written {
                        Some(promise) => {
                            wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
                        }
                        None => false,
                    };
                    send(
                        &session,
                        answer(&id, copied, "the clipboard could not be written"),
                    );
                });
            }
            Outcome::Declined | Outcome::Expired => {
                record(session, "clipboard", "declined", json!({"bytes": bytes}));
                send(
                    session,
                    error(&id, -32000, "The person declined to copy this text."),
                );
            }
        },
    );
}

fn answer(id: &Id, done: bool, failure: &str) -> Value {
    if done {
        result(id, json!({}))
    } else {
        error(id, -32000, failure)
    }
}

/// Records a decision with the console (its audit log).
fn record(session: &Shared, action: &str, decision: &str, detail: Value) {
    let slug = session.borrow().app.slug.clone();
    let body = json!({"action": action, "decision": decision, "detail": detail});
    view(session).outcome.set(Some(match (action, decision) {
        (_, "declined") => "Declined: nothing was done.".to_string(),
        ("open-link", _) => "The link was opened in a new tab.".to_string(),
        ("download", _) => "The download was saved.".to_string(),
        _ => "The text was copied.".to_string(),
    }));
    wasm_bindgen_futures::spawn_local(async move {
        let _ = calls::post(&format!("/apps/{slug}/host-actions"), &body).await;
    });
}
