//! Structured results: the check of a tool's structured content against the `output_schema` it
//! declares (G10), and the size of a JSON value as the caps count it (G9, R10).
//!
//! A tool that declares an output schema promises structured content with every success. The
//! guard holds it to that promise before anything else sees the result: a success without
//! structured content, or with structured content the schema refuses, becomes an error of kind
//! [`INVALID_STRUCTURED_CONTENT`] that says what did not match and where. The schema is compiled
//! once, at the tool's first call, and reused.

use std::sync::OnceLock;

use serde_json::Value;

use crate::tool::ToolOutput;

/// The kind of the error a result gets when its structured content is missing or does not
/// match the tool's output schema.
pub const INVALID_STRUCTURED_CONTENT: &str = "invalid_structured_content";

/// A tool's output schema, compiled on first use.
pub(crate) struct OutputCheck {
    schema: Value,
    compiled: OnceLock<Result<jsonschema::Validator, String>>,
}

impl OutputCheck {
    /// The check for `schema`; nothing is compiled yet.
    pub(crate) fn new(schema: Value) -> Self {
        OutputCheck {
            schema,
            compiled: OnceLock::new(),
        }
    }

    /// `Err(why)`, written for the model, when `output` has no structured content or its
    /// structured content does not match the schema.
    pub(crate) fn check(&self, output: &ToolOutput) -> Result<(), String> {
        let structured = match output {
            ToolOutput::Full(full) => full.structured.as_ref(),
            _ => None,
        };
        let Some(structured) = structured else {
            return Err(
                "it declares an outputSchema, but its result has no structured content".to_owned(),
            );
        };
        let validator = self
            .compiled
            .get_or_init(|| {
                jsonschema::validator_for(&self.schema)
                    .map_err(|e| format!("its outputSchema is not a valid JSON Schema: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)?;
        match validator.iter_errors(structured).next() {
            None => Ok(()),
            Some(e) => {
                let at = e.instance_path().to_string();
                Err(format!(
                    "its structured content does not match its outputSchema: {e}{}",
                    if at.is_empty() {
                        String::new()
                    } else {
                        format!(" (at {at})")
                    }
                ))
            }
        }
    }
}

/// The length of `value` as compact JSON, in bytes, without building the text.
pub(crate) fn json_bytes(value: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A `Value` always serializes; writing to a counter cannot fail.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => u64::MAX,
    }
}

/// The length of `value` as compact JSON, in Unicode characters (what the character cap
/// counts). The text is built only when its bytes are over `within`, where characters and
/// bytes may differ in a way that matters.
pub(crate) fn json_chars_over(value: &Value, within: u64) -> Option<u64> {
    if json_bytes(value) <= within {
        return None;
    }
    let chars = value.to_string().chars().count() as u64;
    (chars > within).then_some(chars)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::FullOutput;

    fn full(structured: Value) -> ToolOutput {
        ToolOutput::Full(FullOutput {
            structured: Some(structured),
            ..FullOutput::default()
        })
    }

    fn schema() -> OutputCheck {
        OutputCheck::new(json!({
            "type": "object",
            "properties": {"celsius": {"type": "number"}},
            "required": ["celsius"]
        }))
    }

    #[test]
    fn matching_structured_content_passes() {
        assert_eq!(schema().check(&full(json!({"celsius": 21.5}))), Ok(()));
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_with_where_it_is() {
        let e = schema()
            .check(&full(json!({"celsius": "warm"})))
            .unwrap_err();
        assert!(e.contains("does not match its outputSchema"), "{e}");
        assert!(e.contains("(at /celsius)"), "{e}");
    }

    #[test]
    fn a_missing_structured_content_is_refused() {
        let e = schema().check(&ToolOutput::text("21.5")).unwrap_err();
        assert!(e.contains("no structured content"), "{e}");
    }

    #[test]
    fn a_schema_that_is_not_a_schema_is_said_so() {
        let check = OutputCheck::new(json!({"type": 7}));
        let e = check.check(&full(json!({}))).unwrap_err();
        assert!(e.contains("not a valid JSON Schema"), "{e}");
    }

    #[test]
    fn characters_are_counted_only_over_the_bytes() {
        let v = json!({"a": "ééé"});
        assert_eq!(json_bytes(&v), v.to_string().len() as u64);
        assert_eq!(json_chars_over(&v, 100), None);
        // 14 bytes, 11 characters: over 10 characters, within 11.
        assert_eq!(json_chars_over(&v, 10), Some(11));
        assert_eq!(json_chars_over(&v, 11), None);
    }
}
