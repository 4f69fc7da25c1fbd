//! Session state kept in a store, for every host that runs calls in a named session: the CLI
//! (`toolgate call --session s1`) and `serve`.
//!
//! The engine keeps a session's state (the catalog tools it found) in memory, per engine. A
//! [`StoredSessions`] copies it from and to a [`SessionStore`] beside the results, so that a
//! second process, a reloaded engine or another `serve` instance sees what the session found:
//! [`open`](StoredSessions::open) before the calls, [`save`](StoredSessions::save) after them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use toolgate::{Engine, Policy, Session};
use toolgate_store::{ObjectResultStore, ObjectSessionStore, SessionId, SessionStore, StoreError};

use super::error::ServeError;

/// Where a policy's sessions are kept, and how to move their state in and out of an engine.
#[derive(Clone)]
pub struct StoredSessions {
    store: Arc<dyn SessionStore>,
    /// The result store whose backend the state lives in, when it was opened from a URL.
    results: Option<ObjectResultStore>,
    /// What the store was opened from: a reload that keeps it keeps the same store (a
    /// `memory://` store must not be replaced by an empty one).
    origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    url: String,
    options: BTreeMap<String, String>,
    ttl: Option<Duration>,
}

impl std::fmt::Debug for StoredSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSessions")
            .field("url", &self.origin.url)
            .field("ttl", &self.origin.ttl)
            .finish()
    }
}

impl StoredSessions {
    /// The sessions of `policy`: beside its results (`reduction.store` with its options, else
    /// `default_url`, the host's results folder, else memory), expiring after `sessions.ttl`.
    pub fn for_policy(policy: &Policy, default_url: Option<&str>) -> Result<Self, StoreError> {
        Self::open_origin(Self::origin(policy, default_url))
    }

    /// Like [`for_policy`](Self::for_policy), but keeps `previous`'s backend when the policy
    /// still names the same store (a `memory://` store must not be replaced by an empty one); a
    /// new `sessions.ttl` applies either way.
    pub(crate) fn for_reloaded_policy(
        policy: &Policy,
        default_url: Option<&str>,
        previous: &StoredSessions,
    ) -> Result<Self, StoreError> {
        let origin = Self::origin(policy, default_url);
        match &previous.results {
            Some(results)
                if origin.url == previous.origin.url
                    && origin.options == previous.origin.options =>
            {
                Ok(StoredSessions {
                    store: Arc::new(ObjectSessionStore::beside(results, origin.ttl)),
                    results: Some(results.clone()),
                    origin,
                })
            }
            _ => Self::open_origin(origin),
        }
    }

    /// Sessions in a store of the caller's choosing.
    pub fn with_store(store: Arc<dyn SessionStore>) -> Self {
        StoredSessions {
            store,
            results: None,
            origin: Origin {
                url: String::new(),
                options: BTreeMap::new(),
                ttl: None,
            },
        }
    }

    fn origin(policy: &Policy, default_url: Option<&str>) -> Origin {
        let reduction = policy.reduction.as_ref();
        Origin {
            url: reduction
                .and_then(|r| r.store.as_deref())
                .or(default_url)
                .unwrap_or("memory://")
                .to_owned(),
            options: reduction
                .map(|r| r.store_options.clone())
                .unwrap_or_default(),
            ttl: policy.sessions.ttl,
        }
    }

    fn open_origin(origin: Origin) -> Result<Self, StoreError> {
        let results = ObjectResultStore::from_url_opts(&origin.url, &origin.options)?;
        Ok(StoredSessions {
            store: Arc::new(ObjectSessionStore::beside(&results, origin.ttl)),
            results: Some(results),
            origin,
        })
    }

    /// Deletes the state of every session past the policy's `sessions.ttl`; answers how many.
    pub async fn prune_expired(&self) -> Result<u64, StoreError> {
        self.store.prune_expired().await
    }

    /// How long a session's state lives after its last change (`None`: until deleted).
    pub(crate) fn ttl(&self) -> Option<Duration> {
        self.origin.ttl
    }

    /// The result store the state lives beside, when it was opened from a URL.
    pub(crate) fn results(&self) -> Option<&ObjectResultStore> {
        self.results.as_ref()
    }

    /// The session `id` of `engine`, with what the store knows it found.
    pub async fn open(&self, engine: &Engine, id: &SessionId) -> Result<Session, ServeError> {
        let session = engine.session(Some(id.as_str()))?;
        self.refresh(&session, id).await?;
        Ok(session)
    }

    /// Adds what the store knows the session found to `session`.
    pub(crate) async fn refresh(
        &self,
        session: &Session,
        id: &SessionId,
    ) -> Result<(), StoreError> {
        if let Some(state) = self.store.load(id).await? {
            session.state().reveal(state.revealed);
        }
        Ok(())
    }

    /// Saves what `session` found. A store that already has all of it is not written to.
    pub async fn save(&self, session: &Session, id: &SessionId) -> Result<(), StoreError> {
        let revealed: BTreeSet<String> = session.state().revealed().into_iter().collect();
        if revealed.is_empty() {
            return Ok(());
        }
        self.store.reveal(id, &revealed).await.map(|_| ())
    }

    /// Forgets the session's state; answers whether there was one.
    pub async fn delete(&self, id: &SessionId) -> Result<bool, StoreError> {
        self.store.delete(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn policy(yaml: &str) -> Policy {
        toolgate_policy::load_str(yaml, Path::new("p.yaml")).unwrap()
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_reload_that_names_the_same_store_keeps_what_sessions_found() {
        rt().block_on(async {
            let first = policy("version: 1\n");
            let stored = StoredSessions::for_policy(&first, None).unwrap();
            let engine = Engine::builder(first.clone()).build().unwrap();
            let id = SessionId::parse("s1").unwrap();
            let session = stored.open(&engine, &id).await.unwrap();
            session.state().reveal(["found".to_owned()]);
            stored.save(&session, &id).await.unwrap();

            // A new engine from an edited policy that still keeps sessions in memory (with
            // another time to live).
            let edited = policy("version: 1\nsessions: {ttl: 1h}\n");
            let reloaded = StoredSessions::for_reloaded_policy(&edited, None, &stored).unwrap();
            let engine = Engine::builder(edited).build().unwrap();
            let session = reloaded.open(&engine, &id).await.unwrap();
            assert!(session.state().is_revealed("found"));
        });
    }

    #[test]
    fn a_reload_that_names_another_store_opens_it() {
        rt().block_on(async {
            let first = policy("version: 1\n");
            let stored = StoredSessions::for_policy(&first, None).unwrap();
            let engine = Engine::builder(first).build().unwrap();
            let id = SessionId::parse("s1").unwrap();
            let session = stored.open(&engine, &id).await.unwrap();
            session.state().reveal(["found".to_owned()]);
            stored.save(&session, &id).await.unwrap();

            let dir = tempfile::tempdir().unwrap();
            let url = format!("file://{}/results", dir.path().display());
            let edited = policy(&format!("version: 1\nreduction: {{store: \"{url}\"}}\n"));
            let reloaded = StoredSessions::for_reloaded_policy(&edited, None, &stored).unwrap();
            let engine = Engine::builder(edited).build().unwrap();
            let session = reloaded.open(&engine, &id).await.unwrap();
            assert!(!session.state().is_revealed("found"));
        });
    }

    #[test]
    fn sessions_live_beside_the_results_the_policy_names() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/results", dir.path().display());
        let named = policy(&format!("version: 1\nreduction: {{store: \"{url}\"}}\n"));
        let stored = StoredSessions::for_policy(&named, Some("memory://")).unwrap();
        assert_eq!(stored.origin.url, url);
        let unnamed = policy("version: 1\n");
        let stored = StoredSessions::for_policy(&unnamed, Some(&url)).unwrap();
        assert_eq!(stored.origin.url, url);
    }
}
