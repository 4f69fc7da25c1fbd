//! The value kinds many keys share, each written once: its schema (a `$defs` entry, named as
//! the schema names it, with the `x-expected` words the error messages use) and how it is read
//! into its final form (a [`Duration`], a resolved [`PathBuf`], ...).
//!
//! A key takes a kind with two attributes on its field:
//!
//! ```text
//! #[serde(deserialize_with = "values::duration_or_none")]
//! #[schemars(with = "values::DurationText")]
//! pub timeout: Option<Duration>,
//! ```
//!
//! The schema types below are never deserialized: the schema check has accepted the value
//! before the field's `deserialize_with` (or its type's `Deserialize`) reads it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

pub(crate) use super::de::MAX_SAFE_INTEGER;
use super::de::{checked, policy_dir, resolve};
use crate::duration::parse_duration;
use crate::error::DiagnosticKind;
use crate::file::{MAX_CATALOG_FILE_BYTES, check_text_file};

// ---- Schemas ----------------------------------------------------------------------------

// `true` or `false`; the messages add a hint for YAML 1.1 words such as `yes`.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(rename = "boolean", extend("x-expected" = "true or false"))]
pub(crate) struct Flag(bool);

// A duration (`30s`, `1m30s`, `500ms`) or `none`; `parse_duration` reads it.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "duration",
    extend(
        "x-expected" = "a duration like 30s or 500ms (units ms, s, m, h; combined like 1m30s) or none"
    )
)]
pub(crate) struct DurationText(
    #[schemars(regex(
        pattern = r"^(none|[0-9]{1,12}h([0-9]{1,12}m)?([0-9]{1,12}s)?([0-9]{1,12}ms)?|[0-9]{1,12}m([0-9]{1,12}s)?([0-9]{1,12}ms)?|[0-9]{1,12}s([0-9]{1,12}ms)?|[0-9]{1,12}ms)$"
    ))]
    String,
);

// A result cap in characters; -1 = no cap.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "char_cap",
    extend(
        "x-expected" = "a whole number of characters from -1 (no cap) to 9007199254740991"
    )
)]
pub(crate) struct CharCapValue(#[schemars(range(min = -1, max = MAX_SAFE_INTEGER))] i64);

// A count of bytes, characters, tokens or rounds.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "size",
    extend("x-expected" = "a whole number from 0 to 9007199254740991")
)]
pub(crate) struct Size(#[schemars(range(min = 0, max = MAX_SAFE_INTEGER))] u64);

// A tool, argument, variable or host name.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(rename = "name", extend("x-expected" = "a non-empty name"))]
pub(crate) struct Name(#[schemars(length(min = 1))] String);

// A file or directory; relative to the policy file's directory.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(rename = "path", extend("x-expected" = "a non-empty file path"))]
pub(crate) struct PathText(#[schemars(length(min = 1))] String);

// A tool name or a glob over tool names.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "glob",
    extend("x-expected" = "a name or glob such as fs.* (a non-empty string)")
)]
pub(crate) struct GlobText(#[schemars(length(min = 1))] String);

// A list of tool names or globs.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(rename = "glob_list", extend("x-expected" = "a list of names or globs"))]
pub(crate) struct GlobList(Vec<GlobText>);

// A string where `${NAME}` takes the value of an environment variable and `$$` is a `$`.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "env_template",
    extend(
        "x-expected" = "a string where ${NAME} takes the value of the environment variable NAME and $$ is a $"
    )
)]
pub(crate) struct EnvTemplateText(
    #[schemars(regex(pattern = r"^([^$]|\$\$|\$\{[A-Za-z_][A-Za-z0-9_]*\})*$"))] String,
);

/// Glob the argument's value must match: a string value as is, a number or boolean by its JSON
/// text. A missing argument does not match.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    inline,
    extend(
        "x-key" = "argument",
        "x-expected" = "a glob string (quote numbers and booleans)"
    )
)]
pub(crate) struct ArgGlob(String);

// Top-level argument name -> glob.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "arg_globs",
    extend("x-expected" = "a mapping of argument name -> glob")
)]
pub(crate) struct ArgGlobs(BTreeMap<String, ArgGlob>);

/// Path glob the argument, read as a path relative to the tool's root and normalised (., ..,
/// repeated and trailing slashes resolved), must match. * stays within one name, ** spans folders;
/// a pattern without / matches any name in the path; a path also matches when a folder it lies in
/// matches. A path that cannot be normalised (absolute, .. above the root, NUL byte, backslash,
/// not a string) makes the call denied. A missing argument does not match.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    inline,
    extend(
        "x-key" = "argument",
        "x-expected" = "a path glob such as secrets/** or *.pem (relative, without ..)"
    )
)]
pub(crate) struct PathGlobText(#[schemars(length(min = 1))] String);

// Top-level argument name -> path glob.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "path_globs",
    extend("x-expected" = "a mapping of argument name -> path glob")
)]
pub(crate) struct PathGlobs(BTreeMap<String, PathGlobText>);

/// The format version: only 1 exists.
pub(crate) struct Version;

impl JsonSchema for Version {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("version")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-expected": "1 (the only policy format version)",
            "enum": [1]
        })
    }
}

/// A count whose bounds the field gives (`#[schemars(range(...))]`): `max_threads`,
/// `concurrency`, `default_max_results`.
pub(crate) struct Count;

impl JsonSchema for Count {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("count")
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        u64::json_schema(generator)
    }
}

/// Makes an enum of names a bare `enum` (no `type`), so a wrong value gets one message
/// ("expected a, b or c, found ...") rather than a type error and an enum error.
pub(crate) fn names_only(schema: &mut Schema) {
    string_enum(schema);
    schema.remove("type");
}

/// A type used only under keys whose descriptions say what it is (the rules of `rules` and
/// of `tools.<pattern>.rules`), with no description of its own.
pub(crate) fn no_description(schema: &mut Schema) {
    schema.remove("description");
}

/// A unit enum whose variants have doc comments (for Rust readers) comes as a `oneOf` of
/// `const`s, each with its description; the schema lists the names as a string `enum`.
pub(crate) fn string_enum(schema: &mut Schema) {
    let Some(serde_json::Value::Array(options)) = schema.get("oneOf") else {
        return;
    };
    let names: Option<Vec<serde_json::Value>> =
        options.iter().map(|o| o.get("const").cloned()).collect();
    if let Some(names) = names {
        schema.remove("oneOf");
        schema.insert("type".to_owned(), "string".into());
        schema.insert("enum".to_owned(), serde_json::Value::Array(names));
    }
}

// ---- Reading values into their final form ----------------------------------------------

/// A duration, or `none` (`None`). `timeout: 30s`.
pub(crate) fn duration_or_none<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    Ok(checked(parse_duration(&text), DiagnosticKind::Duration)?.flatten())
}

/// A duration where `none` is not allowed (the schema refuses it). `script_timeout: 1s`.
pub(crate) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    duration_or_none(deserializer).map(Option::unwrap_or_default)
}

/// A duration above zero (`none` the schema refuses; zero is reported here).
/// `client_requests.timeout: 60s`.
pub(crate) fn positive_duration<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    let read = duration(deserializer)?;
    let above_zero = if read.is_zero() {
        Err("must be above zero: every wait has a bound")
    } else {
        Ok(read)
    };
    Ok(checked(above_zero, DiagnosticKind::Duration)?.unwrap_or(read))
}

/// An override's duration: absent (`None`, inherit), a duration, or `none` (`Some(None)`).
pub(crate) fn override_duration<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<Duration>>, D::Error> {
    duration_or_none(deserializer).map(Some)
}

/// A path, resolved against the policy file's directory.
pub(crate) fn path<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
    String::deserialize(deserializer).map(|written| resolve(&written))
}

/// An optional path, resolved against the policy file's directory.
pub(crate) fn optional_path<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<PathBuf>, D::Error> {
    path(deserializer).map(Some)
}

/// A list of paths, each resolved against the policy file's directory.
///
/// A relative path that resolves to the filesystem root (`.` in a policy kept in `/`, `../..`)
/// is refused: a grant of the whole filesystem must say `/`.
pub(crate) fn paths<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<PathBuf>, D::Error> {
    let written = Vec::<String>::deserialize(deserializer)?;
    let mut resolved = Vec::with_capacity(written.len());
    for path in &written {
        let full = resolve(path);
        let root_by_accident = !std::path::Path::new(path).is_absolute()
            && lexically_absolute(&full).parent().is_none();
        let checked = checked::<_, _, D::Error>(
            if root_by_accident {
                Err(format!(
                    "{path:?} resolves to / (the whole filesystem) from the policy's folder; \
                     write \"/\" if that is what you mean"
                ))
            } else {
                Ok(full)
            },
            DiagnosticKind::FilesystemRoot,
        )?;
        resolved.extend(checked);
    }
    Ok(resolved)
}

/// `path` made absolute against the working directory, `.` and `..` taken by their meaning in
/// the text.
fn lexically_absolute(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A file read when the policy is loaded: resolved, and reported at its item when it cannot
/// be read (`search.catalogs[0]: cannot read catalog ...`).
pub(crate) fn readable_file<'de, D: Deserializer<'de>>(
    deserializer: D,
    what: &str,
) -> Result<PathBuf, D::Error> {
    let written = String::deserialize(deserializer)?;
    let resolved = resolve(&written);
    let readable = check_text_file(&resolved, MAX_CATALOG_FILE_BYTES).map_err(|error| {
        format!(
            "cannot read {what} {written:?} (looked for {}): {}",
            resolved.display(),
            error.problem
        )
    });
    checked(readable, DiagnosticKind::MissingFile)?;
    Ok(resolved)
}

/// A list of JSONL catalogs: each must be readable.
pub(crate) fn catalogs<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<PathBuf>, D::Error> {
    struct Catalog(PathBuf);
    impl<'de> Deserialize<'de> for Catalog {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            readable_file(deserializer, "catalog").map(Catalog)
        }
    }
    let list = Vec::<Catalog>::deserialize(deserializer)?;
    Ok(list.into_iter().map(|c| c.0).collect())
}

/// A store URL: `file://relative/dir` is resolved against the policy's directory and made
/// absolute (`file:///abs/dir`); every other URL is kept as written.
pub(crate) fn store_url<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(deserializer)?;
    let Some(rest) = url.strip_prefix("file://") else {
        return Ok(Some(url));
    };
    if rest.starts_with('/') {
        return Ok(Some(url));
    }
    let joined = policy_dir().join(rest);
    let absolute = std::path::absolute(&joined).unwrap_or(joined);
    Ok(Some(format!("file://{}", absolute.display())))
}

/// The values of a mapping, in the order the file writes them (each value reads its key with
/// [`super::de::key`]): `tools: {"fs.*": {...}, "web.*": {...}}`.
pub(crate) fn map_values<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Values<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Values<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a mapping")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some((_, value)) = map.next_entry::<serde::de::IgnoredAny, T>()? {
                out.push(value);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Values(std::marker::PhantomData))
}
