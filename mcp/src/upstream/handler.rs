//! What toolgate does with what an upstream server sends on its own: progress of a call goes
//! to that call's progress (an `update` event) and to the client that made the call, with its
//! numbers as sent; log messages go to the client whose call they belong to (both as they are
//! read, see [`ordered`](super::ordered)); requests to the
//! client (sampling, elicitation, roots) are refused or passed on as the policy says (see
//! [`client_requests`](super::client_requests)); `notifications/tools/list_changed` wakes the
//! server's supervisor to fetch the new list, and the other lists' changes go to the clients.
// Sampling, roots and logging are deprecated by SEP-2577 (the 2026-07-28 revision asks for
// input in results instead), but they are how every revision with sessions works, and this
// passes them on.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientConfig, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, Implementation,
    ListRootsRequest, ListRootsResult, ProgressNotificationParam, ProgressToken, RequestId,
    ResourceUpdatedNotificationParam, ServerNotification, ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::Notify;
use toolgate::tool::{ToolContext, ToolError};

use super::callers::{Downstream, ListKind};
use super::client_requests::{self, Capabilities, Permissions};
use super::inflight::{Attribution, InFlight};
use super::turns::{Turn, Turns};
use super::watch::Watch;

/// The client side of one server's connections (one handler serves every restart).
#[derive(Clone)]
pub(crate) struct Handler {
    shared: Arc<Shared>,
}

struct Shared {
    server: String,
    permissions: Permissions,
    /// Clients take turns on the server (see [`turns`](super::turns)), when it is a `command`
    /// server that may ask the client something.
    turns: Option<Arc<Turns>>,
    /// Who made the calls, when the host serves clients.
    downstream: Option<Arc<dyn Downstream>>,
    /// Calls in flight.
    calls: InFlight,
    list_changed: Notify,
    /// Subscriptions, resource updates and resource or prompt list changes.
    watch: Watch,
}

/// While alive, what the server sends about one call goes to that call; dropping it stops
/// that (and ends the call's part of its client's turn).
pub(crate) struct Tracked {
    shared: Arc<Shared>,
    seq: u64,
    _turn: Option<Turn>,
}

impl Tracked {
    /// The call went out as request `id` with progress `token`.
    pub(crate) fn sent(&self, id: RequestId, token: ProgressToken) {
        self.shared.calls.sent(self.seq, id, token);
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.shared.calls.leave(self.seq);
    }
}

impl Handler {
    /// The handler of the server `server`; `by_turns`: its requests to the client name no
    /// call (a `command` server), so when it may ask anything its clients take turns.
    pub(crate) fn new(
        server: &str,
        permissions: Permissions,
        by_turns: bool,
        downstream: Option<Arc<dyn Downstream>>,
    ) -> Handler {
        let asks = permissions.any();
        Handler {
            shared: Arc::new(Shared {
                server: server.to_owned(),
                turns: (by_turns && asks && downstream.is_some()).then(Arc::default),
                permissions,
                downstream,
                calls: InFlight::default(),
                list_changed: Notify::new(),
                watch: Watch::default(),
            }),
        }
    }

    /// Enters the call of `ctx`, about to be sent, until the guard is dropped (see
    /// [`Tracked::sent`]); first waits for its client's turn when clients take turns. Fails
    /// when the call is cancelled while it waits.
    pub(crate) async fn track(&self, ctx: ToolContext) -> Result<Tracked, ToolError> {
        let caller = self
            .shared
            .downstream
            .as_ref()
            .and_then(|d| d.caller(&ctx.call_id));
        let turn = match (&self.shared.turns, &caller) {
            (Some(turns), Some(caller)) => match turns.take(caller.client(), &ctx.cancel).await {
                Some(turn) => Some(turn),
                None => {
                    return Err(ToolError::coded(
                        "cancelled",
                        format!(
                            "the call was cancelled while it waited for the calls of other clients on the MCP server {} to end",
                            self.shared.server
                        ),
                    ));
                }
            },
            _ => None,
        };
        Ok(Tracked {
            seq: self.shared.calls.enter(ctx, caller),
            shared: self.shared.clone(),
            _turn: turn,
        })
    }

    /// What is watched on the server besides its tools.
    pub(crate) fn watch(&self) -> &Watch {
        &self.shared.watch
    }

    /// The server said its tool list changed (on 2026-07-28, on its listen stream).
    pub(crate) fn tools_changed(&self) {
        self.shared.list_changed.notify_one();
    }

    /// Resolves when the server said its tool list changed (once per notice; a notice that
    /// came while nobody waited is kept).
    pub(crate) async fn list_changed(&self) {
        self.shared.list_changed.notified().await;
    }

    async fn forward(
        &self,
        request: ServerRequest,
        context: &RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        let shared = &self.shared;
        client_requests::forward(
            &shared.server,
            &shared.permissions,
            &shared.calls,
            request,
            context,
        )
        .await
    }

    /// A notification of the server as it is read, in order (see [`ordered`](super::ordered)):
    /// progress goes to its call (the client first, with the numbers as sent; then the call's
    /// `update` event), a log message to the client whose call it belongs to. Never waits.
    pub(crate) fn observe(&self, notification: &ServerNotification) {
        match notification {
            ServerNotification::ProgressNotification(progress) => {
                let params = &progress.params;
                if let Some((ctx, caller)) = self.shared.calls.by_progress(&params.progress_token) {
                    if let Some(caller) = caller {
                        caller.progress(params);
                    }
                    ctx.progress(&progress_text(params));
                }
            }
            ServerNotification::LoggingMessageNotification(log) => {
                // Notifications carry no stream association: who is waiting decides.
                match self.shared.calls.attribute(None) {
                    Attribution::Call { caller, .. } => caller.log(log.params.clone()),
                    _ => {
                        if let Some(downstream) = &self.shared.downstream {
                            downstream.stray_log(&self.shared.server, log.params.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The server's resources and prompts have been listed again after it said they changed:
    /// the clients hear of the lists it said changed.
    pub(crate) fn offered_refreshed(&self) {
        let (resources, prompts) = self.shared.watch.take_announced();
        if resources {
            self.list_changed_downstream(ListKind::Resources);
        }
        if prompts {
            self.list_changed_downstream(ListKind::Prompts);
        }
    }

    fn list_changed_downstream(&self, list: ListKind) {
        if let Some(downstream) = &self.shared.downstream {
            downstream.list_changed(&self.shared.server, list);
        }
    }
}

/// An answer of the client that is not of the kind asked for.
fn mismatched(method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the client answered {method} with something else"),
        None,
    )
}

/// The text of a progress notification: `3/10: message`, `3: message`, `message`.
pub(crate) fn progress_text(p: &ProgressNotificationParam) -> String {
    let amount = match p.total {
        Some(total) => format!("{}/{}", p.progress, total),
        None => p.progress.to_string(),
    };
    match &p.message {
        Some(m) if !m.is_empty() => format!("{amount}: {m}"),
        _ => amount,
    }
}

impl ClientHandler for Handler {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.forward(request, &context).await? {
            ClientResult::CreateMessageResult(result) => Ok(*result),
            _ => Err(mismatched("sampling/createMessage")),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        match self.forward(request, &context).await? {
            ClientResult::ElicitResult(result) => Ok(result),
            _ => Err(mismatched("elicitation/create")),
        }
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        match self.forward(request, &context).await? {
            ClientResult::ListRootsResult(result) => Ok(result),
            _ => Err(mismatched("roots/list")),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.shared.server, "the MCP server says its tool list changed");
        self.tools_changed();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.shared.watch.updated(&params.uri);
    }

    // The lists are fetched again first (see `offered_refreshed`): a client that lists them
    // when it hears of the change sees the new ones.
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.watch.offered_changed(true, false);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.watch.offered_changed(false, true);
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new("toolgate", env!("CARGO_PKG_VERSION"));
        config.capabilities = self.shared.permissions.capabilities();
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> ProgressNotificationParam {
        let mut p = ProgressNotificationParam::new(
            ProgressToken(rmcp::model::NumberOrString::Number(1)),
            progress,
        );
        p.total = total;
        p.message = message.map(str::to_owned);
        p
    }

    #[test]
    fn progress_reads_as_amount_of_total_and_message() {
        assert_eq!(
            progress_text(&progress(3.0, Some(10.0), Some("copying"))),
            "3/10: copying"
        );
        assert_eq!(progress_text(&progress(0.5, None, None)), "0.5");
    }
}
