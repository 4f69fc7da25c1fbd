//! toolgate's tool specs and outcomes in MCP's shapes.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool};
use serde_json::json;
use toolgate::tool::ToolSpec;
use toolgate::{Content, Engine, Outcome};

use crate::shape::{block_of, tool_of};

/// The key under `_meta` of a call result where toolgate says what happened.
pub(crate) const META_KEY: &str = crate::shape::META_KEY;

/// The `_meta.toolgate.error_kind` of a success whose structured content toolgate withheld (over
/// the result cap, or offloaded) from a client of a tool that declares an output schema: MCP
/// requires structured content with every success of such a tool, so the result is marked
/// `isError` and its text (the notice) says where the whole result is.
pub(crate) const STRUCTURED_CONTENT_WITHHELD: &str = "structured_content_withheld";

/// A tool as `tools/list` shows it (see [`tool_of`]): everything its source declared, and its
/// real name in `_meta.toolgate.tool_name` when the client sees another.
pub(crate) fn tool(spec: ToolSpec, engine: &Engine) -> Tool {
    let real = engine.registry().resolve(&spec.name).map(|r| r.name);
    tool_of(spec, real)
}

/// A call's outcome as a `tools/call` result: its content blocks, its structured content and
/// its `_meta` as the tool returned them; `isError` for every failure; and in `_meta.toolgate`
/// (beside the tool's own `_meta` keys, replacing only a key of that name) the stable error kind,
/// whether the result was cut, the id of an offloaded result and the tool's real name.
pub(crate) fn call_result(outcome: Outcome, engine: &Engine) -> CallToolResult {
    // Structured content is only ever withheld from a result that was cut or offloaded, and a
    // tool that declares an output schema always has some before (G10): the registry is asked
    // only then.
    let withheld = outcome.error.is_none()
        && outcome.structured_content.is_none()
        && (outcome.truncated || outcome.result_id.is_some())
        && engine
            .registry()
            .get(&outcome.tool_name)
            .is_some_and(|e| e.tool().spec().output_schema.is_some());
    let blocks = match outcome.content {
        Content::Text(text) => vec![ContentBlock::text(text)],
        Content::Parts(parts) => parts.into_iter().map(block_of).collect(),
    };
    let mut result = match (&outcome.error, withheld) {
        (None, false) => CallToolResult::success(blocks),
        _ => CallToolResult::error(blocks),
    };
    result.structured_content = outcome.structured_content;
    let error_kind = match &outcome.error {
        Some(e) => Some(e.kind()),
        None if withheld => Some(STRUCTURED_CONTENT_WITHHELD),
        None => None,
    };
    let mut meta = outcome.meta.unwrap_or_default();
    let mut toolgate = json!({
        "error_kind": error_kind,
        "truncated": outcome.truncated,
        "result_id": outcome.result_id,
        "tool_name": outcome.tool_name,
    });
    // A call refused by a limit or an open breaker (L2): when it would pass, for clients that
    // back off by themselves; the text says it to the model.
    if let Some(after) = outcome.error.as_ref().and_then(|e| e.retry_after()) {
        toolgate["retry_after_ms"] = json!(after.as_millis() as u64);
    }
    meta.insert(META_KEY.to_owned(), toolgate);
    result.meta = Some(MetaObject(meta));
    result
}

/// Marks `result` as one whose session state did not reach the store:
/// `_meta.toolgate.session_state_error` says why.
pub(crate) fn mark_state_not_saved(result: &mut CallToolResult, error: &str) {
    let meta = result
        .meta
        .get_or_insert_with(|| MetaObject(JsonObject::new()));
    let toolgate = meta
        .0
        .entry(META_KEY.to_owned())
        .or_insert_with(|| json!({}));
    if let Some(toolgate) = toolgate.as_object_mut() {
        toolgate.insert("session_state_error".to_owned(), json!(error));
    }
}

/// A failure that left no outcome (a turn aborted under `on_error: fail`), as an error result.
pub(crate) fn error_result(kind: &str, message: String) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
    let mut meta = JsonObject::new();
    meta.insert(META_KEY.to_owned(), json!({"error_kind": kind}));
    result.meta = Some(MetaObject(meta));
    result
}
