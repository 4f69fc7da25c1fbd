//! An upstream server's tool as an engine [`Tool`]: named `<server>.<tool>`, with everything
//! the server declared of it (title, annotations, icons, `_meta`, output schema), called
//! through the server's live connection, its answer turned into a [`ToolOutput`] with nothing
//! lost (content blocks of every kind, structured content, `_meta`), and its request cancelled
//! upstream (`notifications/cancelled`) when toolgate stops waiting for it.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;
use toolgate::tool::{
    BoxFuture, ContentPart, FullOutput, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use tracing::Instrument;

use super::error::{call_error, upstream_error};
use super::supervisor::Server;
use crate::shape::{part_of, spec_of};

/// Why toolgate tells a server it no longer waits for a request.
const CANCEL_REASON: &str =
    "toolgate stopped waiting for the result (the call timed out or was cancelled)";

/// One tool of an upstream server.
pub(crate) struct UpstreamTool {
    spec: ToolSpec,
    /// The tool's name on the server.
    remote: String,
    server: Arc<Server>,
}

/// The server's tools as engine tools, and a line for each tool its list left out (see
/// [`listing`](super::listing)) or its pins hold back (see [`pins`](super::pins)).
pub(crate) fn tools_of(server: &Arc<Server>) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let listed = server.tools();
    let (offered, held) = super::pins::hold_back(&server.spec, &listed);
    let tools = offered
        .into_iter()
        .map(|tool| {
            Arc::new(UpstreamTool {
                spec: spec_of(format!("{}.{}", server.name(), tool.name), tool),
                remote: tool.name.to_string(),
                server: server.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut left_out = listed.left_out.clone();
    left_out.extend(held.iter().map(super::pins::held_line));
    (tools, left_out)
}

impl Tool for UpstreamTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let server = self.server.clone();
        let remote = self.remote.clone();
        let span = super::trace::client_span("tools/call", server.name(), &remote);
        let call = async move {
            let Value::Object(arguments) = args else {
                return Err(ToolError::invalid_arguments(
                    "the arguments must be a JSON object",
                ));
            };
            let peer = server.peer(&ctx.cancel).await?;
            let mut params = CallToolRequestParams::new(remote);
            params.arguments = Some(arguments);
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            // Entered before it is sent: what the server sends about the call finds it.
            let tracked = server.handler.track(ctx.clone()).await?;
            let handle = peer
                .send_request_with_option(request, super::trace::request_options())
                .await
                .map_err(|e| call_error(server.name(), &e))?;
            tracked.sent(handle.id.clone(), handle.progress_token.clone());
            let mut pending = Pending {
                server: server.clone(),
                peer,
                id: Some(handle.id.clone()),
            };
            let answer = tokio::select! {
                answer = handle.await_response() => answer,
                // `pending` is dropped on the way out and tells the server.
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::coded("cancelled", "the call was cancelled"));
                }
            };
            pending.answered();
            match answer {
                Ok(ServerResult::CallToolResult(result)) => output(server.name(), result),
                // `{}`: a tool result without content (as the MCP SDK reads it).
                Ok(ServerResult::EmptyResult(_)) => Ok(ToolOutput::text("")),
                Ok(_) => Err(upstream_error(format!(
                    "the MCP server {} answered tools/call with something that is not a tool result",
                    server.name()
                ))),
                Err(e) => Err(call_error(server.name(), &e)),
            }
        };
        Box::pin(call.instrument(span))
    }
}

/// A request sent and not answered yet. Dropped before its answer came (a timeout, a
/// cancelled turn), it sends `notifications/cancelled` for the request; the notification is
/// tracked by the server, so shutting down waits for it to go out.
pub(crate) struct Pending {
    server: Arc<Server>,
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Pending {
    /// The request `id` sent to `server` through `peer`.
    pub(crate) fn new(server: Arc<Server>, peer: Peer<RoleClient>, id: RequestId) -> Self {
        Pending {
            server,
            peer,
            id: Some(id),
        }
    }

    pub(crate) fn answered(&mut self) {
        self.id = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let peer = self.peer.clone();
        let server = self.server.name().to_owned();
        self.server.tasks.spawn(async move {
            let notice = CancelledNotificationParam::new(Some(id), Some(CANCEL_REASON.to_owned()));
            if let Err(e) = peer.notify_cancelled(notice).await {
                tracing::debug!(%server, "notifications/cancelled not sent: {e}");
            }
        });
    }
}

/// A tool result as the engine's output: a single bare text block as text; anything more
/// (several blocks, blocks of other kinds or with annotations, structured content, `_meta`)
/// as a [`FullOutput`] that keeps all of it. `isError` makes it the tool's failure, with the
/// text of its blocks as the message.
///
/// The result's `_meta` keeps every key but those MCP reserves for the protocol (a prefix with
/// a label `modelcontextprotocol` or `mcp`, such as `io.modelcontextprotocol/serverInfo`): they
/// describe the hop between toolgate and the server, not the one to toolgate's client.
pub(crate) fn output(server: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let CallToolResult {
        content,
        structured_content,
        is_error,
        meta,
        ..
    } = result;
    if is_error == Some(true) {
        let text = content
            .into_iter()
            .map(part_of)
            .filter_map(|p| p.text_content().map(str::to_owned))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(ToolError::new(if text.is_empty() {
            format!("the tool of the MCP server {server} reported an error without a message")
        } else {
            text
        }));
    }
    let meta = meta
        .map(|m| {
            m.0.into_iter()
                .filter(|(key, _)| !reserved_for_the_protocol(key))
                .collect::<serde_json::Map<_, _>>()
        })
        .filter(|m| !m.is_empty());
    let bare = structured_content.is_none() && meta.is_none();
    if bare && content.is_empty() {
        return Ok(ToolOutput::text(""));
    }
    let mut parts: Vec<ContentPart> = content.into_iter().map(part_of).collect();
    if bare
        && let [ContentPart::Text { text, extra }] = parts.as_mut_slice()
        && extra.is_empty()
    {
        return Ok(ToolOutput::Text(std::mem::take(text)));
    }
    if bare {
        return Ok(ToolOutput::Parts(parts));
    }
    Ok(ToolOutput::Full(FullOutput {
        content: parts,
        structured: structured_content,
        meta,
    }))
}

/// Whether a `_meta` key is MCP's own: its prefix (before `/`) has a label `modelcontextprotocol`
/// or `mcp` (MCP 2025-11-25, "General fields").
fn reserved_for_the_protocol(key: &str) -> bool {
    key.split_once('/').is_some_and(|(prefix, _)| {
        prefix
            .split('.')
            .any(|label| label == "modelcontextprotocol" || label == "mcp")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn a_bare_text_block_is_text() {
        let out = output(
            "s",
            result(json!({"content": [{"type": "text", "text": "hi"}]})),
        );
        assert!(matches!(out, Ok(ToolOutput::Text(t)) if t == "hi"));
    }

    #[test]
    fn structured_content_and_meta_are_kept() {
        let out = output(
            "s",
            result(json!({"content": [{"type": "text", "text": "{\"a\":1}"}],
                "structuredContent": {"a": 1}, "_meta": {"example.com/k": "v"}})),
        );
        let Ok(ToolOutput::Full(full)) = out else {
            panic!("a full output: {out:?}");
        };
        assert_eq!(full.structured, Some(json!({"a": 1})));
        assert_eq!(
            full.meta,
            Some(json!({"example.com/k": "v"}).as_object().unwrap().clone())
        );
        assert_eq!(full.content, vec![ContentPart::text("{\"a\":1}")]);
    }

    #[test]
    fn the_protocols_own_meta_keys_stay_on_their_hop() {
        let out = output(
            "s",
            result(json!({"content": [{"type": "text", "text": "hi"}],
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}, "example.com/k": 1}})),
        );
        let Ok(ToolOutput::Full(full)) = out else {
            panic!("a full output: {out:?}");
        };
        assert_eq!(
            full.meta,
            Some(json!({"example.com/k": 1}).as_object().unwrap().clone())
        );
        let out = output(
            "s",
            result(json!({"content": [{"type": "text", "text": "hi"}],
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}})),
        );
        assert!(
            matches!(&out, Ok(ToolOutput::Text(t)) if t == "hi"),
            "{out:?}"
        );
    }

    #[test]
    fn an_error_result_is_the_tools_failure_with_its_text() {
        let out = output(
            "s",
            result(json!({"isError": true, "content": [{"type": "text", "text": "no such city"}]})),
        );
        assert_eq!(out.unwrap_err().message, "no such city");
    }
}
