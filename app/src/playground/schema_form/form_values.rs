//! The value a form makes: its defaults, what an input's text means, and where it lands.

use serde_json::{Map, Value};

use super::{Field, Kind};

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
    use serde_json::json;

    use super::*;

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
}
