//! `serve` over stdio: one connection, one session.

use std::sync::Arc;

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;
use toolgate_store::SessionId;

use super::error::ServeError;
use super::handler::{Gateway, SessionSource};
use super::shared::Shared;

/// Serves the one client on stdin/stdout until it closes stdin or `shutdown` fires.
pub(crate) async fn serve_stdio(
    shared: Arc<Shared>,
    session: SessionId,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    tracing::info!(session = session.as_str(), "serving MCP on stdio");
    let gateway = Gateway::new(shared, SessionSource::Fixed(session));
    let running = gateway
        .serve_with_ct(rmcp::transport::stdio(), shutdown)
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    Ok(())
}
