//! Rows to views.

use serde_json::Value;
use time::OffsetDateTime;
use time::macros::format_description;

use super::changes::{Item, ItemKind};
use super::discovery::{ItemProblem, ToolInfo, string_list};
use super::registry::ServerRow;
use crate::servers::views::*;

pub fn format_time(at: OffsetDateTime) -> String {
    at.format(format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second] UTC"
    ))
    .unwrap_or_default()
}

pub fn summary(row: &ServerRow, tool_count: i64, app_count: i64) -> ServerSummary {
    let status = match (
        row.enabled,
        &row.last_discovery_at,
        &row.last_discovery_error,
    ) {
        (false, _, _) => ServerStatus::Disabled,
        (true, None, _) => ServerStatus::NeverDiscovered,
        (true, Some(_), Some(error)) => ServerStatus::Failing(error.clone()),
        (true, Some(_), None) => ServerStatus::Ok,
    };
    ServerSummary {
        slug: row.slug.clone(),
        display_name: row.display_name.clone(),
        transport: row.transport.clone(),
        target: match (&row.url, &row.command) {
            (Some(url), _) => url.clone(),
            (_, Some(command)) => command.join(" "),
            _ => String::new(),
        },
        from_config: row.from_config(),
        capabilities: row.capabilities.clone(),
        enabled: row.enabled,
        status,
        tool_count,
        app_count,
        last_discovery: row.last_discovery_at.map(format_time),
        link_hosts: row.link_hosts.clone(),
    }
}

pub fn detail(row: &ServerRow, items: &[Item]) -> ServerDetail {
    let tools: Vec<(ToolInfo, String)> = items
        .iter()
        .filter(|i| i.kind == ItemKind::Tool)
        .filter_map(|i| {
            Some((
                serde_json::from_value::<ToolInfo>(i.info.clone()).ok()?,
                i.digest.clone(),
            ))
        })
        .collect();
    let apps = items
        .iter()
        .filter(|i| i.kind == ItemKind::AppResource)
        .map(|i| AppResourceView {
            uri: i.key.clone(),
            digest: i.digest.clone(),
            content_digest: i
                .info
                .get("content_digest")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            size: i.size,
            resource_domains: string_list(i.info.get("resource_domains")),
            permissions: string_list(i.info.get("permissions")),
            declared_by: tools
                .iter()
                .filter(|(t, _)| t.resource_uri.as_deref() == Some(i.key.as_str()))
                .map(|(t, _)| t.name.clone())
                .collect(),
        })
        .collect();
    let problems: Vec<ItemProblem> =
        serde_json::from_value(row.last_discovery_problems.clone()).unwrap_or_default();
    let app_count = items
        .iter()
        .filter(|i| i.kind == ItemKind::AppResource)
        .count() as i64;
    ServerDetail {
        summary: summary(row, tools.len() as i64, app_count),
        tools: tools
            .into_iter()
            .map(|(t, digest)| ToolView {
                name: t.name,
                description: t.description,
                resource_uri: t.resource_uri,
                visibility: t
                    .visibility
                    .iter()
                    .map(|v| {
                        serde_json::to_value(v)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default()
                    })
                    .collect(),
                read_only_hint: t.read_only_hint,
                annotations: if t.annotations.is_null() {
                    String::new()
                } else {
                    t.annotations.to_string()
                },
                digest,
            })
            .collect(),
        apps,
        problems: problems
            .into_iter()
            .map(|p| ProblemView {
                item: p.item,
                problem: p.problem,
            })
            .collect(),
    }
}
