//! The playground's schema forms over a corpus of real input schemas: every tool of the npm
//! example servers and of strad's own test server. Each schema must become a form (raw JSON
//! only where the schema is beyond a form), its defaults must be valid arguments, a value
//! filled in field by field must be valid, and a wrong value must be caught at its field.

use crate::support::mcp::{ExampleServer, TestServer};
use app::playground::schema_form::{self, Field, Kind};
use app::servers::ssr::client::{Endpoint, Hub, HubSettings};
use serde_json::{Map, Value, json};

/// A valid value for `field`, as a person would fill the form.
fn filled(field: &Field) -> Value {
    if let Some(default) = &field.default {
        return default.clone();
    }
    match &field.kind {
        Kind::Text { min_length, .. } => {
            Value::String("x".repeat(min_length.unwrap_or(1).max(1) as usize))
        }
        Kind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let n = minimum.or(*maximum).unwrap_or(1.0);
            if *integer {
                json!(n.ceil() as i64)
            } else {
                json!(n)
            }
        }
        Kind::Boolean => json!(true),
        Kind::Choice(choices) => choices[0].clone(),
        Kind::List {
            items, min_items, ..
        } => Value::Array(
            (0..min_items.unwrap_or(1).max(1))
                .map(|_| filled(items))
                .collect(),
        ),
        Kind::Object(fields) => {
            let mut object = Map::new();
            for child in fields {
                object.insert(child.name.clone(), filled(child));
            }
            Value::Object(object)
        }
        Kind::Json => json!({}),
    }
}

/// A value of the wrong type for the first typed field, and that field's pointer.
fn broken(form: &Field) -> Option<(Value, String)> {
    let Kind::Object(fields) = &form.kind else {
        return None;
    };
    let mut value = filled(form);
    for child in fields {
        let wrong = match child.kind {
            Kind::Text { .. } | Kind::Choice(_) => json!(12345.5),
            Kind::Number { .. } => json!("not a number"),
            Kind::Boolean => json!("yes"),
            Kind::List { .. } | Kind::Object(_) => json!(7),
            Kind::Json => continue,
        };
        value[&child.name] = wrong;
        return Some((
            value,
            format!("/{}", schema_form::escape_pointer(&child.name)),
        ));
    }
    None
}

async fn schemas_of(url: &str) -> Vec<(String, Value)> {
    let (changes, _keep) = tokio::sync::mpsc::unbounded_channel();
    let hub = Hub::new(HubSettings::default(), changes);
    let endpoint = Endpoint::Http {
        url: url.to_owned(),
    };
    let tools = hub
        .list_tools("corpus", &endpoint)
        .await
        .expect("tools/list");
    tools
        .into_iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_owned(),
                t["inputSchema"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_real_input_schema_makes_a_working_form() {
    let mut corpus = Vec::new();
    for bin in [
        "mcp-server-basic-vanillajs",
        "mcp-budget-allocator-server",
        "mcp-server-debug",
        "mcp-scenario-modeler-server",
        "mcp-cohort-heatmap-server",
        "mcp-customer-segmentation-server",
        "mcp-system-monitor-server",
    ] {
        let server = ExampleServer::start(bin).await;
        for (name, schema) in schemas_of(&server.url).await {
            corpus.push((format!("{bin}/{name}"), schema));
        }
    }
    let test_server = TestServer::start().await;
    for (name, schema) in schemas_of(&test_server.url).await {
        corpus.push((format!("test-server/{name}"), schema));
    }
    assert!(
        corpus.len() >= 8,
        "a corpus of real schemas: {}",
        corpus.len()
    );
    let mut typed_fields = 0;
    let mut broken_checked = 0;
    for (name, schema) in &corpus {
        let form = schema_form::form_of(schema);
        assert!(
            matches!(form.kind, Kind::Object(_) | Kind::Json),
            "{name}: the root is an object form or raw JSON"
        );
        if let Kind::Object(fields) = &form.kind {
            typed_fields += fields.iter().filter(|f| f.kind != Kind::Json).count();
        }
        let start = schema_form::initial_value(&form);
        let required_missing = schema_form::validate(&form, &start)
            .iter()
            .all(|p| p.message == "Required.");
        assert!(
            required_missing,
            "{name}: defaults are valid, only required fields are missing"
        );
        let value = filled(&form);
        assert_eq!(
            schema_form::validate(&form, &value),
            vec![],
            "{name}: a filled form is valid: {value}"
        );
        if let Some((wrong, pointer)) = broken(&form) {
            let problems = schema_form::validate(&form, &wrong);
            assert!(
                problems.iter().any(|p| p.path == pointer),
                "{name}: a wrong value is caught at {pointer}: {problems:?}"
            );
            broken_checked += 1;
        }
    }
    println!(
        "schema corpus: {} tools, {typed_fields} typed fields, {broken_checked} wrong values caught: {}",
        corpus.len(),
        corpus
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
