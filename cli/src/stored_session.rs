//! Named sessions whose state (the catalog tools they found) outlives the process: loaded from
//! the store beside the results before a command runs, saved after it (issue 12, item 3). So
//! `toolgate call --session s1 tool_search ...` and then `toolgate call --session s1 echo ...`
//! works: the second run sees what the first found.

use toolgate::{Engine, Session};
use toolgate_mcp::serve::{ServeError, StoredSessions};
use toolgate_store::{SessionId, StoreError};

use crate::error::CliError;

/// Where results (and so session state) go when the policy names no store: the host's results
/// folder, found (and created) only when needed.
type DefaultUrl = fn() -> Result<String, CliError>;

/// A command's session, and where its state is kept when it has a name.
pub(crate) struct StoredSession {
    session: Session,
    stored: Option<(StoredSessions, SessionId)>,
}

impl StoredSession {
    /// The session `id` of `engine` (none: calls without a session, nothing stored), with what
    /// earlier runs found in it.
    pub(crate) async fn open(
        engine: &Engine,
        id: Option<&str>,
        default_url: DefaultUrl,
    ) -> Result<Self, CliError> {
        let session = engine
            .session(id)
            .map_err(|e| CliError::Usage(format!("--session: {e}")))?;
        let Some(id) = id else {
            return Ok(StoredSession {
                session,
                stored: None,
            });
        };
        let id = SessionId::parse(id).map_err(|e| CliError::Usage(format!("--session: {e}")))?;
        let stored = sessions(engine, default_url)?;
        let session = stored.open(engine, &id).await.map_err(|e| match e {
            ServeError::Store(e) => store_error(e),
            e => CliError::Usage(format!("--session: {e}")),
        })?;
        Ok(StoredSession {
            session,
            stored: Some((stored, id)),
        })
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// Keeps what the session found for the next runs. A store that fails only costs a warning:
    /// the command's own result stands.
    pub(crate) async fn save(&self) {
        if let Some((stored, id)) = &self.stored
            && let Err(e) = stored.save(&self.session, id).await
        {
            tracing::warn!(session = id.as_str(), "cannot save the session state: {e}");
        }
    }
}

/// Forgets the state of session `id` (`results delete --session`); answers whether it had one.
pub(crate) async fn forget(
    engine: &Engine,
    id: &str,
    default_url: DefaultUrl,
) -> Result<bool, CliError> {
    let id = SessionId::parse(id).map_err(|e| CliError::Usage(format!("--session: {e}")))?;
    sessions(engine, default_url)?
        .delete(&id)
        .await
        .map_err(store_error)
}

fn sessions(engine: &Engine, default_url: DefaultUrl) -> Result<StoredSessions, CliError> {
    let policy = engine.policy();
    let default_url = match policy.reduction.as_ref().and_then(|r| r.store.as_ref()) {
        Some(_) => None,
        None => Some(default_url()?),
    };
    StoredSessions::for_policy(policy, default_url.as_deref()).map_err(store_error)
}

fn store_error(e: StoreError) -> CliError {
    CliError::Store(format!("session state: {e}"))
}
