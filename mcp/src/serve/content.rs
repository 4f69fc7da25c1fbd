//! toolgate's tool specs and outcomes in MCP's shapes.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool};
use serde_json::{Value, json};
use toolgate::tool::{ContentPart, ToolSpec};
use toolgate::{Content, Outcome};

/// The key under `_meta` of a call result where toolgate says what happened.
pub(crate) const META_KEY: &str = "toolgate";

/// A tool as `tools/list` shows it: the model-facing name, the description, the arguments'
/// schema (an object schema; anything else is wrapped so clients can read it).
pub(crate) fn tool(spec: ToolSpec) -> Tool {
    let schema: JsonObject = match spec.parameters {
        Value::Object(map) => map,
        other => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), json!("object"));
            if !other.is_null() {
                map.insert("x-toolgate-parameters".to_owned(), other);
            }
            map
        }
    };
    Tool::new(spec.name, spec.description, Arc::new(schema))
}

/// A call's outcome as a `tools/call` result: its text or its parts (images as image content),
/// `isError` for every failure, and in `_meta.toolgate` the stable error kind, whether the
/// result was cut, and the id of an offloaded result.
pub(crate) fn call_result(outcome: Outcome) -> CallToolResult {
    let blocks = match outcome.content {
        Content::Text(text) => vec![ContentBlock::text(text)],
        Content::Parts(parts) => parts
            .into_iter()
            .map(|part| match part {
                ContentPart::Text { text } => ContentBlock::text(text),
                ContentPart::Image { mime_type, data } => ContentBlock::image(data, mime_type),
            })
            .collect(),
    };
    let mut result = match &outcome.error {
        Some(_) => CallToolResult::error(blocks),
        None => CallToolResult::success(blocks),
    };
    let mut meta = JsonObject::new();
    meta.insert(
        META_KEY.to_owned(),
        json!({
            "error_kind": outcome.error.as_ref().map(|e| e.kind()),
            "truncated": outcome.truncated,
            "result_id": outcome.result_id,
            "tool_name": outcome.tool_name,
        }),
    );
    result.meta = Some(MetaObject(meta));
    result
}

/// A failure that left no outcome (a turn aborted under `on_error: fail`), as an error result.
pub(crate) fn error_result(kind: &str, message: String) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
    let mut meta = JsonObject::new();
    meta.insert(META_KEY.to_owned(), json!({"error_kind": kind}));
    result.meta = Some(MetaObject(meta));
    result
}
