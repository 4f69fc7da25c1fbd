//! A hook's script as the file writes it (`code:` inline, or `file:`), read into a
//! [`ScriptSource`]: the code, and where it is, so compile errors point into the right file.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use serde_saphyr::granit_parser::ScalarStyle;

use super::de::{checked, resolve, scalar_here};
use super::values::PathText;
use crate::error::DiagnosticKind;
use crate::file::{MAX_POLICY_FILE_BYTES, read_text_file};
use crate::model::ScriptSource;

// One hook's Rhai script: inline or in a file.
#[derive(Deserialize, JsonSchema)]
#[schemars(
    rename = "script",
    deny_unknown_fields,
    extend(
        "oneOf" = [{ "required": ["code"] }, { "required": ["file"] }],
        "x-expected" = "exactly one of code (inline Rhai) or file (a .rhai file)"
    )
)]
struct Script {
    /// The Rhai code, inline; use a block scalar (code: |) for several lines. Error line numbers
    /// point into the policy file.
    #[serde(default, deserialize_with = "inline_code")]
    #[schemars(with = "String", extend("x-expected" = "a string of Rhai code"))]
    code: Option<ScriptSource>,
    /// A .rhai file holding the code, relative to the policy file's directory. It must exist.
    #[serde(default, deserialize_with = "script_file")]
    #[schemars(with = "PathText")]
    file: Option<ScriptSource>,
}

impl<'de> Deserialize<'de> for ScriptSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let script = Script::deserialize(deserializer)?;
        // The schema requires exactly one of them.
        script
            .code
            .or(script.file)
            .ok_or_else(|| serde::de::Error::missing_field("code"))
    }
}

/// The schema's `script`.
impl JsonSchema for ScriptSource {
    fn schema_name() -> Cow<'static, str> {
        Script::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Script::json_schema(generator)
    }
}

/// Inline code keeps the policy file and the line its code starts on.
fn inline_code<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ScriptSource>, D::Error> {
    let code = String::deserialize(deserializer)?;
    let (line_offset, column_offset) = scalar_here().map_or((1, 0), |(pos, style)| {
        code_offsets(pos.line, pos.column, style, &code)
    });
    Ok(Some(ScriptSource {
        code,
        file: super::de::here().map(|(file, _)| file).unwrap_or_default(),
        line_offset,
        column_offset,
    }))
}

/// A script file is read now, so a missing file is reported at its `file:` key.
fn script_file<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ScriptSource>, D::Error> {
    let written = String::deserialize(deserializer)?;
    let resolved = resolve(&written);
    let code = read_text_file(&resolved, MAX_POLICY_FILE_BYTES).map_err(|error| {
        format!(
            "cannot read script {written:?} (looked for {}): {}",
            resolved.display(),
            error.problem
        )
    });
    let code = checked(code, DiagnosticKind::MissingFile)?;
    Ok(Some(ScriptSource {
        code: code.unwrap_or_default(),
        file: resolved,
        line_offset: 1,
        column_offset: 0,
    }))
}

/// Where inline code starts in the policy file: the line of its first line, and the column
/// offset of its text, for a string written at `line`:`column` in `style`.
fn code_offsets(line: u32, column: u32, style: ScalarStyle, text: &str) -> (u32, u32) {
    // The parser places a block scalar (`code: |`) at its first non-blank line; the code's own
    // first line is earlier by the blank lines it starts with.
    let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
    let leading_blank_lines = if block {
        u32::try_from(text.chars().take_while(|c| *c == '\n').count()).unwrap_or(0)
    } else {
        0
    };
    let line_offset = line.saturating_sub(leading_blank_lines).max(1);
    // Rhai columns count from the start of each code line. In a block scalar every line is
    // indented alike; a flow scalar maps exactly only while it stays on one line (`code:
    // "..."`), where its text starts after the quote. The parser places a scalar at its text,
    // or at the opening quote of a quoted one.
    let column_offset = match style {
        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => column,
        _ => column.saturating_sub(1),
    };
    (line_offset, column_offset)
}
