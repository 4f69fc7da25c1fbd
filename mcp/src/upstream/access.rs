//! Reads of an upstream server's resources and gets of its prompts, as the engine tools that
//! [`toolgate::Engine::access`] runs through the guard (A1); and the requests about them that
//! are not reads (`completion/complete`, `resources/subscribe`), sent straight to the server.
//!
//! A read or a get hands the guard the texts of its result and keeps the rest in a [`Slot`]
//! (see [`shape`](super::shape)); the host puts the result back together from the slot and the
//! outcome. As for a tool call, the server gets `notifications/cancelled` when toolgate stops
//! waiting (a timeout, a cancelled request).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, ErrorCode,
    GetPromptRequest, GetPromptRequestParams, ReadResourceRequest, ReadResourceRequestParams,
    ServerResult, SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate::tool::{BoxFuture, ContentPart, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tracing::Instrument;

use super::adapter::Pending;
use super::error::{call_error, upstream_error};
use super::shape::{Kind, Shape};
use super::supervisor::Server;

/// How long a request that is not a read (a completion, a subscription) may take.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a read or a get leaves the rest of its result for the host.
#[derive(Clone, Default)]
pub struct Slot(Arc<Mutex<Option<Shape>>>);

impl Slot {
    fn put(&self, shape: Shape) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(shape);
    }

    /// The result of the read or get, with `texts` (the outcome's, `offloaded` when they are
    /// an offload notice) in place; `None` before the server answered.
    pub(crate) fn rebuild(&self, texts: Vec<String>, offloaded: bool) -> Option<Value> {
        let shape = self.0.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        Some(shape.rebuild(texts, offloaded))
    }
}

/// What the target asks its server for.
enum Ask {
    /// `resources/read` of this URI, as the client sent it.
    Read(String),
    /// `prompts/get` of the prompt named so on the server.
    Get(String),
}

/// One read or get, for one call.
struct Access {
    spec: ToolSpec,
    server: Arc<Server>,
    ask: Ask,
    slot: Slot,
}

/// The target that reads `uri` (as the client sent it) from `server`, and its slot.
pub(crate) fn reader(server: Arc<Server>, uri: &str) -> (Arc<dyn Tool>, Slot) {
    target(server, uri, Ask::Read(uri.to_owned()))
}

/// The target that gets the prompt `remote` (its name on `server`) named `name` here.
pub(crate) fn getter(server: Arc<Server>, name: &str, remote: &str) -> (Arc<dyn Tool>, Slot) {
    target(server, name, Ask::Get(remote.to_owned()))
}

fn target(server: Arc<Server>, name: &str, ask: Ask) -> (Arc<dyn Tool>, Slot) {
    let slot = Slot::default();
    let access = Access {
        spec: ToolSpec::new(name, "", serde_json::json!({"type": "object"})),
        server,
        ask,
        slot: slot.clone(),
    };
    (Arc::new(access), slot)
}

impl Tool for Access {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let server = self.server.clone();
        let slot = self.slot.clone();
        let (kind, request) = match &self.ask {
            Ask::Read(uri) => (
                Kind::Resource,
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
                    ReadResourceRequestParams::new(uri.clone()),
                )),
            ),
            Ask::Get(prompt) => {
                let mut params = GetPromptRequestParams::new(prompt.clone());
                if let Value::Object(arguments) = args
                    && !arguments.is_empty()
                {
                    params.arguments = Some(arguments);
                }
                (
                    Kind::Prompt,
                    ClientRequest::GetPromptRequest(GetPromptRequest::new(params)),
                )
            }
        };
        Box::pin(async move {
            let answer = send(&server, &ctx, request).await?;
            let value = match (kind, answer) {
                (Kind::Resource, ServerResult::ReadResourceResult(r)) => serde_json::to_value(r),
                (Kind::Prompt, ServerResult::GetPromptResult(r)) => serde_json::to_value(r),
                (Kind::Resource, _) => {
                    return Err(upstream_error(format!(
                        "the MCP server {} answered resources/read with something that is not a resource's contents",
                        server.name()
                    )));
                }
                (Kind::Prompt, _) => {
                    return Err(upstream_error(format!(
                        "the MCP server {} answered prompts/get with something that is not a prompt",
                        server.name()
                    )));
                }
            }
            .map_err(|e| upstream_error(format!("the answer cannot be read again: {e}")))?;
            let (shape, texts) = Shape::take(kind, value);
            slot.put(shape);
            Ok(ToolOutput::Parts(
                texts.into_iter().map(ContentPart::text).collect(),
            ))
        })
    }
}

/// Sends `request` to `server` under the call's cancellation; a request toolgate stops
/// waiting for is cancelled upstream.
async fn send(
    server: &Arc<Server>,
    ctx: &ToolContext,
    request: ClientRequest,
) -> Result<ServerResult, ToolError> {
    let span = match &request {
        ClientRequest::ReadResourceRequest(r) => {
            super::trace::client_span("resources/read", server.name(), &r.params.uri)
        }
        ClientRequest::GetPromptRequest(r) => {
            super::trace::client_span("prompts/get", server.name(), &r.params.name)
        }
        _ => super::trace::client_span("request", server.name(), ""),
    };
    send_traced(server, ctx, request).instrument(span).await
}

async fn send_traced(
    server: &Arc<Server>,
    ctx: &ToolContext,
    request: ClientRequest,
) -> Result<ServerResult, ToolError> {
    let peer = server.peer(&ctx.cancel).await?;
    let handle = peer
        .send_request_with_option(request, super::trace::request_options())
        .await
        .map_err(|e| refused(server.name(), &e))?;
    let mut pending = Pending::new(server.clone(), peer, handle.id.clone());
    let answer = tokio::select! {
        answer = handle.await_response() => answer,
        () = ctx.cancel.cancelled() => {
            return Err(ToolError::coded("cancelled", "the request was cancelled"));
        }
    };
    pending.answered();
    answer.map_err(|e| refused(server.name(), &e))
}

/// [`call_error`], with the server's "resource not found" (`-32002`) as `unknown_resource`.
fn refused(server: &str, error: &rmcp::ServiceError) -> ToolError {
    match error {
        rmcp::ServiceError::McpError(data) if data.code == ErrorCode::RESOURCE_NOT_FOUND => {
            ToolError::coded(
                "unknown_resource",
                format!(
                    "the MCP server {server} has no such resource: {}",
                    data.message
                ),
            )
        }
        other => call_error(server, other),
    }
}

/// Sends a request that is not a read, within [`REQUEST_TIMEOUT`].
async fn ask(server: &Arc<Server>, request: ClientRequest) -> Result<ServerResult, ToolError> {
    let never = CancellationToken::new();
    let asked = async {
        let peer = server.peer(&never).await?;
        peer.send_request(request)
            .await
            .map_err(|e| refused(server.name(), &e))
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, asked).await {
        Ok(answer) => answer,
        Err(_) => Err(ToolError::coded(
            "timeout",
            format!(
                "the MCP server {} did not answer within {} s",
                server.name(),
                REQUEST_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// `completion/complete` on `server`, its reference already in the server's names.
pub(crate) async fn complete(
    server: &Arc<Server>,
    params: CompleteRequestParams,
) -> Result<CompleteResult, ToolError> {
    let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
    match ask(server, request).await? {
        ServerResult::CompleteResult(result) => Ok(result),
        _ => Err(upstream_error(format!(
            "the MCP server {} answered completion/complete with something that is not a completion",
            server.name()
        ))),
    }
}

/// `resources/subscribe` (or, with `on` unset, `resources/unsubscribe`) of `uri` on `server`.
///
/// rmcp marks both requests legacy: the 2026-07-28 revision replaces them with
/// `subscriptions/listen`. Every revision before it has them, and so do the servers in use.
#[allow(deprecated)]
pub(crate) async fn subscription(
    server: &Arc<Server>,
    uri: &str,
    on: bool,
) -> Result<(), ToolError> {
    let request = if on {
        ClientRequest::SubscribeRequest(rmcp::model::SubscribeRequest::new(
            SubscribeRequestParams::new(uri),
        ))
    } else {
        ClientRequest::UnsubscribeRequest(rmcp::model::UnsubscribeRequest::new(
            UnsubscribeRequestParams::new(uri),
        ))
    };
    ask(server, request).await.map(|_| ())
}

/// The target of a read or get that no server answers: it fails with the error kind `kind`
/// (`unknown_resource`, `unknown_prompt`) and `why`. The rules judge the read first, so a URI
/// the policy refuses is refused whether a server has it or not.
pub(crate) fn nowhere(name: &str, kind: &'static str, why: String) -> Arc<dyn Tool> {
    Arc::new(Nowhere {
        spec: ToolSpec::new(name, "", serde_json::json!({"type": "object"})),
        kind,
        why,
    })
}

struct Nowhere {
    spec: ToolSpec,
    kind: &'static str,
    why: String,
}

impl Tool for Nowhere {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _ctx: ToolContext,
        _args: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let error = ToolError::coded(self.kind, self.why.clone());
        Box::pin(async move { Err(error) })
    }
}
