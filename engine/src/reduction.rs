//! Large-result reduction (R1-R4, R9): the result store a policy names, and the built-in
//! `read_tool_result` tool, which pages through an offloaded result by Unicode characters, only
//! within the session that owns it. The offload itself is a layer of the guard
//! (`guard/reduce.rs`); the offload of older rounds is part of preparing a history
//! (`history/budget.rs`).

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_policy::ReductionSettings;
use toolgate_store::{
    ForeignResult, ObjectResultStore, ResultId, ResultStore, StoreError, read_scoped,
};

use crate::registry::BuiltinTool;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The most characters one `read_tool_result` call returns, and its default `limit`.
pub(crate) const MAX_PAGE_CHARS: u64 = 20_000;

/// Opens the store a policy names; `default_url` is used when the policy names none (the
/// command line passes a folder under the user's data directory; the library default is
/// `memory://`).
pub(crate) fn open_store(
    settings: &ReductionSettings,
    default_url: Option<&str>,
) -> Result<Arc<dyn ResultStore>, StoreError> {
    let url = settings
        .store
        .as_deref()
        .or(default_url)
        .unwrap_or("memory://");
    let store = ObjectResultStore::from_url_opts(url, settings.store_options.clone())?;
    Ok(Arc::new(store))
}

/// The built-in `read_tool_result` tool (R3, R4).
pub(crate) struct ReadToolResult {
    spec: ToolSpec,
    store: Arc<dyn ResultStore>,
    foreign: ForeignResult,
}

impl ReadToolResult {
    pub(crate) fn new(store: Arc<dyn ResultStore>, hide_foreign: bool) -> Self {
        ReadToolResult {
            spec: ToolSpec::new(
                BuiltinTool::ReadToolResult.name(),
                "Read a tool result that was too large to show, in pages of Unicode characters. \
                 Give the id from the notice; continue with the next_offset it reports.",
                json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The result id from the notice."},
                        "offset": {"type": "integer", "minimum": 0, "description": "First character to read (default 0)."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_CHARS, "description": "Characters to read (default and at most 20000)."}
                    },
                    "required": ["id"],
                    "additionalProperties": false
                }),
            ),
            store,
            foreign: if hide_foreign {
                ForeignResult::Hide
            } else {
                ForeignResult::Deny
            },
        }
    }
}

fn arg_u64(args: &Value, name: &str, default: u64) -> Result<u64, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| {
            ToolError::invalid_arguments(format!(
                "{name} must be a whole number of 0 or more, not {v}"
            ))
        }),
    }
}

impl Tool for ReadToolResult {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let store = self.store.clone();
        let foreign = self.foreign;
        Box::pin(async move {
            let id = match args.get("id") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(Value::String(_)) | None => {
                    return Err(ToolError::invalid_arguments(
                        "id is required and must not be blank",
                    ));
                }
                Some(other) => {
                    return Err(ToolError::invalid_arguments(format!(
                        "id must be a string, not {other}"
                    )));
                }
            };
            let offset = arg_u64(&args, "offset", 0)?;
            let limit = arg_u64(&args, "limit", MAX_PAGE_CHARS)?;
            if limit == 0 {
                return Err(ToolError::invalid_arguments("limit must be at least 1"));
            }
            let limit = limit.min(MAX_PAGE_CHARS);
            let id = ResultId::parse(&id).map_err(|e| coded(StoreError::InvalidId(e)))?;
            let page = read_scoped(&*store, ctx.session.as_ref(), &id, offset, limit, foreign)
                .await
                .map_err(coded)?;
            let mut out = page.text;
            out.push_str(&format!(
                "\n\n[tool result \"{}\": characters {}-{} of {}",
                id, page.offset, page.end, page.total_chars
            ));
            if page.end < page.total_chars {
                out.push_str(&format!("; next_offset={}", page.end));
            }
            out.push(']');
            Ok(ToolOutput::Text(out))
        })
    }
}

/// A store error as a tool error with its stable kind (`not_found`, `access_denied`, ...).
fn coded(e: StoreError) -> ToolError {
    ToolError::coded(e.kind(), crate::error::Chain(&e).to_string())
}
