//! One MCP connection: `tools/list` and `tools/call` on the current engine, in this
//! connection's toolgate session.

// `logging/setLevel` is deprecated by SEP-2577 (the 2026-07-28 revision); it is how every
// revision with sessions sets the level.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use tokio_util::sync::CancellationToken;
use toolgate::history::ToolCall;
use toolgate::{Caller, Session};
use toolgate_store::SessionId;
use tracing::Instrument;

use super::clients::ClientLink;
use super::content::{call_result, error_result, mark_state_not_saved, tool};
use super::downstream::CallLink;
use super::engines::Loaded;
use super::listeners::{self, Change};
use super::paging;
use super::progress::forward_progress;
use super::resources::{self, Caller as ResourceCaller};
use super::shared::Shared;
use super::stateless::{self, Principal};
use super::telemetry;

/// The HTTP header that carries the MCP session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// Where a connection's toolgate session id comes from.
#[derive(Debug, Clone)]
pub(crate) enum SessionSource {
    /// One id for the whole connection (stdio).
    Fixed(SessionId),
    /// The `Mcp-Session-Id` of each HTTP request; for a request without one (2026-07-28), the
    /// principal and `_meta["toolgate/session"]` (see [`stateless`]).
    HttpHeader,
}

/// The handler of one connection (stdio) or one HTTP session.
pub(crate) struct Gateway {
    shared: Arc<Shared>,
    source: SessionSource,
    /// This connection's entry in [`Shared::peers`], once the handshake is done.
    client: Mutex<Option<Arc<ClientLink>>>,
    /// Tells this connection from every other of the process (its subscriptions are kept by it).
    connection: u64,
}

/// What `serve` offers its clients: tools and logging, and what some upstream server offers of
/// resources, prompts and completion (see [`resources::declare`]).
pub(crate) fn capabilities(shared: &Shared) -> ServerCapabilities {
    let mut capabilities = base_capabilities();
    resources::declare(shared, &mut capabilities);
    capabilities
}

/// What serve offers whatever its upstreams offer: tools, their list changes, logging.
fn base_capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_logging()
        .build()
}

impl Gateway {
    pub(crate) fn new(shared: Arc<Shared>, source: SessionSource) -> Self {
        static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Gateway {
            shared,
            source,
            client: Mutex::new(None),
            connection: CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// This connection's entry in [`Shared::peers`], made on first use.
    fn client(&self, peer: &Peer<RoleServer>) -> Arc<ClientLink> {
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Some(client) => Arc::clone(client),
            None => Arc::clone(slot.insert(self.shared.peers.add(peer.clone()))),
        }
    }

    fn session_id(&self, context: &RequestContext<RoleServer>) -> Result<SessionId, McpError> {
        match &self.source {
            SessionSource::Fixed(id) => Ok(id.clone()),
            SessionSource::HttpHeader => {
                let parts = context.extensions.get::<http::request::Parts>();
                match parts.and_then(|parts| parts.headers.get(SESSION_HEADER)) {
                    Some(header) => {
                        let header = header.to_str().map_err(|_| {
                            McpError::invalid_request("bad Mcp-Session-Id: not text", None)
                        })?;
                        SessionId::parse(header).map_err(|e| {
                            McpError::invalid_request(format!("bad Mcp-Session-Id: {e}"), None)
                        })
                    }
                    // A request without an MCP session (2026-07-28): keyed by who sent it.
                    None => {
                        let principal = parts
                            .and_then(|parts| parts.extensions.get::<Principal>())
                            .ok_or_else(|| {
                                McpError::internal_error("the request has no principal", None)
                            })?;
                        let id = stateless::session_of(principal, &context.meta)?;
                        if let Some(forget) = self.shared.stateless.touch(&id) {
                            self.shared.engines.current().engine.forget_session(&forget);
                        }
                        Ok(id)
                    }
                }
            }
        }
    }

    /// Who sends the request: over HTTP, the caller the front authenticated (C1); over stdio,
    /// the local caller.
    fn request_caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<std::sync::Arc<Caller>, McpError> {
        match &self.source {
            SessionSource::Fixed(_) => Ok(Caller::local()),
            SessionSource::HttpHeader => context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Arc<Caller>>())
                .cloned()
                .ok_or_else(|| McpError::internal_error("the request has no caller", None)),
        }
    }

    /// The session `id` of `loaded`'s engine as `context`'s caller uses it, with what the
    /// session store knows it found when `fresh` is asked for (a list, or a call to a name not
    /// every session sees).
    async fn session(
        &self,
        loaded: &Loaded,
        id: &SessionId,
        fresh: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<Session, McpError> {
        let session = loaded
            .engine
            .session_of(id)
            .with_caller(self.request_caller(context)?);
        if fresh && let Err(e) = loaded.sessions.refresh(&session, id).await {
            // The session goes on with what this process knows; the next call tries again.
            tracing::warn!(
                session = id.as_str(),
                error = %toolgate::error::Chain(&e),
                "cannot read the session state"
            );
        }
        Ok(session)
    }
}

impl Gateway {
    /// Who asks a request about resources or prompts, in which session of which engine.
    async fn caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<ResourceCaller, McpError> {
        let id = self.session_id(context)?;
        let loaded = self.shared.engines.current();
        let session = self.session(&loaded, &id, false, context).await?;
        Ok(ResourceCaller {
            shared: self.shared.clone(),
            loaded,
            session,
            client: self.connection,
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Ok(Some(client)) = self.client.lock().map(|mut k| k.take()) {
            self.shared.peers.remove(client.key());
        }
        self.shared.subscriptions.drop_client(self.connection);
    }
}

/// The protocol revisions `serve` speaks, oldest first: every one up to 2026-07-28.
pub(crate) fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28)
}

/// What `server/discover` says about the server before the policy's engine is built: the
/// capabilities that depend on no policy (resources and prompts, which depend on the upstreams,
/// are declared by `initialize` and by a discover that reaches the engine).
pub(crate) fn server_config() -> ServerConfig {
    server_config_with(base_capabilities())
}

/// What `initialize` and `server/discover` say about the server, with `capabilities`.
fn server_config_with(capabilities: ServerCapabilities) -> ServerConfig {
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "The tools of a toolgate policy. Every call runs through the policy's guard; a \
             refused or failed call comes back as an error result that says what to do next.",
        )
}

/// Whether the request is on a revision without sessions (2026-07-28 and later).
fn is_sessionless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        server_config_with(capabilities(&self.shared))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(supported_versions())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(listeners::accepted(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let id = self.session_id(context.request_context())?;
        let _listening = self
            .shared
            .peers
            .listeners
            .add(id, context.sink().clone())?;
        context.cancelled().await;
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.client(&context.peer);
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.client(&context.peer).set_level(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let id = self.session_id(&context)?;
        let loaded = self.shared.engines.current();
        let session = self.session(&loaded, &id, true, &context).await?;
        let page = paging::page(
            "tools",
            loaded.engine.visible_tools(&session),
            request.as_ref(),
            loaded.page_size,
            |spec| spec.name.as_str(),
        )?
        .map(|spec| tool(spec, &loaded.engine));
        let mut result = ListToolsResult::with_all_items(page.items);
        result.next_cursor = page.next_cursor;
        Ok(result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        resources::list_resources(&self.shared, request, &*self.request_caller(&context)?)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        resources::list_templates(&self.shared, request)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        resources::list_prompts(&self.shared, request, &*self.request_caller(&context)?)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let span = telemetry::request_span("resources/read", &request.uri, &context);
        async { resources::read(self.caller(&context).await?, request, context).await }
            .instrument(span)
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let span = telemetry::request_span("prompts/get", &request.name, &context);
        async { resources::get(self.caller(&context).await?, request, context).await }
            .instrument(span)
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        resources::complete(self.caller(&context).await?, request).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        resources::subscribe(self.caller(&context).await?, request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        resources::unsubscribe(self.caller(&context).await?, request).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let span = telemetry::request_span("tools/call", &request.name, &context);
        self.run_call(request, context).instrument(span).await
    }
}

impl Gateway {
    /// `tools/call`: the call through the whole guard of the current engine.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let id = self.session_id(&context)?;
        // The engine of this call, to its end: a reload meanwhile changes the next calls only.
        let loaded = self.shared.engines.current();
        let name = request.name.as_ref();
        let fresh = !loaded.always_visible.contains(name);
        let session = self.session(&loaded, &id, fresh, &context).await?;
        let found_before = session.state().revealed_count();

        let arguments = match request.arguments {
            Some(map) => serde_json::Value::Object(map).to_string(),
            None => "{}".to_owned(),
        };
        let call_id = self.shared.next_call_id();
        let call = ToolCall::new(call_id.clone(), name, arguments);
        // What an upstream server sends during the call finds its way back to this client.
        let _entered = self.shared.links.enter(CallLink::new(
            self.client(&context.peer),
            context.id.clone(),
            call_id.clone(),
            Arc::clone(&self.shared.progress),
        ));

        let forward = context.meta.get_progress_token().map(|token| {
            let updates = self.shared.progress.register(&call_id);
            let ended = CancellationToken::new();
            let task = tokio::spawn(forward_progress(
                updates,
                token,
                context.peer.clone(),
                ended.clone(),
            ));
            (task, ended)
        });
        // The client's `notifications/cancelled` fires `context.ct`, and with it the call's
        // cancellation token.
        let outcome = loaded
            .engine
            .dispatch_with_cancel(&session, std::slice::from_ref(&call), &context.ct)
            .await;
        if let Some((task, ended)) = forward {
            // The call is over. What waits is at most the notification being sent and the
            // newest update (sent last, so the client sees where the tool got to): the result,
            // or the timeout, follows at once.
            self.shared.progress.unregister(&call_id);
            ended.cancel();
            let _ = task.await;
        }
        let mut result = match outcome {
            Ok(outcomes) => match outcomes.into_iter().next() {
                Some(outcome) => call_result(outcome, &loaded.engine),
                None => return Err(McpError::internal_error("the call had no outcome", None)),
            },
            Err(turn) => error_result(turn.error.kind(), format!("Error: {}", turn.error)),
        };

        if session.state().revealed_count() > found_before {
            if let Err(e) = loaded.sessions.save(&session, &id).await {
                let error = toolgate::error::Chain(&e).to_string();
                tracing::warn!(
                    session = id.as_str(),
                    error = %error,
                    "cannot save the session state"
                );
                // The tools found stay callable through this process; the client is told that
                // another instance, or this one after a restart, will not know them.
                mark_state_not_saved(&mut result, &error);
            }
            if is_sessionless(&context) {
                (self.shared.peers.listeners)
                    .list_changed(Change::Tools, Some(&id))
                    .await;
            } else if let Err(e) = context.peer.notify_tool_list_changed().await {
                tracing::debug!(error = %e, "cannot tell the client its tool list changed");
            }
        }
        Ok(result.into())
    }
}
