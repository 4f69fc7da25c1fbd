//! `schemas/policy.schema.json` is generated from the policy's types (`policy/src/shape`): the
//! committed file must be what the types generate, so a key is defined in one place.

use std::path::Path;

use serde_json::Value;

const BLESS: &str = "TOOLGATE_BLESS=1 cargo test -p toolgate-policy --test schema_generated";

fn committed_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/policy.schema.json")
}

/// Where two JSON values first differ, as JSON pointers (at most `limit`).
fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (x.get(key), y.get(key)) {
                    (Some(l), Some(r)) => differences(l, r, &here, out),
                    (l, r) => out.push(format!("{here}: {l:?} != {r:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differences(l, r, &format!("{at}/{i}"), out);
            }
        }
        (l, r) if l != r => out.push(format!("{at}: {l} != {r}")),
        _ => {}
    }
}

#[test]
fn the_committed_schema_is_the_one_the_policy_types_generate() {
    let generated = toolgate_policy::generated_schema();
    let path = committed_path();
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let committed =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let generated_json: Value = serde_json::from_str(&generated).expect("generated JSON");
    let committed_json: Value = serde_json::from_str(&committed).expect("committed JSON");
    let mut diffs = Vec::new();
    differences(&committed_json, &generated_json, "", &mut diffs);
    assert!(
        diffs.is_empty(),
        "schemas/policy.schema.json differs from the schema the policy types generate \
         (committed != generated):\n{}\nto rewrite it from the types, run: {BLESS}",
        diffs.join("\n")
    );
}

#[test]
fn the_embedded_schema_is_the_committed_file() {
    let committed = std::fs::read_to_string(committed_path()).expect("schema file");
    assert_eq!(toolgate_policy::SCHEMA, committed);
}
