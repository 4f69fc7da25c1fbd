//! The JSON Schema check, and turning its errors into `file:line:col` diagnostics.
//!
//! The schema (`schemas/policy.schema.json`, embedded as [`crate::SCHEMA`]) is generated from
//! the policy's types (`model/`, `shape/`, [`crate::generated_schema`]): editors use it for
//! completion, `docs/policy.md` is checked against it, and the loader validates every file with
//! it. The validator is compiled once per process.
//!
//! Every schema error carries the JSON pointer of the failing value; we walk the positioned
//! YAML tree along that pointer to find the line and column. Messages are written here rather
//! than taken from `jsonschema`, so that they speak of YAML keys and say what was expected.
//! Subschemas may carry an `x-expected` annotation (ignored by validators) with the words for
//! "what was expected", such as "a duration like 30s or 500ms"; the types set it with
//! `#[schemars(extend("x-expected" = ...))]`.

use std::path::Path;
use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{JsonType, ValidationError, Validator};
use serde_json::Value;

use crate::duration::parse_duration;
use crate::error::{Diagnostic, DiagnosticKind, Diagnostics, DurationError};
use crate::yaml::{Kind, Node, Pos};

/// The schema as JSON, parsed once.
pub(crate) fn schema_json() -> Result<&'static Value, String> {
    static SCHEMA_JSON: OnceLock<Result<Value, String>> = OnceLock::new();
    SCHEMA_JSON
        .get_or_init(|| {
            serde_json::from_str(crate::SCHEMA)
                .map_err(|e| format!("the embedded policy schema is not valid JSON: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn validator() -> Result<&'static Validator, String> {
    static VALIDATOR: OnceLock<Result<Validator, String>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema = schema_json()?;
            jsonschema::draft202012::new(schema)
                .map_err(|e| format!("the embedded policy schema does not compile: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Validates the tree against the schema; every violation becomes one diagnostic.
pub(crate) fn check(root: &Node, file: &Path) -> Diagnostics {
    let (validator, schema) = match (validator(), schema_json()) {
        (Ok(v), Ok(s)) => (v, s),
        (Err(message), _) | (_, Err(message)) => {
            let mut out = Diagnostics::default();
            out.push(Diagnostic {
                file: file.to_path_buf(),
                at: None,
                message,
                kind: DiagnosticKind::Schema {
                    keyword: "$schema".to_owned(),
                },
            });
            return out;
        }
    };
    let instance = root.to_json();
    let mut out = Diagnostics::default();
    for error in validator.iter_errors(&instance) {
        explain(&error, root, schema, file, &mut out);
    }
    out
}

/// One step of an instance path.
enum Step {
    Key(String),
    Index(usize),
}

fn explain(
    error: &ValidationError<'_>,
    root: &Node,
    schema: &Value,
    file: &Path,
    out: &mut Diagnostics,
) {
    let steps: Vec<Step> = error
        .instance_path()
        .iter()
        .map(|segment| match segment {
            LocationSegment::Property(p) => Step::Key(p.into_owned()),
            LocationSegment::Index(i) => Step::Index(i),
        })
        .collect();
    let (node, pos) = locate(root, &steps);
    let path = display_path(&steps);
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    };
    let keyword = error.kind().keyword().to_owned();
    let subschema = keyword_parent(schema, error.schema_path().as_str());
    let expected_note = subschema
        .and_then(|s| s.get("x-expected"))
        .and_then(Value::as_str);
    let instance: &Value = error.instance();
    let diagnostic = |pos: Pos, message: String| Diagnostic {
        file: file.to_path_buf(),
        at: Some(pos),
        message,
        kind: DiagnosticKind::Schema {
            keyword: keyword.clone(),
        },
    };

    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let mut allowed: Vec<&str> = subschema
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|props| props.keys().map(String::as_str).collect())
                .unwrap_or_default();
            allowed.sort_unstable();
            for key in unexpected {
                let key_pos = node
                    .and_then(|n| n.get(key))
                    .map_or(pos, |entry| entry.key_pos);
                let hint = closest(key, &allowed)
                    .map(|best| format!("did you mean {best:?}? "))
                    .unwrap_or_default();
                let message = format!(
                    "{prefix}unknown key {key:?} ({hint}expected one of: {})",
                    allowed.join(", ")
                );
                out.push(diagnostic(key_pos, message));
            }
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or("?");
            out.push(diagnostic(pos, format!("{prefix}missing key {name:?}")));
        }
        ValidationErrorKind::OneOfNotValid { .. }
        | ValidationErrorKind::OneOfMultipleValid { .. } => {
            let expected = expected_note.unwrap_or("exactly one of the allowed forms");
            out.push(diagnostic(pos, format!("{prefix}expected {expected}")));
        }
        ValidationErrorKind::Pattern { .. }
            if duration_problem(expected_note, instance).is_some() =>
        {
            // A duration of the right characters with its units out of order, or too many
            // digits: the duration parser says exactly what is wrong.
            if let Some(problem) = duration_problem(expected_note, instance) {
                out.push(Diagnostic {
                    kind: DiagnosticKind::Duration,
                    ..diagnostic(pos, format!("{prefix}{problem}"))
                });
            }
        }
        kind => {
            let expected = match (expected_note, kind) {
                (Some(note), _) => note.to_owned(),
                (None, ValidationErrorKind::Enum { options }) => list_options(options),
                (None, ValidationErrorKind::Type { kind }) => type_words(kind),
                (None, ValidationErrorKind::Minimum { limit }) => format!("a number >= {limit}"),
                (None, _) => error.to_string(),
            };
            let mut message = format!("{prefix}expected {expected}, found {}", found(instance));
            if expected.contains("true or false") {
                if is_yaml11_boolean(instance) {
                    message.push_str(
                        " (YAML 1.1 words like yes, no, on, off are not booleans in a policy; \
                         write true or false)",
                    );
                } else if instance
                    .as_str()
                    .is_some_and(|s| matches!(s.to_ascii_lowercase().as_str(), "true" | "false"))
                {
                    message.push_str(" (booleans are written in lower case: true or false)");
                }
            }
            out.push(diagnostic(pos, message));
        }
    }
}

/// For a string the duration pattern refused, what the duration parser says is wrong with it,
/// unless it is not duration-like at all (then "expected a duration like ..." says it best).
fn duration_problem(expected_note: Option<&str>, instance: &Value) -> Option<DurationError> {
    if !expected_note.is_some_and(|note| note.starts_with("a duration")) {
        return None;
    }
    match parse_duration(instance.as_str()?) {
        Err(error @ (DurationError::UnitOrder { .. } | DurationError::Overflow { .. })) => {
            Some(error)
        }
        _ => None,
    }
}

/// Finds the node at `steps` and the position to report: the key for a mapping member (the
/// line that says `timeout: ...`), the item itself for a list element.
fn locate<'a>(root: &'a Node, steps: &[Step]) -> (Option<&'a Node>, Pos) {
    let mut node = root;
    let mut pos = root.pos;
    for step in steps {
        let next = match (step, &node.kind) {
            (Step::Key(key), Kind::Map(_)) => node.get(key).map(|e| (&e.value, e.value_pos())),
            (Step::Index(i), Kind::Seq(items)) => items.get(*i).map(|n| (n, n.pos)),
            _ => None,
        };
        match next {
            Some((child, child_pos)) => {
                node = child;
                pos = child_pos;
            }
            None => return (None, pos),
        }
    }
    (Some(node), pos)
}

/// `dispatch.timeout`, `tools."fs.*".rules.deny[0].args`.
fn display_path(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let plain = !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    out.push_str(key);
                } else {
                    out.push_str(&format!("{key:?}"));
                }
            }
        }
    }
    out
}

/// The subschema holding the failing keyword, following `$ref` steps in the keyword path.
fn keyword_parent<'a>(schema: &'a Value, schema_path: &str) -> Option<&'a Value> {
    let segments: Vec<String> = schema_path
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (_, parents) = segments.split_last()?;
    let mut current = schema;
    for segment in parents {
        current = if segment == "$ref" {
            let target = current.get("$ref")?.as_str()?;
            schema.pointer(target.strip_prefix('#')?)?
        } else {
            match current {
                Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                _ => current.get(segment.as_str())?,
            }
        };
    }
    // A keyword reached through a `$ref` sibling: the annotation may sit on the target.
    Some(current)
}

/// `a, b or c`.
fn list_options(options: &Value) -> String {
    let words: Vec<String> = match options.as_array() {
        Some(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>(),
        None => vec![options.to_string()],
    };
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => "nothing".to_owned(),
    }
}

fn type_words(kind: &TypeKind) -> String {
    let word = |t: JsonType| match t {
        JsonType::Null => "nothing",
        JsonType::Boolean => "true or false",
        JsonType::Integer => "a whole number",
        JsonType::Number => "a number",
        JsonType::String => "a string",
        JsonType::Array => "a list",
        JsonType::Object => "a mapping",
    };
    match kind {
        TypeKind::Single(t) => word(*t).to_owned(),
        TypeKind::Multiple(set) => set.iter().map(word).collect::<Vec<_>>().join(" or "),
    }
}

/// How a value is described in "found ...".
fn found(value: &Value) -> String {
    match value {
        Value::Null => "nothing (an empty value)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}")),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a mapping".to_owned(),
    }
}

fn is_yaml11_boolean(value: &Value) -> bool {
    value.as_str().is_some_and(|s| {
        matches!(
            s.to_ascii_lowercase().as_str(),
            "yes" | "no" | "on" | "off" | "y" | "n"
        )
    })
}

/// The allowed key closest to a misspelt one, if it is close enough to be a likely typo.
fn closest<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    allowed
        .iter()
        .map(|candidate| (edit_distance(key, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len() / 3).max(1))
        .min()
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_schema_compiles() {
        assert!(validator().is_ok(), "{:?}", validator().err());
    }

    #[test]
    fn a_one_letter_typo_finds_its_key() {
        assert_eq!(
            closest("dispatchh", &["dispatch", "tools"]),
            Some("dispatch")
        );
        assert_eq!(closest("zzz", &["dispatch", "tools"]), None);
    }

    #[test]
    fn paths_quote_keys_that_are_not_plain() {
        let steps = [
            Step::Key("tools".into()),
            Step::Key("fs.*".into()),
            Step::Key("rules".into()),
            Step::Key("deny".into()),
            Step::Index(0),
        ];
        assert_eq!(display_path(&steps), "tools.\"fs.*\".rules.deny[0]");
    }
}
