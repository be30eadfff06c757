//! The playground's form builder and its validation, fed any JSON a server could declare as
//! a tool's `inputSchema` (and any arguments): no panic, and a form of bounded size and
//! depth however the schema nests or refers to itself.
#![no_main]

use app::playground::schema_form::{Field, Kind, form_of, initial_value, validate};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Fields in `field` and its depth.
fn size(field: &Field) -> (usize, usize) {
    let children: Vec<&Field> = match &field.kind {
        Kind::Object(fields) => fields.iter().collect(),
        Kind::List { items, .. } => vec![items],
        _ => vec![],
    };
    children
        .into_iter()
        .map(size)
        .fold((1, 1), |(count, depth), (c, d)| {
            (count + c, depth.max(d + 1))
        })
}

fuzz_target!(|data: &[u8]| {
    // The schema, then (after a NUL) the arguments to validate.
    let (schema, arguments) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let form = form_of(&schema);
    assert!(form.required);
    assert!(matches!(form.kind, Kind::Object(_) | Kind::Json));
    let (count, depth) = size(&form);
    assert!(count <= 2_000, "{count} fields");
    assert!(depth <= 16, "{depth} deep");
    let start = initial_value(&form);
    let _ = validate(&form, &start);
    if let Ok(arguments) = serde_json::from_slice::<Value>(arguments) {
        for problem in validate(&form, &arguments) {
            assert!(problem.path.is_empty() || problem.path.starts_with('/'));
        }
    }
});
