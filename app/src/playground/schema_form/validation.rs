//! What is wrong with a filled form, field by field.

use serde_json::Value;

use super::{Field, Kind, escape_pointer};

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::playground::schema_form::*;

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
}
