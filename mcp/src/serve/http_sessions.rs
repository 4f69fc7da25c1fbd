//! MCP sessions of Streamable HTTP kept beside the results, so a request that a load balancer
//! sends to another `serve` instance finds its session there.
//!
//! `rmcp` restores a session it does not know from the `initialize` parameters it kept when the
//! session began; this is where it keeps them: `P/mcp-sessions/HEX...` (the session id
//! hex-encoded, as for session state), one JSON object per session, deleted when the session
//! closes. A record older than the policy's `sessions.ttl` is not brought back, and
//! `results prune` and serve's hourly sweep delete it (see [`toolgate_store::MCP_SESSIONS`]).

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolgate_store::{MCP_SESSIONS, ObjectResultStore, SessionId};

/// rmcp's [`SessionStore`] over the results' backend.
pub(crate) struct McpSessions {
    backend: Arc<dyn ObjectStore>,
    prefix: Path,
    ttl: Option<Duration>,
}

impl McpSessions {
    /// The records beside `results`; one written longer than `ttl` ago is not brought back.
    pub(crate) fn beside(results: &ObjectResultStore, ttl: Option<Duration>) -> Self {
        McpSessions {
            backend: Arc::clone(results.backend()),
            prefix: results.prefix().clone().join(MCP_SESSIONS),
            ttl,
        }
    }

    fn key(&self, session: &str) -> Result<Path, SessionStoreError> {
        let id = SessionId::parse(session)?;
        let mut path = self.prefix.clone();
        for segment in id.key_segments() {
            path = path.join(segment);
        }
        Ok(path.join("init"))
    }
}

#[async_trait::async_trait]
impl SessionStore for McpSessions {
    async fn load(&self, session: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let raw = match self.backend.get(&self.key(session)?).await {
            Ok(got) => {
                let written: SystemTime = got.meta.last_modified.into();
                if self
                    .ttl
                    .is_some_and(|ttl| written.elapsed().is_ok_and(|age| age >= ttl))
                {
                    return Ok(None);
                }
                got.bytes().await?
            }
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(Some(serde_json::from_slice(&raw)?))
    }

    async fn store(&self, session: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let json = serde_json::to_vec(state)?;
        self.backend
            .put(&self.key(session)?, PutPayload::from(json))
            .await?;
        Ok(())
    }

    async fn delete(&self, session: &str) -> Result<(), SessionStoreError> {
        match self.backend.delete(&self.key(session)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
