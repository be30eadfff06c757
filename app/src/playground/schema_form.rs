//! A form from a tool's JSON input schema (SPEC §7): what fields to show, what value the
//! filled form makes, and what is wrong with it, field by field. Pure, so it is tested over
//! the schemas of real servers; the playground renders it and the browser runs it.
//!
//! Supported: `string` (with `enum`, `format`, `minLength`, `maxLength`), `number` and
//! `integer` (`minimum`, `maximum`), `boolean`, `enum`/`const` of any scalars, `array` of any
//! supported item, nested `object`s with `required` and `default`s, local `$ref`s
//! (`#/$defs/…`, `#/definitions/…`), nullable forms (`type: [T, "null"]`, `anyOf: [T, null]`).
//! Anything else is a raw JSON field, never refused: the person can still call the tool.
use serde_json::Value;

mod form_values;
mod from_schema;
mod validation;

pub use form_values::{escape_pointer, initial_value, number_from_input, set_at};
pub use from_schema::form_of;
pub use validation::{Problem, validate};

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
