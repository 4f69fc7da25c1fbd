//! `serve` over stdio: one connection, one session.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::service::{QuitReason, ServerInitializeError};
use tokio_util::sync::CancellationToken;
use toolgate_store::SessionId;

use super::error::ServeError;
use super::handler::{Gateway, SessionSource};
use super::shared::Shared;
use super::stdio_lines::GuardedStdio;

/// Serves the one client on stdin/stdout until it closes stdin or `shutdown` fires.
pub(crate) async fn serve_stdio(
    shared: Arc<Shared>,
    session: SessionId,
    max_request_bytes: usize,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    tracing::info!(session = session.as_str(), "serving MCP on stdio");
    let gateway = Gateway::new(shared, SessionSource::Fixed(session));
    let running = match gateway
        .serve_with_ct(
            GuardedStdio::new(tokio::io::stdin(), tokio::io::stdout(), max_request_bytes),
            shutdown,
        )
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
