//! Requests from an upstream server to the client (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`): refused or passed on as the policy says, to the client
//! whose call the server is working on, and the client's answer passed back.
//!
//! In order, a request is refused (the server gets a JSON-RPC error saying why, the client
//! never sees it) when:
//! 1. the policy does not allow its kind for the server (`client_requests` of the server);
//! 2. it belongs to no client: no call of the server is in flight, the call was made with no
//!    client behind it (`toolgate call`), or calls of several clients are in flight and nothing
//!    says whose it is (see [`inflight`](super::inflight));
//! 3. it is a sampling request past the call's `max_sampling_per_call`;
//! 4. the client did not declare the capability, is gone, or does not answer within
//!    `timeout` (it is then told the request is cancelled), or the call ends first.
// Sampling, roots and logging are deprecated by SEP-2577 (the 2026-07-28 revision asks for
// input in results instead), but they are how every revision with sessions works, and this
// passes them on.
#![allow(deprecated)]

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientResult, ElicitationCapability, FormElicitationCapability, GetMeta,
    RootsCapabilities, SamplingCapability, ServerRequest, UrlElicitationCapability,
};
use rmcp::service::{InboundStreamOrigin, RequestContext, RoleClient};

use toolgate_policy::McpClientRequests;

use super::inflight::{Attribution, InFlight};

/// What a policy lets one server ask the client (`mcp_servers[].client_requests`).
pub(crate) type Permissions = McpClientRequests;

impl Capabilities for Permissions {
    fn capabilities(&self) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::default();
        if self.sampling.allowed() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        if self.elicitation.allowed() {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        if self.roots.allowed() {
            // No `listChanged`: toolgate has no roots of its own to say changed.
            capabilities.roots = Some(RootsCapabilities::default());
        }
        capabilities
    }
}

/// What toolgate declares to a server.
pub(crate) trait Capabilities {
    /// The capabilities toolgate declares to the server: those of the kinds it may ask for
    /// (a server that sees no `sampling` capability does not ask for sampling, and may hide
    /// the tools that need it).
    fn capabilities(&self) -> ClientCapabilities;
}

/// The kinds of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Sampling,
    Elicitation,
    Roots,
}

impl Kind {
    fn of(request: &ServerRequest) -> Option<Kind> {
        match request {
            ServerRequest::CreateMessageRequest(_) => Some(Kind::Sampling),
            ServerRequest::ElicitRequest(_) => Some(Kind::Elicitation),
            ServerRequest::ListRootsRequest(_) => Some(Kind::Roots),
            _ => None,
        }
    }

    /// The request's method, for messages.
    fn method(self) -> &'static str {
        match self {
            Kind::Sampling => "sampling/createMessage",
            Kind::Elicitation => "elicitation/create",
            Kind::Roots => "roots/list",
        }
    }

    /// Its key under `client_requests`.
    fn key(self) -> &'static str {
        match self {
            Kind::Sampling => "sampling",
            Kind::Elicitation => "elicitation",
            Kind::Roots => "roots",
        }
    }
}

/// Refuses `request` of `server` or passes it to the client of its call; see the module.
#[tracing::instrument(skip_all, fields(server, method))]
pub(crate) async fn forward(
    server: &str,
    permissions: &Permissions,
    calls: &InFlight,
    request: ServerRequest,
    context: &RequestContext<RoleClient>,
) -> Result<ClientResult, ErrorData> {
    let Some(kind) = Kind::of(&request) else {
        return Err(ErrorData::method_not_found::<
            rmcp::model::CreateMessageRequestMethod,
        >());
    };
    tracing::Span::current()
        .record("server", server)
        .record("method", kind.method());
    let allowed = match kind {
        Kind::Sampling => permissions.sampling,
        Kind::Elicitation => permissions.elicitation,
        Kind::Roots => permissions.roots,
    }
    .allowed();
    if !allowed {
        tracing::warn!("refused: the policy does not allow it");
        return Err(refused(format!(
            "toolgate's policy refuses {} requests from the MCP server {server} (its client_requests.{} is not allow)",
            kind.method(),
            kind.key()
        )));
    }
    let origin = context.extensions.get::<InboundStreamOrigin>();
    let (seq, caller, call_ended) = match calls.attribute(origin) {
        Attribution::Call {
            seq,
            caller,
            cancel,
        } => (seq, caller, cancel),
        Attribution::NoClient => {
            return Err(refused(format!(
                "toolgate cannot pass on {}: the call was not made by an MCP client (no one to ask)",
                kind.method()
            )));
        }
        Attribution::NoCall => {
            return Err(refused(format!(
                "toolgate passes {} on only while a tool call of the MCP server {server} runs: it asks the client that made that call",
                kind.method()
            )));
        }
        Attribution::Ambiguous(clients) => {
            tracing::warn!(clients, "refused: cannot tell which client it is for");
            return Err(refused(format!(
                "toolgate cannot tell which of its clients {} is for: calls of {clients} clients are running on the MCP server {server} and the request does not say which call it belongs to (send it on the call's own stream, or make the calls of one client at a time)",
                kind.method()
            )));
        }
    };
    if kind == Kind::Sampling
        && let Err(made) = calls.charge_sampling(seq, permissions.max_sampling_per_call)
    {
        tracing::warn!(made, "refused: the call's sampling cap is reached");
        return Err(refused(format!(
            "toolgate refuses more sampling for this call: it has made {made} sampling requests, the most the policy allows per call (client_requests.max_sampling_per_call of the MCP server {server})"
        )));
    }
    // The request's `_meta` as the server sent it (rmcp keeps it in the context).
    let mut request = request;
    *request.get_meta_mut() = context.meta.clone();
    let limit = permissions.timeout;
    tokio::select! {
        answer = caller.request(request) => answer,
        () = tokio::time::sleep(limit) => {
            tracing::warn!("the client did not answer in time");
            Err(ErrorData::internal_error(
                format!(
                    "the client did not answer {} within {} (client_requests.timeout of the MCP server {server}); it was told the request is cancelled",
                    kind.method(),
                    toolgate_policy::format_duration(Some(limit))
                ),
                None,
            ))
        }
        () = call_ended.cancelled() => Err(ErrorData::internal_error(
            format!("the tool call ended (cancelled or timed out) before the client answered {}", kind.method()),
            None,
        )),
        () = context.ct.cancelled() => Err(ErrorData::internal_error(
            format!("the server cancelled its {} request", kind.method()),
            None,
        )),
    }
}

fn refused(message: String) -> ErrorData {
    ErrorData::invalid_request(message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowed_kinds_are_declared() {
        let none = Permissions::default().capabilities();
        assert_eq!(none, ClientCapabilities::default());
        let sampling = Permissions {
            sampling: toolgate_policy::RequestAccess::Allow,
            ..Permissions::default()
        }
        .capabilities();
        assert!(sampling.sampling.is_some());
        assert!(sampling.elicitation.is_none() && sampling.roots.is_none());
    }
}
