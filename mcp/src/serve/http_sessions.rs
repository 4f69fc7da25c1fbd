//! MCP sessions of Streamable HTTP kept beside the results, so a request that a load balancer
//! sends to another `serve` instance finds its session there.
//!
//! `rmcp` restores a session it does not know from the `initialize` parameters it kept when the
//! session began; this is where it keeps them: `P/mcp-sessions/HEX...` (the session id
//! hex-encoded, as for session state), one JSON object per session, deleted when the session
//! closes. A record older than the policy's `sessions.ttl` is not brought back, and
//! `results prune` and serve's hourly sweep delete it (see [`toolgate_store::MCP_SESSIONS`]).
//!
//! Beside it, `P/mcp-sessions/HEX.../owner` names the principal that opened the session
//! (`{"principal": "alice"}`, C7), written before the `initialize` is answered: every instance
//! refuses the session to another principal, whichever instance it was opened on. It expires
//! and is deleted with the session's record.

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
        Ok(self.dir(session)?.join("init"))
    }

    fn owner_key(&self, session: &str) -> Result<Path, SessionStoreError> {
        Ok(self.dir(session)?.join("owner"))
    }

    fn dir(&self, session: &str) -> Result<Path, SessionStoreError> {
        let id = SessionId::parse(session)?;
        let mut path = self.prefix.clone();
        for segment in id.key_segments() {
            path = path.join(segment);
        }
        Ok(path)
    }

    /// The record at `key`, unless it is missing or older than the time to live.
    async fn fresh(&self, key: &Path) -> Result<Option<bytes::Bytes>, SessionStoreError> {
        match self.backend.get(key).await {
            Ok(got) => {
                let written: SystemTime = got.meta.last_modified.into();
                if self
                    .ttl
                    .is_some_and(|ttl| written.elapsed().is_ok_and(|age| age >= ttl))
                {
                    return Ok(None);
                }
                Ok(Some(got.bytes().await?))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The principal that opened `session`, as [`McpSessions::set_owner`] stored it; `None`
    /// when none is stored (no such session, one that expired, or one opened before owners
    /// were stored).
    pub(crate) async fn owner(&self, session: &str) -> Result<Option<String>, SessionStoreError> {
        // An id no session can have (the store's rule, R7) has no owner: rmcp answers it.
        let Ok(key) = self.owner_key(session) else {
            return Ok(None);
        };
        let Some(raw) = self.fresh(&key).await? else {
            return Ok(None);
        };
        let record: OwnerRecord = serde_json::from_slice(&raw)?;
        Ok(Some(record.principal))
    }

    /// Stores that `principal` opened `session`.
    pub(crate) async fn set_owner(
        &self,
        session: &str,
        principal: &str,
    ) -> Result<(), SessionStoreError> {
        let json = serde_json::to_vec(&OwnerRecord {
            principal: principal.to_owned(),
        })?;
        self.backend
            .put(&self.owner_key(session)?, PutPayload::from(json))
            .await?;
        Ok(())
    }
}

/// `P/mcp-sessions/HEX.../owner`.
#[derive(serde::Serialize, serde::Deserialize)]
struct OwnerRecord {
    principal: String,
}

#[async_trait::async_trait]
impl SessionStore for McpSessions {
    async fn load(&self, session: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(raw) = self.fresh(&self.key(session)?).await? else {
            return Ok(None);
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
        for key in [self.key(session)?, self.owner_key(session)?] {
            match self.backend.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
