//! Sessions: an id that flows through every call, and the state a session keeps (the catalog
//! tools it has found, S3). The state lives here, not in the message history, so offloading or
//! compacting the history cannot hide found tools again.
//!
//! A session id is a [`SessionId`] of the result store, which owns the rule (R7): checked once,
//! when the session handle is made, and carried as it is from then on.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use toolgate_store::{IdError, SessionId};

use crate::caller::Caller;

/// What a session remembers.
#[derive(Debug, Default)]
pub struct SessionState {
    visible: Mutex<BTreeSet<String>>,
}

impl SessionState {
    /// Makes catalog tools (by real name) visible for the rest of the session.
    pub fn reveal<I: IntoIterator<Item = String>>(&self, names: I) {
        if let Ok(mut v) = self.visible.lock() {
            v.extend(names);
        }
    }

    /// Whether the catalog tool `name` (a real name) was found in this session.
    pub fn is_revealed(&self, name: &str) -> bool {
        self.visible
            .lock()
            .map(|v| v.contains(name))
            .unwrap_or(false)
    }

    /// The catalog tools found in this session, by real name, sorted.
    pub fn revealed(&self) -> Vec<String> {
        self.visible
            .lock()
            .map(|v| v.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// How many catalog tools were found in this session (without copying their names).
    pub fn revealed_count(&self) -> usize {
        self.visible.lock().map(|v| v.len()).unwrap_or(0)
    }
}

/// A handle to a session; cheap to clone. Get one from [`crate::Engine::session`].
///
/// The handle also says who calls through it ([`Session::caller`]): the local caller unless
/// the host says otherwise with [`Session::with_caller`]. The state is the session's, shared
/// by every handle of its id; the caller is the handle's.
#[derive(Debug, Clone)]
pub struct Session {
    id: Option<SessionId>,
    state: Arc<SessionState>,
    caller: Arc<Caller>,
}

impl Session {
    /// The session's id; `None` for calls without a session.
    pub fn id(&self) -> Option<&SessionId> {
        self.id.as_ref()
    }

    /// This handle with `caller` as the caller of every call made through it: a host that
    /// authenticated the caller (`toolgate serve --http`) says so here.
    pub fn with_caller(mut self, caller: Arc<Caller>) -> Self {
        self.caller = caller;
        self
    }

    /// Who calls through this handle: [`Caller::local`] unless the host set another.
    pub fn caller(&self) -> &Arc<Caller> {
        &self.caller
    }

    /// What the session remembers.
    pub fn state(&self) -> &SessionState {
        &self.state
    }
}

/// Every named session's state, shared by all handles of the same id; calls without a session
/// share one state of their own.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<SessionId, Arc<SessionState>>>,
    anonymous: Arc<SessionState>,
}

impl Sessions {
    /// The session `id`, checked by the store's rule (R7); `None` for calls without a session.
    pub(crate) fn get(&self, id: Option<&str>) -> Result<Session, IdError> {
        let id = id.map(SessionId::parse).transpose()?;
        Ok(self.of(id.as_ref()))
    }

    /// Drops the state of `id`; answers whether there was one.
    pub(crate) fn forget(&self, id: &SessionId) -> bool {
        self.map
            .lock()
            .map(|mut m| m.remove(id).is_some())
            .unwrap_or(false)
    }

    /// The session of an id already checked.
    pub(crate) fn of(&self, id: Option<&SessionId>) -> Session {
        let Some(id) = id else {
            return Session {
                id: None,
                state: self.anonymous.clone(),
                caller: Caller::local(),
            };
        };
        let state = match self.map.lock() {
            Ok(mut m) => m.entry(id.clone()).or_default().clone(),
            Err(_) => Arc::default(),
        };
        Session {
            id: Some(id.clone()),
            state,
            caller: Caller::local(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_checked_by_the_stores_rule() {
        let sessions = Sessions::default();
        for bad in ["", "   ", " padded", "padded\n"] {
            let err = sessions.get(Some(bad)).unwrap_err();
            assert_eq!(Err(err), SessionId::parse(bad).map(|_| ()), "{bad:?}");
        }
        let too_long = "s".repeat(toolgate_store::MAX_SESSION_ID_BYTES + 1);
        assert!(sessions.get(Some(&too_long)).is_err());
    }

    #[test]
    fn handles_of_one_session_id_share_what_the_session_found() {
        let sessions = Sessions::default();
        let first = sessions.get(Some("chat-7")).unwrap();
        first.state().reveal(["fs.read_file".to_string()]);
        let again = sessions.of(first.id());
        assert_eq!(again.id().map(SessionId::as_str), Some("chat-7"));
        assert!(again.state().is_revealed("fs.read_file"));
        assert!(sessions.forget(first.id().unwrap()));
        assert!(!sessions.of(first.id()).state().is_revealed("fs.read_file"));
        assert!(
            !sessions
                .get(None)
                .unwrap()
                .state()
                .is_revealed("fs.read_file")
        );
    }
}
