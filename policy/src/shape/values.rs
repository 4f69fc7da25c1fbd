//! The value kinds many keys share: each is one `$defs` entry of the schema, named as the
//! schema names it, with the `x-expected` words the error messages use.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// The largest whole number JSON tools read exactly (2^53 - 1): the upper bound of counts.
pub(crate) const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

// `true` or `false`; the messages add a hint for YAML 1.1 words such as `yes`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(rename = "boolean", extend("x-expected" = "true or false"))]
pub(crate) struct Flag(pub(crate) bool);

// A duration (`30s`, `1m30s`, `500ms`) or `none`; `parse_duration` reads it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
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
    pub(crate) String,
);

// A result cap in characters; -1 = no cap.
#[derive(Debug, Clone, Copy, JsonSchema)]
#[schemars(
    rename = "char_cap",
    extend(
        "x-expected" = "a whole number of characters from -1 (no cap) to 9007199254740991"
    )
)]
pub(crate) struct CharCapValue(#[schemars(range(min = -1, max = MAX_SAFE_INTEGER))] pub(crate) i64);

// A count of bytes, characters, tokens or rounds.
#[derive(Debug, Clone, Copy, JsonSchema)]
#[schemars(
    rename = "size",
    extend("x-expected" = "a whole number from 0 to 9007199254740991")
)]
pub(crate) struct Size(#[schemars(range(min = 0, max = MAX_SAFE_INTEGER))] pub(crate) u64);

// A tool, argument, variable or host name.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(rename = "name", extend("x-expected" = "a non-empty name"))]
pub(crate) struct Name(#[schemars(length(min = 1))] pub(crate) String);

// A file or directory; relative to the policy file's directory.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(rename = "path", extend("x-expected" = "a non-empty file path"))]
pub(crate) struct PathText(#[schemars(length(min = 1))] pub(crate) String);

// A tool name or a glob over tool names.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    rename = "glob",
    extend("x-expected" = "a name or glob such as fs.* (a non-empty string)")
)]
pub(crate) struct GlobText(#[schemars(length(min = 1))] pub(crate) String);

// A list of tool names or globs.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(rename = "glob_list", extend("x-expected" = "a list of names or globs"))]
pub(crate) struct GlobList(pub(crate) Vec<GlobText>);

// A string where `${NAME}` takes the value of an environment variable and `$$` is a `$`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    rename = "env_template",
    extend(
        "x-expected" = "a string where ${NAME} takes the value of the environment variable NAME and $$ is a $"
    )
)]
pub(crate) struct EnvTemplateText(
    #[schemars(regex(pattern = r"^([^$]|\$\$|\$\{[A-Za-z_][A-Za-z0-9_]*\})*$"))] pub(crate) String,
);

/// Glob the argument's value must match: a string value as is, a number or boolean by its JSON
/// text. A missing argument does not match.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    inline,
    extend(
        "x-key" = "argument",
        "x-expected" = "a glob string (quote numbers and booleans)"
    )
)]
pub(crate) struct ArgGlob(pub(crate) String);

// Top-level argument name -> glob.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    rename = "arg_globs",
    extend("x-expected" = "a mapping of argument name -> glob")
)]
pub(crate) struct ArgGlobs(pub(crate) BTreeMap<String, ArgGlob>);

/// Path glob the argument, read as a path relative to the tool's root and normalised (., ..,
/// repeated and trailing slashes resolved), must match. * stays within one name, ** spans folders;
/// a pattern without / matches any name in the path; a path also matches when a folder it lies in
/// matches. A path that cannot be normalised (absolute, .. above the root, NUL byte, backslash,
/// not a string) makes the call denied. A missing argument does not match.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    inline,
    extend(
        "x-key" = "argument",
        "x-expected" = "a path glob such as secrets/** or *.pem (relative, without ..)"
    )
)]
pub(crate) struct PathGlob(#[schemars(length(min = 1))] pub(crate) String);

// Top-level argument name -> path glob.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(
    rename = "path_globs",
    extend("x-expected" = "a mapping of argument name -> path glob")
)]
pub(crate) struct PathGlobs(pub(crate) BTreeMap<String, PathGlob>);

/// The format version: only 1 exists.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Version(pub(crate) u64);

/// A count whose bounds the field gives (`#[schemars(range(...))]`): `max_threads`,
/// `concurrency`, `default_max_results`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Count(pub(crate) u64);

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

/// A whole number: an integer, or a float without a fractional part (`5.0`, `1e3`), which JSON
/// Schema also counts as an integer. The schema has bounded it already, to at most 2^53 - 1,
/// up to which a float is exactly a whole number.
fn whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let number = serde_json::Number::deserialize(deserializer)?;
    if let Some(i) = number.as_i64() {
        return Ok(i);
    }
    match number.as_f64() {
        // Exact: |f| <= 2^53 - 1 fits an i64 with no rounding.
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        Some(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 => Ok(f as i64),
        _ => Err(D::Error::custom(format!(
            "expected a whole number, found {number}"
        ))),
    }
}

fn whole_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let i = whole(deserializer)?;
    u64::try_from(i).map_err(|_| D::Error::custom(format!("expected a number >= 0, found {i}")))
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        whole_u64(deserializer).map(Version)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        whole_u64(deserializer).map(Count)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        whole_u64(deserializer).map(Size)
    }
}

impl<'de> Deserialize<'de> for CharCapValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        whole(deserializer).map(CharCapValue)
    }
}

impl CharCapValue {
    /// `-1` is no cap (the schema refuses anything below it).
    pub(crate) fn cap(self) -> crate::model::CharCap {
        u64::try_from(self.0).map_or(
            crate::model::CharCap::Unlimited,
            crate::model::CharCap::Chars,
        )
    }
}

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

/// Makes an enum of names a bare `enum` (no `type`), so a wrong value gets one message
/// ("expected a, b or c, found ...") rather than a type error and an enum error.
pub(crate) fn names_only(schema: &mut Schema) {
    schema.remove("type");
}
