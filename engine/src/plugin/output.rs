//! A plugin call's answer as the engine's output: one text part as text, text parts joined,
//! images as parts, and a structured part beside them ([`FullOutput`]); and a plugin tool's spec
//! with what its manifest declares besides the three parts.

use toolgate_plugin_api::{Part, PluginOutcome};

use crate::tool::{ContentPart, FullOutput, ToolError, ToolOutput, ToolSpec};

/// A plugin call's end as the tool's output, after `prefix` (text already streamed).
pub(super) fn output_of_reply(
    reply: Result<PluginOutcome, ToolError>,
    prefix: String,
    plugin_name: &str,
) -> Result<ToolOutput, ToolError> {
    let outcome = reply?;
    let parts = match outcome {
        PluginOutcome::Ok(parts) => parts,
        PluginOutcome::Error(message) => return Err(ToolError::new(message)),
        PluginOutcome::InvalidArguments(message) => {
            return Err(ToolError::invalid_arguments(message));
        }
        PluginOutcome::Panic(message) => {
            tracing::error!(plugin = %plugin_name, "a plugin tool panicked: {message}");
            return Err(ToolError::panic(message));
        }
    };
    if prefix.is_empty() {
        return output_of(parts);
    }
    let mut all = Vec::with_capacity(parts.len() + 1);
    all.push(Part::Text(prefix));
    all.extend(parts);
    output_of(all)
}

/// A plugin tool's spec: its three parts and what its manifest adds (title, annotations,
/// output schema).
pub(super) fn spec_of(
    mut spec: ToolSpec,
    title: Option<String>,
    annotations: Option<serde_json::Value>,
    output_schema: Option<serde_json::Value>,
) -> ToolSpec {
    spec.title = title;
    spec.annotations = annotations;
    spec.output_schema = output_schema;
    spec
}

fn output_of(mut parts: Vec<Part>) -> Result<ToolOutput, ToolError> {
    // One text part, the usual answer: its text as it is, not copied.
    if let [Part::Text(text)] = parts.as_mut_slice() {
        return Ok(ToolOutput::Text(std::mem::take(text)));
    }
    let only_text = parts.iter().all(|p| matches!(p, Part::Text(_)));
    if only_text {
        let mut text = String::new();
        for p in parts {
            if let Part::Text(t) = p {
                text.push_str(&t);
            }
        }
        return Ok(ToolOutput::Text(text));
    }
    let mut structured = None;
    let mut content = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text(text) => content.push(ContentPart::text(text)),
            Part::Image {
                mime_type,
                data_base64,
            } => content.push(ContentPart::image(mime_type, data_base64)),
            Part::Structured(value) => {
                if structured.replace(value).is_some() {
                    return Err(ToolError::new(
                        "the plugin returned more than one structured part; a result has at most one",
                    ));
                }
            }
        }
    }
    Ok(match structured {
        None => ToolOutput::Parts(content),
        Some(value) => ToolOutput::Full(FullOutput {
            content,
            structured: Some(value),
            meta: None,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_of_one_text_part_is_that_text() {
        let output = output_of(vec![Part::Text("one".to_string())]);
        assert!(matches!(output, Ok(ToolOutput::Text(text)) if text == "one"));
    }

    #[test]
    fn a_result_of_several_text_parts_is_their_texts_joined() {
        let output = output_of(vec![
            Part::Text("one ".to_string()),
            Part::Text("two".to_string()),
        ]);
        assert!(matches!(output, Ok(ToolOutput::Text(text)) if text == "one two"));
    }

    #[test]
    fn a_structured_part_makes_a_full_output_beside_the_parts() {
        let output = output_of(vec![
            Part::Text("{\"a\":1}".to_string()),
            Part::Structured(serde_json::json!({"a": 1})),
        ]);
        let Ok(ToolOutput::Full(full)) = output else {
            panic!("a full output: {output:?}");
        };
        assert_eq!(full.content, vec![ContentPart::text("{\"a\":1}")]);
        assert_eq!(full.structured, Some(serde_json::json!({"a": 1})));
    }

    #[test]
    fn two_structured_parts_are_refused() {
        let output = output_of(vec![
            Part::Structured(serde_json::json!(1)),
            Part::Structured(serde_json::json!(2)),
        ]);
        let Err(e) = output else {
            panic!("refused: {output:?}");
        };
        assert!(e.message.contains("more than one structured part"), "{e}");
    }
}
