//! An upstream server's tool as an engine [`Tool`]: named `<server>.<tool>`, called through the
//! server's live connection, its answer turned into a [`ToolOutput`], and its request cancelled
//! upstream (`notifications/cancelled`) when toolgate stops waiting for it.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ContentBlock, RequestId, ResourceContents, ServerResult, Tool as McpTool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use toolgate::tool::{BoxFuture, ContentPart, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::error::{call_error, upstream_error};
use super::supervisor::Server;

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

fn spec_of(name: String, tool: &McpTool) -> ToolSpec {
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default();
    ToolSpec::new(
        name,
        description,
        Value::Object((*tool.input_schema).clone()),
    )
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
        Box::pin(async move {
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
                .send_request_with_option(request, PeerRequestOptions::no_options())
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
        })
    }
}

/// A request sent and not answered yet. Dropped before its answer came (a timeout, a
/// cancelled turn), it sends `notifications/cancelled` for the request; the notification is
/// tracked by the server, so shutting down waits for it to go out.
struct Pending {
    server: Arc<Server>,
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Pending {
    fn answered(&mut self) {
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

/// A tool result as the engine's output: text parts joined by newlines, images kept, other
/// content described in a line of text; `isError` makes it the tool's failure.
pub(crate) fn output(server: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts = Vec::with_capacity(result.content.len());
    for block in result.content {
        parts.push(match block {
            ContentBlock::Text(t) => ContentPart::text(t.text),
            ContentBlock::Image(i) => ContentPart::Image {
                mime_type: i.mime_type,
                data: i.data,
            },
            ContentBlock::Audio(a) => ContentPart::text(format!(
                "[audio ({}), {} base64 characters, not shown]",
                a.mime_type,
                a.data.len()
            )),
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    ContentPart::text(format!("[resource {uri}]\n{text}"))
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => ContentPart::text(format!(
                    "[resource {uri} ({}), {} base64 characters, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )),
                other => ContentPart::text(format!(
                    "[resource of a kind toolgate does not know: {}]",
                    serde_json::to_string(&other).unwrap_or_default()
                )),
            },
            ContentBlock::ResourceLink(link) => ContentPart::text(match &link.description {
                Some(d) => format!("[resource link {} <{}>: {d}]", link.name, link.uri),
                None => format!("[resource link {} <{}>]", link.name, link.uri),
            }),
            other => ContentPart::text(format!(
                "[content of a kind toolgate does not know: {}]",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        });
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(ContentPart::text(structured.to_string()));
    }
    let all_text = parts.iter().all(|p| matches!(p, ContentPart::Text { .. }));
    if result.is_error == Some(true) {
        let text = text_of(&parts);
        return Err(ToolError::new(if text.is_empty() {
            format!("the tool of the MCP server {server} reported an error without a message")
        } else {
            text
        }));
    }
    Ok(if all_text {
        ToolOutput::Text(text_of(&parts))
    } else {
        ToolOutput::Parts(parts)
    })
}

fn text_of(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
