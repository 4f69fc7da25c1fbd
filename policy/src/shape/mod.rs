//! How a policy file is read into the typed [`Policy`], and the JSON Schema it is checked
//! against, both from one definition per key.
//!
//! A key is a field of the policy's types (`model/`; the few sections whose typed form is
//! not the file's, in this folder): its doc comment is its description, its `schemars`
//! attributes its schema, its `serde` attributes how it is read. From these types come
//! - the JSON Schema (`schemas/policy.schema.json`, embedded as [`crate::SCHEMA`]), generated
//!   with `schemars` ([`generated_schema`]); a test fails when the committed file differs, and
//! - the typed values: after the schema check, `serde` reads the positioned tree into the
//!   types ([`de`]), each value into its final form (a duration into a `Duration`, a glob
//!   compiled, a path resolved against the policy's directory); a value that cannot be
//!   converted is reported at its line and column, and reading goes on, so every problem is
//!   reported in one pass.
//!
//! Conventions the error messages rely on (see `schema.rs`):
//! - `x-expected` (an `extend` on a field or a type) holds the words for "expected ...";
//! - `x-key` on a map's value type names its key in the reference (`tools.<pattern>`);
//! - value kinds many keys share (durations, counts, names, paths, globs) are the `$defs`
//!   types of [`values`], so their words are written once.
//!
//! # Adding a key
//!
//! 1. Add a field to its section's type in `model/` (`calls.rs`: `dispatch`, `tools`,
//!    `aliases`, `rules`, `scripts`, `sessions`; `extensions.rs`: `reduction`, `search`), with
//!    its doc comment (first paragraph: the description users see; later paragraphs: notes for
//!    Rust readers) and its default in the type's `Default`. Give it its value kind when its
//!    Rust type alone does not say it: `#[schemars(with = "Flag")]` for a boolean,
//!    `#[schemars(with = "Size")]` for a count, `#[serde(deserialize_with =
//!    "values::duration_or_none")]` with `#[schemars(with = "DurationText")]` for a duration,
//!    `values::path` with `PathText` for a path; bounds and `x-expected` words go in
//!    `#[schemars(range(...), extend(...))]`.
//! 2. Run `TOOLGATE_BLESS=1 cargo test -p toolgate-policy --test schema_generated` to write
//!    the schema, and add the key's row to `docs/policy.md` (a test checks both).
//!
//! That is all the policy crate needs: the loader, the schema and the error messages follow
//! from the field. A new section is a field of [`Policy`] whose type derives `Deserialize`
//! and `JsonSchema` like its neighbours. A key of `plugins`, `mcp_servers` or `scripts` is a
//! field of the file's type in this folder, moved into the model's field in its
//! `Deserialize`. A new kind of value is a type or a function in [`values`]; a conversion that
//! can fail reports through [`de::checked`].
//!
//! A guard layer that reads the key is one file in `engine/src/guard/` and its place in
//! `engine/src/guard/builder.rs`, which hands each layer the policy.

pub(crate) mod de;
mod mcp_servers;
mod plugins;
mod scripts;
pub(crate) mod values;

use std::path::Path;

use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::Value;

use crate::error::Diagnostics;
use crate::model::Policy;
use crate::yaml::Node;

/// The typed policy of the schema-valid tree `root` of the policy file `file`, or every
/// problem found.
pub(crate) fn read(root: &Node, file: &Path) -> Result<Policy, Diagnostics> {
    let (read, mut problems) = match de::from_tree::<Policy>(root, file) {
        Ok(policy) => (Some(policy), Diagnostics::default()),
        Err(problems) => (None, problems),
    };
    if let Some(servers) = root.get("mcp_servers") {
        mcp_servers::check_unique_names(&servers.value, file, &mut problems);
    }
    match read {
        Some(mut policy) if problems.is_empty() => {
            policy.source = Some(file.to_path_buf());
            Ok(policy)
        }
        _ => Err(problems),
    }
}

/// The policy JSON Schema generated from the policy's types, as pretty-printed JSON with a
/// final newline: what `schemas/policy.schema.json` must hold.
pub fn generated_schema() -> String {
    let schema = SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(not_nullable))
        .with_transform(RecursiveTransform(no_number_format))
        .with_transform(RecursiveTransform(one_line_description))
        .with_transform(RecursiveTransform(no_default))
        .into_generator()
        .into_root_schema_for::<Policy>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// An absent key is written by leaving it out, never as `null`: `Option` fields keep the
/// schema of what they hold, so `timeout: ~` is refused like any other wrong value.
fn not_nullable(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            object.insert("type".to_owned(), single);
        }
    }
    if let Some(Value::Array(options)) = object.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
    let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
    let collapsible = object
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|options| options.len() == 2 && options.iter().any(is_null));
    if collapsible && let Some(Value::Array(options)) = object.remove("anyOf") {
        for option in options.into_iter().filter(|o| !is_null(o)) {
            if let Value::Object(inner) = option {
                for (key, value) in inner {
                    object.entry(key).or_insert(value);
                }
            }
        }
    }
}

/// `schemars` marks Rust integer widths (`uint64`, `int64`); the policy's numbers are bounded
/// with `minimum`/`maximum` instead, and validators do not check these formats.
fn no_number_format(schema: &mut Schema) {
    if schema.get("type").and_then(Value::as_str) == Some("integer") {
        schema.remove("format");
    }
}

/// A description is the first paragraph of a doc comment (the rest is for Rust readers), as
/// one line of plain text: doc comments are wrapped at 100 columns and write code in
/// backticks.
fn one_line_description(schema: &mut Schema) {
    if let Some(Value::String(text)) = schema.get_mut("description") {
        *text = text
            .lines()
            .map(str::trim)
            .take_while(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
            .replace('`', "");
    }
}

/// Defaults are in the descriptions ("Default 60s"), in the policy's words; `schemars` would
/// add the Rust values of `#[serde(default)]` fields (a `Duration` as seconds and nanoseconds).
fn no_default(schema: &mut Schema) {
    schema.remove("default");
}
