//! The way back to the client: what an upstream server sends during a call (requests to the
//! client, progress, log messages) goes to the connection that made the call.
//!
//! - A [`ClientLink`] is one connection (stdio, or one HTTP session), with the log level it
//!   asked for and its log messages on their way.
//! - A [`CallLink`] is one `tools/call` of that connection, entered in [`Links`] under the
//!   engine's call id for as long as the call runs; the upstream side finds it there
//!   ([`Downstream::caller`]).
//! - A request to the client goes out tied to the client's `tools/call` (so over HTTP it rides
//!   that request's response stream, as SEP-2260 asks) after the client's capabilities are
//!   checked; if toolgate stops waiting for it, the client is told it is cancelled.

// Sampling, roots and logging are deprecated by SEP-2577 (the 2026-07-28 revision asks for
// input in results instead), but they are how every revision with sessions works, and this
// passes them on.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::ErrorData;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, GetExtensions, LoggingMessageNotificationParam,
    ProgressNotificationParam, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RoleServer, ServiceError};
use toolgate::tool::BoxFuture;

use super::clients::ClientLink;
use super::peers::Peers;
use super::progress::ProgressRoutes;
use crate::upstream::{Caller, Downstream, ListKind};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain values, valid after any panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One `tools/call` of a client, while it runs.
pub(crate) struct CallLink {
    client: Arc<ClientLink>,
    /// The client's id for its `tools/call`.
    request: RequestId,
    /// The engine's id for the call (progress routes are keyed by it).
    call_id: String,
    progress: Arc<ProgressRoutes>,
}

impl CallLink {
    pub(crate) fn new(
        client: Arc<ClientLink>,
        request: RequestId,
        call_id: String,
        progress: Arc<ProgressRoutes>,
    ) -> Self {
        CallLink {
            client,
            request,
            call_id,
            progress,
        }
    }
}

impl Caller for CallLink {
    fn client(&self) -> u64 {
        self.client.key()
    }

    fn request(
        &self,
        mut request: ServerRequest,
    ) -> BoxFuture<'static, Result<ClientResult, ErrorData>> {
        let refusal = self.client.cannot_take(&request);
        let peer = self.client.peer().clone();
        // Over HTTP this sends it on the response stream of the client's tools/call.
        request
            .extensions_mut()
            .insert(OriginatingRequestId(self.request.clone()));
        Box::pin(async move {
            if let Some(refusal) = refusal {
                return Err(ErrorData::invalid_request(refusal, None));
            }
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(gone)?;
            let mut pending = Pending {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            let answer = handle.await_response().await;
            pending.id = None;
            match answer {
                Ok(answer) => Ok(answer),
                // The client's own refusal goes to the server as it is.
                Err(ServiceError::McpError(error)) => Err(error),
                Err(other) => Err(gone(other)),
            }
        })
    }

    fn progress(&self, progress: &ProgressNotificationParam) {
        self.progress.exact(&self.call_id, progress);
    }

    fn log(&self, message: LoggingMessageNotificationParam) {
        self.client.log(message);
    }
}

fn gone(error: ServiceError) -> ErrorData {
    ErrorData::internal_error(
        format!("the client that made the call could not be asked: {error}"),
        None,
    )
}

/// A request sent to the client and not answered: dropped so (toolgate stopped waiting), it
/// tells the client the request is cancelled.
struct Pending {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let notice = CancelledNotificationParam::new(
                Some(id),
                Some("toolgate stopped waiting for the answer".to_owned()),
            );
            if let Err(e) = peer.notify_cancelled(notice).await {
                tracing::debug!("notifications/cancelled not sent to the client: {e}");
            }
        });
    }
}

/// The calls that run for clients, by the engine's call id, and the connected clients.
pub(crate) struct Links {
    calls: Mutex<HashMap<String, Arc<CallLink>>>,
    peers: Arc<Peers>,
}

/// While alive, the call is found by its id; dropping it ends that.
pub(crate) struct Entered<'a> {
    links: &'a Links,
    call_id: String,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        lock(&self.links.calls).remove(&self.call_id);
    }
}

impl Links {
    pub(crate) fn new(peers: Arc<Peers>) -> Self {
        Links {
            calls: Mutex::new(HashMap::new()),
            peers,
        }
    }

    /// Enters `link` under its call id until the guard is dropped.
    pub(crate) fn enter(&self, link: CallLink) -> Entered<'_> {
        let call_id = link.call_id.clone();
        lock(&self.calls).insert(call_id.clone(), Arc::new(link));
        Entered {
            links: self,
            call_id,
        }
    }
}

impl Downstream for Links {
    fn caller(&self, call_id: &str) -> Option<Arc<dyn Caller>> {
        lock(&self.calls)
            .get(call_id)
            .map(|link| link.clone() as Arc<dyn Caller>)
    }

    fn stray_log(&self, server: &str, message: LoggingMessageNotificationParam) {
        // With one client connected nobody else can see it; with several, it could be any
        // client's business: toolgate's log only.
        match self.peers.only() {
            Some(client) => client.log(message),
            None => tracing::info!(
                server,
                level = ?message.level,
                logger = message.logger.as_deref().unwrap_or(""),
                data = %message.data,
                "log message of an MCP server that belongs to no one client"
            ),
        }
    }

    fn list_changed(&self, server: &str, list: ListKind) {
        tracing::info!(server, ?list, "an upstream MCP server's list changed");
        let peers = Arc::clone(&self.peers);
        tokio::spawn(async move {
            peers.list_changed(list).await;
        });
    }
}
