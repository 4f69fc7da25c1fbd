//! Named sessions whose state (the catalog tools they found) outlives the process: loaded from
//! the store beside the results before a command runs, saved after it (issue 12, item 3). So
//! `toolgate call --session s1 tool_search ...` and then `toolgate call --session s1 echo ...`
//! works: the second run sees what the first found.

use toolgate::store::SessionId;
use toolgate::{Engine, Session};
use toolgate_mcp::serve::{ServeError, StoredSessions};

use crate::app::default_store_url;
use crate::error::CliError;

/// A command's session, and where its state is kept when it has a name.
pub struct StoredSession {
    session: Session,
    stored: Option<(StoredSessions, SessionId)>,
}

impl StoredSession {
    /// The session `id` of `engine` (none: calls without a session, nothing stored), with what
    /// earlier runs found in it.
    pub async fn open(engine: &Engine, id: Option<&str>) -> Result<Self, CliError> {
        let Some(id) = id else {
            return Ok(StoredSession {
                session: engine.session(None).map_err(CliError::SessionId)?,
                stored: None,
            });
        };
        let id = SessionId::parse(id).map_err(CliError::SessionId)?;
        let stored = sessions(engine)?;
        let session = stored.open(engine, &id).await.map_err(|e| match e {
            ServeError::Store(e) => CliError::Store(e),
            ServeError::Session(e) => CliError::SessionId(e),
            e => CliError::Serve(Box::new(e)),
        })?;
        Ok(StoredSession {
            session,
            stored: Some((stored, id)),
        })
    }

    /// The session to run calls in.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Keeps what the session found for the next runs. A store that fails only costs a warning:
    /// the command's own result stands.
    pub async fn save(&self) {
        if let Some((stored, id)) = &self.stored
            && let Err(e) = stored.save(&self.session, id).await
        {
            tracing::warn!(
                session = id.as_str(),
                "cannot save the session state: {}",
                toolgate::error::Chain(&e)
            );
        }
    }
}

/// Forgets the state of session `id` (`results delete --session`); answers whether it had one.
pub async fn forget(engine: &Engine, id: &str) -> Result<bool, CliError> {
    let id = SessionId::parse(id).map_err(CliError::SessionId)?;
    sessions(engine)?.delete(&id).await.map_err(CliError::Store)
}

/// Deletes the state of every session past the policy's `sessions.ttl` (`results prune`);
/// answers how many sessions lost theirs.
pub async fn prune_expired(engine: &Engine) -> Result<u64, CliError> {
    sessions(engine)?
        .prune_expired()
        .await
        .map_err(CliError::Store)
}

/// The session store of the engine's policy: beside the results (`reduction.store`, else the
/// results folder).
fn sessions(engine: &Engine) -> Result<StoredSessions, CliError> {
    let policy = engine.policy();
    let default_url = match policy.reduction.as_ref().and_then(|r| r.store.as_ref()) {
        Some(_) => None,
        None => Some(default_store_url()?),
    };
    StoredSessions::for_policy(policy, default_url.as_deref()).map_err(CliError::Store)
}
