//! [`ObjectSessionStore`]: session state over any `object_store` backend.
//!
//! # Layout
//!
//! Under the store's prefix `P` (the result store's, so one URL says where both live), a session's
//! state is a series of versions:
//!
//! | key | content |
//! |---|---|
//! | `P/sessions/HEX.../state/SEQ` | the JSON record: the session id, its [`SessionState`] |
//!
//! | `P/mcp-sessions/HEX.../init` | what `serve` over HTTP needs to bring the MCP session back in another process ([`MCP_SESSIONS`]) |
//!
//! `HEX...` is the session id hex-encoded ([`SessionId::key_segments`]), so no session id reaches
//! outside its directory; `SEQ` is the version, 20 decimal digits, so names sort as numbers.
//!
//! # Updates without lost writes
//!
//! A writer reads the newest version `N`, adds its names, and writes version `N + 1` with
//! [`PutMode::Create`]. Of two writers that read the same `N`, only one can create `N + 1`; the
//! other is refused, reads again (now seeing the winner's names) and tries `N + 2`. Create-only
//! puts are what every backend offers alike (S3 with `If-None-Match`, local disk with a hard link,
//! memory); `object_store`'s local disk has no compare-and-swap update of one key
//! (`PutMode::Update` is not implemented there), so a series of versions is the one layout that
//! works the same on disk and on S3. After a write, versions older than the one it replaced are
//! deleted; a reader that listed a version just deleted lists again. A writer so slow that the
//! version it creates had already been written and deleted finds a newer version when it lists
//! after its write, and starts over from that one: the newest version always grew out of the one
//! before it, so no name that reached the newest version is ever lost.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use super::state::{SessionState, SessionStore};
use crate::{Corruption, ObjectResultStore, SessionId, StoreError};

/// The folder under the store's prefix where `toolgate serve` over HTTP keeps, per MCP session,
/// what it needs to bring the session back in another process (`HEX.../init`, written when the
/// session begins). Such a record expires with the store's time to live counted from when it
/// was written, and [`SessionStore::prune_expired`] deletes it with the expired states.
pub const MCP_SESSIONS: &str = "mcp-sessions";

/// The version of the JSON record this code writes and understands.
const RECORD_VERSION: u32 = 1;

/// How many times a writer reads again after another writer won the race for a version, or a
/// reader lists again after the version it found was deleted, before giving up.
const ATTEMPTS: usize = 32;

/// The JSON record at `P/sessions/HEX.../state/SEQ`.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    version: u32,
    session: SessionId,
    #[serde(flatten)]
    state: SessionState,
}

/// A [`SessionStore`] over any [`ObjectStore`]; see the module docs for the layout.
///
/// Cloning is cheap and clones share the backend. Any number of instances, in one process or
/// many, may use the same backend and prefix at once.
#[derive(Debug, Clone)]
pub struct ObjectSessionStore {
    backend: Arc<dyn ObjectStore>,
    prefix: Path,
    ttl: Option<Duration>,
}

impl ObjectSessionStore {
    /// A store over `backend`, keeping states under `prefix/sessions/`; a state expires `ttl`
    /// after its last change (`None`: never).
    pub fn new(backend: Arc<dyn ObjectStore>, prefix: Path, ttl: Option<Duration>) -> Self {
        ObjectSessionStore {
            backend,
            prefix,
            ttl,
        }
    }

    /// A store beside `results`: the same backend and prefix, so one URL (the policy's
    /// `reduction.store`, or the host's results folder) says where both live.
    pub fn beside(results: &ObjectResultStore, ttl: Option<Duration>) -> Self {
        Self::new(results.backend().clone(), results.prefix().clone(), ttl)
    }

    /// A fresh, empty store in memory.
    pub fn in_memory(ttl: Option<Duration>) -> Self {
        Self::new(Arc::new(InMemory::new()), Path::default(), ttl)
    }

    fn dir(&self, session: &SessionId) -> Path {
        let mut path = self.prefix.clone().join("sessions");
        for segment in session.key_segments() {
            path = path.join(segment);
        }
        path.join("state")
    }

    /// Every version of the session's state, oldest first.
    async fn versions(&self, session: &SessionId) -> Result<Vec<(u64, Path)>, StoreError> {
        let objects: Vec<_> = self
            .backend
            .list(Some(&self.dir(session)))
            .try_collect()
            .await
            .map_err(backend("list the session state"))?;
        let mut versions: Vec<(u64, Path)> = objects
            .into_iter()
            .filter_map(|o| Some((o.location.filename()?.parse().ok()?, o.location)))
            .collect();
        versions.sort_unstable_by_key(|(seq, _)| *seq);
        Ok(versions)
    }

    /// The newest version and its state (expired or not), or `None` when there is none.
    async fn newest(&self, session: &SessionId) -> Result<Option<(u64, SessionState)>, StoreError> {
        for _ in 0..ATTEMPTS {
            let Some((seq, path)) = self.versions(session).await?.pop() else {
                return Ok(None);
            };
            let raw = match self.backend.get(&path).await {
                Ok(got) => got.bytes().await,
                Err(e) => Err(e),
            };
            match raw {
                Ok(raw) => return Ok(Some((seq, decode(session, &raw)?))),
                // A writer deleted it after writing a newer one: list again.
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(backend("read the session state")(e)),
            }
        }
        Err(gave_up("read the session state"))
    }

    fn expired(&self, state: &SessionState, now: u64) -> bool {
        self.ttl.is_some_and(|ttl| {
            let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
            state.updated_at_ms.saturating_add(ttl) <= now
        })
    }

    async fn delete_paths(&self, paths: Vec<Path>) -> Result<(), StoreError> {
        let stream = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
        let mut results = self.backend.delete_stream(stream);
        while let Some(r) = results.next().await {
            match r {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(backend("delete the session state")(e)),
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SessionStore for ObjectSessionStore {
    async fn load(&self, session: &SessionId) -> Result<Option<SessionState>, StoreError> {
        Ok(self
            .newest(session)
            .await?
            .map(|(_, state)| state)
            .filter(|state| !self.expired(state, now_ms())))
    }

    async fn reveal(
        &self,
        session: &SessionId,
        names: &BTreeSet<String>,
    ) -> Result<SessionState, StoreError> {
        for _ in 0..ATTEMPTS {
            let now = now_ms();
            let (seq, current) = match self.newest(session).await? {
                Some((seq, state)) if !self.expired(&state, now) => (seq, state),
                Some((seq, _expired)) => (seq, SessionState::default()),
                None => (0, SessionState::default()),
            };
            if names.is_subset(&current.revealed) {
                return Ok(current);
            }
            let mut next = current;
            next.revealed.extend(names.iter().cloned());
            next.updated_at_ms = now.max(next.updated_at_ms);
            let record = Record {
                version: RECORD_VERSION,
                session: session.clone(),
                state: next,
            };
            let json = serde_json::to_vec(&record).map_err(|e| StoreError::Backend {
                op: "encode the session state",
                error: Box::new(e),
            })?;
            let path = self.dir(session).join(format!("{:020}", seq + 1));
            match self
                .backend
                .put_opts(
                    &path,
                    PutPayload::from(json),
                    PutOptions::from(PutMode::Create),
                )
                .await
            {
                Ok(_) => {
                    let versions = self.versions(session).await?;
                    if versions.last().is_some_and(|(newest, _)| *newest > seq + 1) {
                        // A stale write: the version we created had been deleted after newer ones
                        // were written, so ours is not the newest. Read the newest and try again
                        // (it ends at once if the newest already has our names).
                        continue;
                    }
                    // Keep the version just replaced for readers that listed it a moment ago;
                    // a failed delete only leaves garbage for the next write.
                    let doomed = versions
                        .into_iter()
                        .filter(|(version, _)| *version < seq)
                        .map(|(_, path)| path)
                        .collect();
                    let _ = self.delete_paths(doomed).await;
                    return Ok(record.state);
                }
                // Another writer created this version first: read it and try the next one.
                Err(object_store::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(backend("save the session state")(e)),
            }
        }
        Err(gave_up("save the session state"))
    }

    async fn delete(&self, session: &SessionId) -> Result<bool, StoreError> {
        let versions = self.versions(session).await?;
        let existed = !versions.is_empty();
        self.delete_paths(versions.into_iter().map(|(_, path)| path).collect())
            .await?;
        Ok(existed)
    }

    async fn prune_expired(&self) -> Result<u64, StoreError> {
        if self.ttl.is_none() {
            return Ok(0);
        }
        let mut pruned = self.prune_states().await?;
        pruned.extend(self.prune_mcp_sessions().await?);
        Ok(u64::try_from(pruned.len()).unwrap_or(u64::MAX))
    }
}

impl ObjectSessionStore {
    /// Deletes every expired state; answers the sessions (their `HEX...` key) that lost one.
    async fn prune_states(&self) -> Result<BTreeSet<String>, StoreError> {
        // Every version of every session, grouped by the session's `state/` folder.
        let objects: Vec<_> = self
            .backend
            .list(Some(&self.prefix.clone().join("sessions")))
            .try_collect()
            .await
            .map_err(backend("list the session states"))?;
        let mut sessions: BTreeMap<String, Vec<(u64, Path)>> = BTreeMap::new();
        for object in objects {
            let Some(seq) = object.location.filename().and_then(|f| f.parse().ok()) else {
                continue;
            };
            let parts: Vec<_> = object.location.parts().collect();
            let dir: String = parts[..parts.len().saturating_sub(1)]
                .iter()
                .map(|p| p.as_ref())
                .collect::<Vec<_>>()
                .join("/");
            sessions
                .entry(dir)
                .or_default()
                .push((seq, object.location));
        }
        let now = now_ms();
        let mut pruned = BTreeSet::new();
        for (dir, mut versions) in sessions {
            versions.sort_unstable_by_key(|(seq, _)| *seq);
            let Some((_, newest)) = versions.last() else {
                continue;
            };
            let raw = match self.backend.get(newest).await {
                Ok(got) => got.bytes().await,
                Err(e) => Err(e),
            };
            let record: Record = match raw {
                Ok(raw) => match serde_json::from_slice(&raw) {
                    Ok(record) => record,
                    // Not ours to judge: `load` reports it as corrupt, `delete` removes it.
                    Err(_) => continue,
                },
                // A writer replaced it meanwhile: the session is alive.
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(backend("read the session state")(e)),
            };
            if self.expired(&record.state, now) {
                // Only the versions listed: one a writer creates meanwhile is newer and stays.
                self.delete_paths(versions.into_iter().map(|(_, path)| path).collect())
                    .await?;
                // `P/sessions/HEX.../state`: the session's key is what is between.
                let base = self.prefix.clone().join("sessions");
                let key = dir
                    .strip_prefix(base.as_ref())
                    .and_then(|rest| rest.strip_suffix("/state"))
                    .unwrap_or(&dir);
                pruned.insert(key.trim_start_matches('/').to_owned());
            }
        }
        Ok(pruned)
    }

    /// Deletes every MCP session record ([`MCP_SESSIONS`]) written longer than the time to live
    /// ago; answers the sessions (their `HEX...` key) that lost one.
    async fn prune_mcp_sessions(&self) -> Result<BTreeSet<String>, StoreError> {
        let Some(ttl) = self.ttl else {
            return Ok(BTreeSet::new());
        };
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let base = self.prefix.clone().join(MCP_SESSIONS);
        let objects: Vec<_> = self
            .backend
            .list(Some(&base))
            .try_collect()
            .await
            .map_err(backend("list the MCP sessions"))?;
        let now = now_ms();
        let mut doomed = Vec::new();
        let mut pruned = BTreeSet::new();
        for object in objects {
            let written = u64::try_from(object.last_modified.timestamp_millis()).unwrap_or(0);
            if written.saturating_add(ttl) > now {
                continue;
            }
            let key: Vec<String> = object
                .location
                .prefix_match(&base)
                .map(|parts| parts.map(|p| p.as_ref().to_owned()).collect())
                .unwrap_or_default();
            if let Some((_init, hex)) = key.split_last() {
                pruned.insert(hex.join("/"));
            }
            doomed.push(object.location);
        }
        self.delete_paths(doomed).await?;
        Ok(pruned)
    }
}

fn decode(session: &SessionId, raw: &[u8]) -> Result<SessionState, StoreError> {
    let record: Record = serde_json::from_slice(raw).map_err(|error| StoreError::Corrupt {
        id: None,
        what: Corruption::SessionUnparsable {
            session: session.clone(),
            error,
        },
    })?;
    if record.version != RECORD_VERSION || &record.session != session {
        return Err(StoreError::Corrupt {
            id: None,
            what: Corruption::SessionRecordMismatch {
                session: session.clone(),
                version: record.version,
                found: record.session,
            },
        });
    }
    Ok(record.state)
}

fn backend(op: &'static str) -> impl Fn(object_store::Error) -> StoreError {
    move |e| StoreError::Backend {
        op,
        error: Box::new(e),
    }
}

fn gave_up(op: &'static str) -> StoreError {
    StoreError::Backend {
        op,
        error: format!("{ATTEMPTS} attempts in a row raced with other writers").into(),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
