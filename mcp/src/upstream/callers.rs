//! The clients behind the calls: how what an upstream server sends during a call (sampling,
//! elicitation and roots requests, progress, log messages) reaches the client that made it.
//!
//! The upstream side knows nothing of how clients are served. A host that serves clients
//! (`toolgate serve`) hands [`Upstreams`](super::Upstreams) a [`Downstream`]: for each call the
//! engine runs, it names the [`Caller`], the client connection waiting for it. A host without
//! clients (`toolgate call`) hands none, and a server's requests are answered with an error.
// Sampling, roots and logging are deprecated by SEP-2577 (the 2026-07-28 revision asks for
// input in results instead), but they are how every revision with sessions works, and this
// passes them on.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    ClientResult, LoggingMessageNotificationParam, ProgressNotificationParam, ServerRequest,
};
use toolgate::tool::BoxFuture;

/// The client connection that made a call.
pub(crate) trait Caller: Send + Sync {
    /// Which connection: two callers with the same number are the same client.
    fn client(&self) -> u64;

    /// Sends `request` (`sampling/createMessage`, `elicitation/create`, `roots/list`) to the
    /// client and answers what it answered. Fails, as the JSON-RPC error the server is to
    /// get, when the client did not declare the capability or is gone. Dropping the future
    /// before it resolves (a timeout, the call ended) tells the client the request is
    /// cancelled.
    fn request(
        &self,
        request: ServerRequest,
    ) -> BoxFuture<'static, Result<ClientResult, ErrorData>>;

    /// Progress of the call, with its numbers and message as the server sent them. Never
    /// waits: the host keeps the newest and sends it when the client can take it.
    fn progress(&self, progress: &ProgressNotificationParam);

    /// A log message the server sent during the call. Never waits.
    fn log(&self, message: LoggingMessageNotificationParam);
}

/// The lists other than tools a server may say have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// `notifications/resources/list_changed`.
    Resources,
    /// `notifications/prompts/list_changed`.
    Prompts,
}

/// The host side: who made each call, and where what belongs to no call goes.
pub(crate) trait Downstream: Send + Sync {
    /// The client waiting for the call `call_id` (the engine's call id), if the host made it
    /// for one.
    fn caller(&self, call_id: &str) -> Option<Arc<dyn Caller>>;

    /// A log message of `server` that belongs to no client: it came while no call of the
    /// server ran, or while calls of several clients ran. Never waits.
    fn stray_log(&self, server: &str, message: LoggingMessageNotificationParam);

    /// `server` said its `list` changed. Never waits.
    fn list_changed(&self, server: &str, list: ListKind);
}
