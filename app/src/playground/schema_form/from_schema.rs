//! A schema read into fields: `$ref`s resolved, nullable forms unwrapped, anything
//! unsupported (or nested too deep) a raw JSON field.

use serde_json::Value;

use super::{Field, Kind};

/// Nesting deeper than this (or a `$ref` cycle) becomes a raw JSON field.
const MAX_DEPTH: usize = 12;
/// Fields one form holds at most besides its root: an object or list that would pass it (a
/// schema whose `$ref`s fan out, each level doubling the fields) becomes a raw JSON field.
const MAX_FIELDS: usize = 1000;

/// The form for a tool's `inputSchema` (its root is an object; anything else is raw JSON).
pub fn form_of(schema: &Value) -> Field {
    let mut left = MAX_FIELDS;
    let mut field = field_of(schema, schema, String::new(), 0, &mut left);
    field.required = true;
    if !matches!(field.kind, Kind::Object(_) | Kind::Json) {
        field.kind = Kind::Json;
    }
    field
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
        return Some(schema);
    };
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

/// The non-null alternative of a nullable schema, if the schema is one.
fn non_null(schema: &Value) -> Option<(&Value, bool)> {
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let others: Vec<&Value> = options
                .iter()
                .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if others.len() == 1 && options.len() == 2 {
                return Some((others[0], true));
            }
        }
    }
    None
}

/// The field `schema` describes; `left` is the number of fields the form may still add.
fn field_of(root: &Value, schema: &Value, name: String, depth: usize, left: &mut usize) -> Field {
    let json = |name: String| Field {
        name,
        title: None,
        description: None,
        required: false,
        default: None,
        kind: Kind::Json,
    };
    if depth > MAX_DEPTH {
        return json(name);
    }
    let Some(resolved) = resolve(root, schema) else {
        return json(name);
    };
    // A ref points somewhere that is again a ref: follow it one step at a time.
    if resolved.get("$ref").is_some() && !std::ptr::eq(resolved, schema) {
        let mut inner = field_of(root, resolved, name, depth + 1, left);
        describe(&mut inner, schema);
        return inner;
    }
    if let Some((inner_schema, _)) = non_null(resolved) {
        let mut inner = field_of(root, inner_schema, name, depth + 1, left);
        describe(&mut inner, resolved);
        return inner;
    }
    let mut field = json(name);
    describe(&mut field, resolved);
    let text = |key: &str| resolved.get(key).and_then(Value::as_u64);
    let number = |key: &str| resolved.get(key).and_then(Value::as_f64);
    if let Some(value) = resolved.get("const") {
        field.kind = Kind::Choice(vec![value.clone()]);
        return field;
    }
    if let Some(values) = resolved.get("enum").and_then(Value::as_array) {
        if !values.is_empty() && values.iter().all(|v| !v.is_array() && !v.is_object()) {
            field.kind = Kind::Choice(values.clone());
        }
        return field;
    }
    let types: Vec<&str> = match resolved.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if resolved.get("properties").is_some() => vec!["object"],
        _ => vec![],
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    let [only] = types.as_slice() else {
        return field;
    };
    field.kind = match *only {
        "string" => {
            let format = resolved
                .get("format")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Kind::Text {
                min_length: text("minLength"),
                max_length: text("maxLength"),
                multiline: format.is_none() && text("maxLength").is_none_or(|m| m > 200),
                format,
            }
        }
        "number" | "integer" => Kind::Number {
            integer: *only == "integer",
            minimum: number("minimum"),
            maximum: number("maximum"),
        },
        "boolean" => Kind::Boolean,
        "array" => match resolved.get("items") {
            Some(items) if items.is_object() && *left > 0 => {
                *left -= 1;
                Kind::List {
                    items: Box::new(field_of(root, items, String::new(), depth + 1, left)),
                    min_items: text("minItems"),
                    max_items: text("maxItems"),
                }
            }
            _ => Kind::Json,
        },
        "object" => {
            let required: Vec<&str> = resolved
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match resolved.get("properties").and_then(Value::as_object) {
                Some(properties) if properties.len() <= *left => {
                    *left -= properties.len();
                    Kind::Object(
                        properties
                            .iter()
                            .map(|(key, property)| {
                                let mut child =
                                    field_of(root, property, key.clone(), depth + 1, left);
                                child.required = required.contains(&key.as_str());
                                child
                            })
                            .collect(),
                    )
                }
                // An open object (no properties), or one past the form's size: raw JSON.
                _ => Kind::Json,
            }
        }
        _ => Kind::Json,
    };
    field
}

fn describe(field: &mut Field, schema: &Value) {
    let text = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .filter(|s| !s.trim().is_empty())
    };
    if let Some(title) = text("title") {
        field.title = Some(title);
    }
    if let Some(description) = text("description") {
        field.description = Some(description);
    }
    if let Some(default) = schema.get("default") {
        field.default = Some(default.clone());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::playground::schema_form::*;

    fn fields(field: &Field) -> &Vec<Field> {
        match &field.kind {
            Kind::Object(fields) => fields,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn every_supported_type_becomes_its_field() {
        let schema = json!({
            "type": "object",
            "required": ["name", "count"],
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 10},
                "count": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
                "ratio": {"type": "number"},
                "on": {"type": "boolean", "default": false},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
                "anything": {},
                "maybe": {"type": ["string", "null"]},
                "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "fixed": {"const": "v1"},
            }
        });
        let form = form_of(&schema);
        let by_name = |n: &str| fields(&form).iter().find(|f| f.name == n).unwrap().clone();
        assert!(matches!(
            by_name("name").kind,
            Kind::Text {
                min_length: Some(2),
                max_length: Some(10),
                ..
            }
        ));
        assert!(by_name("name").required);
        assert_eq!(by_name("name").label(), "Name");
        assert!(matches!(
            by_name("count").kind,
            Kind::Number { integer: true, .. }
        ));
        assert!(matches!(
            by_name("ratio").kind,
            Kind::Number { integer: false, .. }
        ));
        assert_eq!(by_name("on").kind, Kind::Boolean);
        assert_eq!(
            by_name("mode").kind,
            Kind::Choice(vec![json!("a"), json!("b")])
        );
        assert!(matches!(
            by_name("tags").kind,
            Kind::List {
                max_items: Some(3),
                ..
            }
        ));
        assert!(matches!(by_name("where").kind, Kind::Object(_)));
        assert_eq!(by_name("anything").kind, Kind::Json);
        assert!(matches!(by_name("maybe").kind, Kind::Text { .. }));
        assert!(matches!(
            by_name("either").kind,
            Kind::Number { integer: true, .. }
        ));
        assert_eq!(by_name("fixed").kind, Kind::Choice(vec![json!("v1")]));
        assert_eq!(initial_value(&form), json!({"count": 2, "on": false}));
    }

    #[test]
    fn local_refs_resolve_and_cycles_end_as_json() {
        let schema = json!({
            "type": "object",
            "properties": {"item": {"$ref": "#/$defs/item"}, "node": {"$ref": "#/$defs/node"}},
            "$defs": {
                "item": {"type": "object", "properties": {"id": {"type": "string"}}},
                "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}},
            }
        });
        let form = form_of(&schema);
        let item = &fields(&form)[0];
        assert!(matches!(&item.kind, Kind::Object(f) if f[0].name == "id"));
        // The cycle nests until the depth limit, then stops as a raw JSON field.
        let mut node = &fields(&form)[1];
        let mut depth = 0;
        while let Kind::Object(f) = &node.kind {
            node = &f[0];
            depth += 1;
        }
        assert_eq!(node.kind, Kind::Json);
        assert!(depth <= MAX_DEPTH);
    }

    fn count(field: &Field) -> usize {
        1 + match &field.kind {
            Kind::Object(fields) => fields.iter().map(count).sum(),
            Kind::List { items, .. } => count(items),
            _ => 0,
        }
    }

    #[test]
    fn refs_that_fan_out_stop_at_the_forms_size() {
        // Each level refers to the root ten times: 10^12 fields without a limit on size.
        let properties: serde_json::Map<String, Value> = (0..10)
            .map(|i| (format!("p{i}"), json!({"$ref": "#"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let form = form_of(&schema);
        assert!(count(&form) <= 1 + MAX_FIELDS, "{} fields", count(&form));
        assert_eq!(fields(&form).len(), 10, "the first levels are still a form");
        let list = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"$ref": "#"}},
            "b": {"type": "array", "items": {"$ref": "#"}},
        }});
        assert!(count(&form_of(&list)) <= 1 + MAX_FIELDS);
    }

    #[test]
    fn a_root_that_is_not_an_object_is_raw_json() {
        assert_eq!(form_of(&json!({"type": "string"})).kind, Kind::Json);
        assert_eq!(form_of(&json!(true)).kind, Kind::Json);
        assert_eq!(form_of(&json!({"type": "object"})).kind, Kind::Json);
    }
}
