//! `serve` over stdio: one connection, one session.
//!
//! The engine is built when the client first asks for something it needs; `server/discover`
//! and `ping` before that are answered at once ([`super::probe`]), so a client's throw-away
//! probe of the server starts no plugin and no upstream server.

use std::future::Future;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::service::{QuitReason, ServerInitializeError};
use tokio_util::sync::CancellationToken;
use toolgate_store::SessionId;

use super::error::ServeError;
use super::handler::{Gateway, SessionSource};
use super::probe::{Replayed, answer_probes};
use super::shared::Shared;
use super::stdio_lines::GuardedStdio;
use super::stdio_pipes::{Input, Output};

/// Serves the one client on stdin/stdout until it closes stdin or `shutdown` fires; `start`
/// builds what serves it, when it first asks for something besides a probe.
pub(crate) async fn serve_stdio<S>(
    start: S,
    session: SessionId,
    max_request_bytes: usize,
    shutdown: CancellationToken,
) -> Result<(), ServeError>
where
    S: Future<Output = Result<Arc<Shared>, ServeError>>,
{
    tracing::info!(session = session.as_str(), "serving MCP on stdio");
    let input = Input::stdin();
    tracing::debug!(pipe = input.is_pipe(), "reading requests from stdin");
    let mut transport = GuardedStdio::new(input, Output::stdout(), max_request_bytes);
    let first = tokio::select! {
        first = answer_probes(&mut transport) => first.map_err(|source| ServeError::Io {
            what: "cannot answer the client on stdout",
            source,
        })?,
        () = shutdown.cancelled() => None,
    };
    let Some(first) = first else {
        tracing::info!("the client left before initializing; nothing to serve");
        return Ok(());
    };
    let shared = tokio::select! {
        shared = start => shared?,
        () = shutdown.cancelled() => return Ok(()),
    };
    let gateway = Gateway::new(shared, SessionSource::Fixed(session));
    let running = match gateway
        .serve_with_ct(Replayed::new(first, transport), shutdown)
        .await
    {
        Ok(running) => running,
        // Stdin closed (or a signal came) before `initialize`: the client went away, which
        // ends a stdio server normally, whenever it happens.
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
            tracing::info!("the client left before initializing; nothing to serve");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Handshake(Box::new(e))),
    };
    match running.waiting().await.map_err(ServeError::Connection)? {
        QuitReason::JoinError(e) => Err(ServeError::Connection(e)),
        _ => Ok(()),
    }
}
