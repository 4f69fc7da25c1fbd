//! What a session keeps, and the trait of the stores that keep it.

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{SessionId, StoreError};

/// What a session keeps between calls and between processes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The real names of the catalog tools the session found; they stay callable and listed.
    pub revealed: BTreeSet<String>,
    /// When the state last changed, in milliseconds since the Unix epoch (0 for a new state).
    pub updated_at_ms: u64,
}

/// A place to keep [`SessionState`], shared by every process that uses it.
///
/// The rules every implementation keeps:
/// - [`reveal`](SessionStore::reveal) only ever adds names: two processes that reveal different
///   names in one session at the same time both find all of them afterwards (no lost update).
/// - A state older than the store's time to live (counted from its last change) is gone:
///   [`load`](SessionStore::load) answers `None` and the next `reveal` starts from empty.
/// - [`delete`](SessionStore::delete) is idempotent.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// The session's state, or `None` when it has none (never saved, expired or deleted).
    async fn load(&self, session: &SessionId) -> Result<Option<SessionState>, StoreError>;

    /// Adds `names` to the session's revealed tools and returns the state as saved. Names the
    /// session already has cost no write.
    async fn reveal(
        &self,
        session: &SessionId,
        names: &BTreeSet<String>,
    ) -> Result<SessionState, StoreError>;

    /// Forgets the session's state; answers whether there was one.
    async fn delete(&self, session: &SessionId) -> Result<bool, StoreError>;

    /// Deletes the state of every session that has expired (its last change is older than the
    /// store's time to live); answers how many sessions lost their state. Expired state is
    /// already invisible to [`load`](SessionStore::load); this frees its space. A session
    /// written to while this runs keeps its new state.
    async fn prune_expired(&self) -> Result<u64, StoreError>;
}
