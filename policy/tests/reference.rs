//! The reference (`docs/policy.md`) and the schema cannot drift apart: every property of the
//! schema has a description and a row in the reference, and every key the reference
//! documents exists in the schema.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn schema() -> Value {
    serde_json::from_str(toolgate_policy::SCHEMA).expect("the schema is JSON")
}

fn reference() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/policy.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A property: its documented path (`dispatch.timeout`, `tools.<name>.rules.deny[].args`)
/// and its description.
struct Property {
    path: String,
    description: Option<String>,
}

/// Follows a local `$ref`, keeping the structure of the target.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(target) => root
            .pointer(target.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("dangling $ref {target}")),
        None => node,
    }
}

fn walk(root: &Value, node: &Value, path: &str, out: &mut Vec<Property>) {
    let node = resolve(root, node);
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (key, child) in properties {
            let child_path = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            out.push(Property {
                path: child_path.clone(),
                description: child
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
            walk(root, child, &child_path, out);
        }
    }
    if let Some(child) = node.get("additionalProperties").filter(|v| v.is_object()) {
        let key = child.get("x-key").and_then(Value::as_str).unwrap_or("name");
        let child_path = format!("{path}.<{key}>");
        out.push(Property {
            path: child_path.clone(),
            description: resolve(root, child)
                .get("description")
                .or_else(|| child.get("description"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
        walk(root, child, &child_path, out);
    }
    if let Some(items) = node.get("items") {
        walk(root, items, &format!("{path}[]"), out);
    }
}

fn properties() -> Vec<Property> {
    let schema = schema();
    let mut out = Vec::new();
    walk(&schema, &schema, "", &mut out);
    out
}

/// The first cells of the rows of the key tables (those whose header starts `| key |`).
fn key_rows(reference: &str) -> Vec<String> {
    let mut in_key_table = false;
    let mut rows = Vec::new();
    for line in reference.lines() {
        if !line.starts_with('|') {
            in_key_table = false;
        } else if line.starts_with("| key |") {
            in_key_table = true;
        } else if in_key_table {
            let cell = line
                .trim_start_matches('|')
                .split(" |")
                .next()
                .unwrap_or("")
                .trim();
            if let Some(path) = cell.strip_prefix('`').and_then(|c| c.strip_suffix('`')) {
                rows.push(path.to_owned());
            }
        }
    }
    rows
}

#[test]
fn every_free_form_key_is_named_for_the_reference() {
    let unnamed: Vec<String> = properties()
        .into_iter()
        .map(|p| p.path)
        .filter(|p| p.contains("<name>"))
        .collect();
    assert!(
        unnamed.is_empty(),
        "additionalProperties schemas without x-key: {unnamed:#?}"
    );
}

#[test]
fn every_schema_property_has_a_description() {
    let missing: Vec<String> = properties()
        .into_iter()
        .filter(|p| p.description.as_deref().is_none_or(|d| d.trim().is_empty()))
        .map(|p| p.path)
        .collect();
    assert!(
        missing.is_empty(),
        "properties without a description: {missing:#?}"
    );
}

#[test]
fn every_schema_property_is_in_the_reference() {
    let documented: BTreeSet<String> = key_rows(&reference()).into_iter().collect();
    let missing: Vec<String> = properties()
        .into_iter()
        .map(|p| p.path)
        .filter(|path| !documented.contains(path))
        .collect();
    assert!(
        missing.is_empty(),
        "properties missing from docs/policy.md: {missing:#?}"
    );
}

#[test]
fn every_key_in_the_reference_exists_in_the_schema() {
    let known: BTreeSet<String> = properties().into_iter().map(|p| p.path).collect();
    let documented = key_rows(&reference());
    assert!(!documented.is_empty(), "the reference has no key rows");
    let unknown: Vec<&String> = documented.iter().filter(|p| !known.contains(*p)).collect();
    assert!(
        unknown.is_empty(),
        "docs/policy.md documents keys the schema lacks: {unknown:#?}"
    );
}

#[test]
fn the_schema_forbids_unknown_keys_in_every_mapping_of_fixed_keys() {
    fn check(root: &Value, node: &Value, path: &str) {
        let node = resolve(root, node);
        if node.get("properties").is_some() {
            assert_eq!(
                node.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{path} must set additionalProperties: false"
            );
        }
        for key in ["properties"] {
            if let Some(map) = node.get(key).and_then(Value::as_object) {
                for (name, child) in map {
                    check(root, child, &format!("{path}.{name}"));
                }
            }
        }
        if let Some(child) = node.get("additionalProperties").filter(|v| v.is_object()) {
            check(root, child, &format!("{path}.<key>"));
        }
        if let Some(items) = node.get("items") {
            check(root, items, &format!("{path}[]"));
        }
    }
    let schema = schema();
    check(&schema, &schema, "(root)");
}

#[test]
fn the_schema_is_draft_2020_12() {
    assert_eq!(
        schema()["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}
