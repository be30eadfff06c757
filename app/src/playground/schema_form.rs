//! A form from a tool's JSON input schema (SPEC §7): what fields to show, what value the
//! filled form makes, and what is wrong with it, field by field. Pure, so it is tested over
//! the schemas of real servers; the playground renders it and the browser runs it.
//!
//! Supported: `string` (with `enum`, `format`, `minLength`, `maxLength`), `number` and
//! `integer` (`minimum`, `maximum`), `boolean`, `enum`/`const` of any scalars, `array` of any
//! supported item, nested `object`s with `required` and `default`s, local `$ref`s
//! (`#/$defs/…`, `#/definitions/…`), nullable forms (`type: [T, "null"]`, `anyOf: [T, null]`).
//! Anything else is a raw JSON field, never refused: the person can still call the tool.

use serde_json::{Map, Value};

/// Nesting deeper than this (or a `$ref` cycle) becomes a raw JSON field.
const MAX_DEPTH: usize = 12;

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        /// `date`, `email`, `uri`… (shown as a hint; only the length is checked).
        format: Option<String>,
        multiline: bool,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of these values (strings, numbers, booleans or null).
    Choice(Vec<Value>),
    List {
        items: Box<Field>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
    Object(Vec<Field>),
    /// Any JSON the schema allows; edited as text.
    Json,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The property name (empty for the root and for list items).
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    pub kind: Kind,
}

impl Field {
    /// The label a person reads: the title, else the property name.
    pub fn label(&self) -> String {
        self.title.clone().unwrap_or_else(|| self.name.clone())
    }
}

/// The form for a tool's `inputSchema` (its root is an object; anything else is raw JSON).
pub fn form_of(schema: &Value) -> Field {
    let mut field = field_of(schema, schema, String::new(), 0);
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

fn field_of(root: &Value, schema: &Value, name: String, depth: usize) -> Field {
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
        let mut inner = field_of(root, resolved, name, depth + 1);
        describe(&mut inner, schema);
        return inner;
    }
    if let Some((inner_schema, _)) = non_null(resolved) {
        let mut inner = field_of(root, inner_schema, name, depth + 1);
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
            Some(items) if items.is_object() => Kind::List {
                items: Box::new(field_of(root, items, String::new(), depth + 1)),
                min_items: text("minItems"),
                max_items: text("maxItems"),
            },
            _ => Kind::Json,
        },
        "object" => {
            let required: Vec<&str> = resolved
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match resolved.get("properties").and_then(Value::as_object) {
                Some(properties) => Kind::Object(
                    properties
                        .iter()
                        .map(|(key, property)| {
                            let mut child = field_of(root, property, key.clone(), depth + 1);
                            child.required = required.contains(&key.as_str());
                            child
                        })
                        .collect(),
                ),
                // An open object (no properties): raw JSON.
                None => Kind::Json,
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

/// The value a form starts with: every default, and nothing else (absent optional fields
/// stay absent, so the server's own defaults apply).
pub fn initial_value(field: &Field) -> Value {
    match (&field.kind, &field.default) {
        (_, Some(default)) => default.clone(),
        (Kind::Object(fields), None) => {
            let mut object = Map::new();
            for child in fields {
                let value = initial_value(child);
                let empty = value.is_null() || value.as_object().is_some_and(|o| o.is_empty());
                if child.default.is_some() || !empty || (child.required && !value.is_null()) {
                    object.insert(child.name.clone(), value);
                }
            }
            Value::Object(object)
        }
        (Kind::List { .. }, None) if field.required => Value::Array(vec![]),
        _ => Value::Null,
    }
}

/// A problem with one field; `path` is a JSON pointer (`/filters/0/name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

/// Everything wrong with `value` as arguments of `field`, each at its field.
pub fn validate(field: &Field, value: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    check(field, value, String::new(), &mut problems);
    problems
}

fn describe_choice(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check(field: &Field, value: &Value, path: String, problems: &mut Vec<Problem>) {
    let mut say = |message: String| {
        problems.push(Problem {
            path: path.clone(),
            message,
        })
    };
    if value.is_null() {
        if field.required && !matches!(&field.kind, Kind::Choice(v) if v.contains(&Value::Null)) {
            say("Required.".into());
        }
        return;
    }
    match &field.kind {
        Kind::Text {
            min_length,
            max_length,
            ..
        } => {
            let Some(text) = value.as_str() else {
                return say("Must be text.".into());
            };
            let length = text.chars().count() as u64;
            if field.required && text.is_empty() {
                say("Required.".into());
            } else if min_length.is_some_and(|min| length < min) {
                say(format!("At least {} characters.", min_length.unwrap_or(0)));
            } else if max_length.is_some_and(|max| length > max) {
                say(format!("At most {} characters.", max_length.unwrap_or(0)));
            }
        }
        Kind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let Some(number) = value.as_f64() else {
                return say(if *integer {
                    "Must be a whole number.".into()
                } else {
                    "Must be a number.".into()
                });
            };
            if *integer && number.fract() != 0.0 {
                say("Must be a whole number.".into());
            } else if minimum.is_some_and(|min| number < min) {
                say(format!("At least {}.", minimum.unwrap_or(0.0)));
            } else if maximum.is_some_and(|max| number > max) {
                say(format!("At most {}.", maximum.unwrap_or(0.0)));
            }
        }
        Kind::Boolean => {
            if !value.is_boolean() {
                say("Must be true or false.".into());
            }
        }
        Kind::Choice(values) => {
            if !values.contains(value) {
                let choices: Vec<String> = values.iter().map(describe_choice).collect();
                say(format!("Must be one of: {}.", choices.join(", ")));
            }
        }
        Kind::List {
            items,
            min_items,
            max_items,
        } => {
            let Some(list) = value.as_array() else {
                return say("Must be a list.".into());
            };
            let count = list.len() as u64;
            if min_items.is_some_and(|min| count < min) {
                say(format!("At least {} items.", min_items.unwrap_or(0)));
            } else if max_items.is_some_and(|max| count > max) {
                say(format!("At most {} items.", max_items.unwrap_or(0)));
            }
            for (i, item) in list.iter().enumerate() {
                let mut item_field = (**items).clone();
                item_field.required = true;
                check(&item_field, item, format!("{path}/{i}"), problems);
            }
        }
        Kind::Object(fields) => {
            let Some(object) = value.as_object() else {
                return say("Must be an object.".into());
            };
            for child in fields {
                let child_value = object.get(&child.name).unwrap_or(&Value::Null);
                check(
                    child,
                    child_value,
                    format!("{path}/{}", escape_pointer(&child.name)),
                    problems,
                );
            }
        }
        Kind::Json => {}
    }
}

/// A JSON pointer segment (`~` and `/` escaped).
pub fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// What a text input's content means for a number field: `Null` when empty, the number
/// when it parses (an integer stays an integer), else the text itself (reported by
/// `validate` as not a number).
pub fn number_from_input(text: &str, integer: bool) -> Value {
    let text = text.trim();
    if text.is_empty() {
        return Value::Null;
    }
    if integer && let Ok(n) = text.parse::<i64>() {
        return Value::from(n);
    }
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() => serde_json::Number::from_f64(n)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(text.into())),
        _ => Value::String(text.into()),
    }
}

/// Sets `value` at `pointer` inside `root`, making objects and growing arrays on the way;
/// a `Null` value removes an object member (the field was cleared).
pub fn set_at(root: &mut Value, pointer: &str, value: Value) {
    if pointer.is_empty() {
        *root = value;
        return;
    }
    let segments: Vec<String> = pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut current = root;
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        if current.is_null() {
            // Made on the way: a list when the segment is an index, else an object.
            *current = if segment.parse::<usize>().is_ok() {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            };
        }
        match current {
            Value::Array(items) => {
                let Ok(index) = segment.parse::<usize>() else {
                    return;
                };
                while items.len() <= index {
                    items.push(Value::Null);
                }
                if last {
                    items[index] = value;
                    return;
                }
                current = &mut items[index];
            }
            other => {
                if !other.is_object() {
                    *other = Value::Object(Map::new());
                }
                let Value::Object(object) = other else { return };
                if last {
                    if value.is_null() {
                        object.remove(segment);
                    } else {
                        object.insert(segment.clone(), value);
                    }
                    return;
                }
                current = object.entry(segment.clone()).or_insert(Value::Null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn problems_are_reported_at_their_fields() {
        let form = form_of(&json!({
            "type": "object",
            "required": ["name", "count", "items"],
            "properties": {
                "name": {"type": "string", "minLength": 2},
                "count": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "items": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}},
                "a/b": {"type": "boolean"},
            }
        }));
        let problems = validate(
            &form,
            &json!({"name": "x", "count": 1.5, "mode": "c", "items": [{"id": 3}, {}], "a/b": "yes"}),
        );
        let at = |p: &str| {
            problems
                .iter()
                .find(|x| x.path == p)
                .map(|x| x.message.clone())
        };
        assert_eq!(at("/name").as_deref(), Some("At least 2 characters."));
        assert_eq!(at("/count").as_deref(), Some("Must be a whole number."));
        assert_eq!(at("/mode").as_deref(), Some("Must be one of: a, b."));
        assert_eq!(at("/items/0/id").as_deref(), Some("Must be text."));
        assert_eq!(at("/items/1/id").as_deref(), Some("Required."));
        assert_eq!(at("/a~1b").as_deref(), Some("Must be true or false."));
        assert_eq!(
            validate(&form, &json!({})).len(),
            3,
            "three required fields missing"
        );
        assert!(
            validate(
                &form,
                &json!({"name": "xy", "count": 2, "items": [{"id": "a"}]})
            )
            .is_empty()
        );
    }

    #[test]
    fn inputs_become_values_and_land_at_their_pointer() {
        assert_eq!(number_from_input(" 42 ", true), json!(42));
        assert_eq!(number_from_input("4.5", false), json!(4.5));
        assert_eq!(number_from_input("", false), Value::Null);
        assert_eq!(number_from_input("four", false), json!("four"));
        assert_eq!(number_from_input("1e999", false), json!("1e999"));
        let mut value = json!({});
        set_at(&mut value, "/where/lat", json!(1.5));
        set_at(&mut value, "/tags/1", json!("b"));
        set_at(&mut value, "/a~1b", json!(true));
        assert_eq!(
            value,
            json!({"where": {"lat": 1.5}, "tags": [null, "b"], "a/b": true})
        );
        set_at(&mut value, "/where/lat", Value::Null);
        assert_eq!(value["where"], json!({}));
    }

    #[test]
    fn a_root_that_is_not_an_object_is_raw_json() {
        assert_eq!(form_of(&json!({"type": "string"})).kind, Kind::Json);
        assert_eq!(form_of(&json!(true)).kind, Kind::Json);
        assert_eq!(form_of(&json!({"type": "object"})).kind, Kind::Json);
    }
}
