//! Sessions: an id that flows through every call, and the state a session keeps (the catalog
//! tools it has found, S3). The state lives here, not in the message history, so offloading or
//! compacting the history cannot hide found tools again.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use thiserror::Error;

/// A session id that breaks the rules.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SessionError {
    #[error("a session id must not be blank")]
    Blank,
    #[error("session id {0:?} has surrounding whitespace")]
    Whitespace(String),
    #[error("a session id must be at most 256 bytes; this one is {0} bytes")]
    TooLong(usize),
}

/// Checks a session id: non-blank, no surrounding whitespace, at most 256 bytes (R7).
pub fn check_session_id(id: &str) -> Result<(), SessionError> {
    if id.trim().is_empty() {
        return Err(SessionError::Blank);
    }
    if id.trim() != id {
        return Err(SessionError::Whitespace(id.to_string()));
    }
    if id.len() > 256 {
        return Err(SessionError::TooLong(id.len()));
    }
    Ok(())
}

/// What a session remembers.
#[derive(Debug, Default)]
pub struct SessionState {
    visible: Mutex<BTreeSet<String>>,
}

impl SessionState {
    /// Makes catalog tools visible for the rest of the session.
    pub fn reveal<I: IntoIterator<Item = String>>(&self, names: I) {
        if let Ok(mut v) = self.visible.lock() {
            v.extend(names);
        }
    }

    pub fn is_revealed(&self, name: &str) -> bool {
        self.visible
            .lock()
            .map(|v| v.contains(name))
            .unwrap_or(false)
    }

    pub fn revealed(&self) -> Vec<String> {
        self.visible
            .lock()
            .map(|v| v.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// A handle to a session; cheap to clone.
#[derive(Debug, Clone)]
pub struct Session {
    id: Option<String>,
    state: Arc<SessionState>,
}

impl Session {
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn state(&self) -> &SessionState {
        &self.state
    }
}

/// Every named session's state, shared by all handles of the same id; calls without a session
/// share one state of their own.
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<SessionState>>>,
    anonymous: Arc<SessionState>,
}

impl Sessions {
    pub fn get(&self, id: Option<&str>) -> Result<Session, SessionError> {
        let Some(id) = id else {
            return Ok(Session {
                id: None,
                state: self.anonymous.clone(),
            });
        };
        check_session_id(id)?;
        let state = match self.map.lock() {
            Ok(mut m) => m.entry(id.to_string()).or_default().clone(),
            Err(_) => Arc::default(),
        };
        Ok(Session {
            id: Some(id.to_string()),
            state,
        })
    }
}
