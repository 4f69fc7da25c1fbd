//! A server's tool list: fetched page by page and checked tool by tool, so that one tool
//! toolgate cannot offer costs only itself. A tool is left out, with a line saying why, when
//! its definition is not an MCP tool (an `inputSchema` that is not an object), its name is
//! empty or makes a `<server>.<tool>` name that breaks the name rules, it is listed twice, its
//! `inputSchema` or `outputSchema` is not a valid JSON Schema for an object (every result of a
//! tool with an output schema is checked against it, so a broken one would fail every call), or
//! its definition is over [`MAX_TOOL_BYTES`]. The rest of the list is kept.

use std::collections::HashSet;

use rmcp::model::{
    ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool as McpTool,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

/// The largest definition (name, description, schemas, as JSON) of one tool toolgate offers
/// the model: a definition is sent with every request the model gets, and real ones are a few
/// KiB.
pub(crate) const MAX_TOOL_BYTES: usize = 128 * 1024;
/// The most pages of tools read from one server (each page is one request).
const MAX_PAGES: usize = 100;

/// A server's tools that toolgate offers, and a line for each tool left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Listed {
    pub tools: Vec<McpTool>,
    pub left_out: Vec<String>,
}

/// Fetches every page of `tools/list` from `peer` and checks each tool; `server` is the
/// server's name, the first part of its tools' names.
pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
) -> Result<Listed, rmcp::ServiceError> {
    let mut listed = Listed::default();
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let next = match peer.send_request(request).await? {
            ServerResult::ListToolsResult(page) => {
                for tool in page.tools {
                    let bytes = json_len(&tool);
                    keep(&mut listed, &mut seen, server, Ok(tool), bytes);
                }
                page.next_cursor
            }
            // A page rmcp could not read as a tool list: one of its tools is not an MCP tool.
            // Each is read on its own, so only that one is lost.
            ServerResult::CustomResult(page) => {
                let Value::Object(mut page) = page.0 else {
                    return Err(rmcp::ServiceError::UnexpectedResponse);
                };
                let Some(Value::Array(tools)) = page.remove("tools") else {
                    return Err(rmcp::ServiceError::UnexpectedResponse);
                };
                for raw in tools {
                    let bytes = json_len(&raw);
                    let name = raw.get("name").and_then(Value::as_str).map(str::to_owned);
                    let tool = serde_json::from_value::<McpTool>(raw).map_err(|e| (name, e));
                    keep(&mut listed, &mut seen, server, tool, bytes);
                }
                page.remove("nextCursor")
                    .and_then(|c| c.as_str().map(str::to_owned))
            }
            _ => return Err(rmcp::ServiceError::UnexpectedResponse),
        };
        match next {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(listed),
        }
    }
    listed.left_out.push(format!(
        "it lists its tools on more than {MAX_PAGES} pages; the tools after those are left out"
    ));
    Ok(listed)
}

/// Adds `tool` to `listed`, or the line saying why it is left out.
fn keep(
    listed: &mut Listed,
    seen: &mut HashSet<String>,
    server: &str,
    tool: Result<McpTool, (Option<String>, serde_json::Error)>,
    bytes: usize,
) {
    let (name, checked) = match tool {
        Ok(tool) => (Some(tool.name.to_string()), check(server, tool, bytes)),
        Err((name, e)) => (name, Err(format!("its definition is not an MCP tool: {e}"))),
    };
    let shown = match &name {
        Some(name) => format!("{:?}", toolgate::error::cut_name(name)),
        None => "without a name".to_owned(),
    };
    let line = match checked {
        Ok(tool) if seen.insert(tool.name.to_string()) => {
            listed.tools.push(tool);
            return;
        }
        Ok(_) => format!("its tool {shown} is listed twice; the second is left out"),
        Err(reason) => format!("its tool {shown} is left out: {reason}"),
    };
    listed.left_out.push(line);
}

/// `tool`, if toolgate can offer it as `<server>.<name>`; else why not.
fn check(server: &str, tool: McpTool, bytes: usize) -> Result<McpTool, String> {
    if tool.name.is_empty() {
        return Err("its name is empty".to_owned());
    }
    let full = format!("{server}.{}", tool.name);
    if let Err(reason) = toolgate_policy::check_tool_name(&full) {
        return Err(format!(
            "the name {:?} is not a valid tool name: {reason}",
            toolgate::error::cut_name(&full)
        ));
    }
    if bytes > MAX_TOOL_BYTES {
        return Err(format!(
            "its definition is {bytes} bytes of JSON, over the {} KiB toolgate offers a model",
            MAX_TOOL_BYTES / 1024
        ));
    }
    check_schema("inputSchema", "arguments are", &tool.input_schema)?;
    if let Some(output) = &tool.output_schema {
        check_schema("outputSchema", "structured results are", output)?;
    }
    Ok(tool)
}

/// `Ok` when `schema` (the tool's `field`) is a valid JSON Schema for an object.
fn check_schema(field: &str, what: &str, schema: &rmcp::model::JsonObject) -> Result<(), String> {
    let schema = Value::Object(schema.clone());
    match schema.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "its {field} has \"type\": {other}, but a tool's {what} an object (\"type\": \"object\")"
            ));
        }
    }
    if let Err(e) = jsonschema::meta::validate(&schema) {
        let at = e.instance_path().to_string();
        return Err(format!(
            "its {field} is not a valid JSON Schema{}: {e}",
            if at.is_empty() {
                String::new()
            } else {
                format!(" (at {at})")
            }
        ));
    }
    Ok(())
}

/// The length of `value` as compact JSON, without building the text.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a value that does not serialize counts as too large.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(value: Value) -> McpTool {
        serde_json::from_value(value).expect("an MCP tool")
    }

    #[test]
    fn a_page_with_a_tool_whose_schema_is_a_list_is_not_a_tool_list_for_rmcp() {
        let page = json!({"tools": [
            {"name": "good", "inputSchema": {"type": "object"}},
            {"name": "bad", "inputSchema": [1, 2]},
        ]});
        let read: ServerResult = serde_json::from_value(page).unwrap();
        assert!(matches!(read, ServerResult::CustomResult(_)), "{read:?}");
    }

    #[test]
    fn a_schema_with_a_type_that_is_not_a_type_is_refused() {
        let t = tool(json!({"name": "t", "inputSchema": {"properties": {"a": {"type": 5}}}}));
        let e = check("s", t, 10).unwrap_err();
        assert!(
            e.contains("not a valid JSON Schema (at /properties/a/type)"),
            "{e}"
        );
    }

    #[test]
    fn a_schema_for_something_other_than_an_object_is_refused() {
        let t = tool(json!({"name": "t", "inputSchema": {"type": "string"}}));
        assert!(
            check("s", t, 10)
                .unwrap_err()
                .contains("\"type\": \"string\"")
        );
    }

    #[test]
    fn an_output_schema_that_is_not_a_schema_is_refused() {
        let t = tool(json!({"name": "t", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"a": {"type": 5}}}}));
        let e = check("s", t, 10).unwrap_err();
        assert!(
            e.contains("outputSchema is not a valid JSON Schema (at /properties/a/type)"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_name_is_refused() {
        let t = tool(json!({"name": "", "inputSchema": {"type": "object"}}));
        assert_eq!(check("s", t, 10).unwrap_err(), "its name is empty");
    }

    #[test]
    fn a_definition_over_the_cap_is_refused() {
        let t = tool(json!({"name": "t", "inputSchema": {"type": "object"}}));
        let e = check("s", t, MAX_TOOL_BYTES + 1).unwrap_err();
        assert!(e.contains("over the 128 KiB"), "{e}");
    }

    #[test]
    fn a_valid_tool_is_kept() {
        let t = tool(json!({"name": "t", "inputSchema": {"type": "object",
            "properties": {"a": {"type": "string"}}, "required": ["a"]}}));
        assert!(check("s", t, 10).is_ok());
    }

    #[test]
    fn the_length_is_that_of_the_compact_json() {
        let v = json!({"a": [1, "xy"]});
        assert_eq!(json_len(&v), v.to_string().len());
    }
}
