//! The engine every new call runs on, swapped whole when the policy changes.
//!
//! A [`Loaded`] is one policy made into an engine, with the session store it names. The
//! current one sits in an [`ArcSwap`]: a call takes an `Arc` of it when it starts and keeps it
//! to the end, so a swap never changes the engine under a running call; the old engine is
//! dropped when its last call ends.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use toolgate::{Engine, Policy};

use super::error::ServeError;
use super::progress::ProgressRoutes;
use super::session::StoredSessions;

/// One policy, built.
pub(crate) struct Loaded {
    pub(crate) engine: Engine,
    pub(crate) sessions: StoredSessions,
    /// The model-facing names every session sees without having found anything: a call to one
    /// of these needs no look at the session store first.
    pub(crate) always_visible: HashSet<String>,
    /// Counts the policies loaded, from 1.
    pub(crate) generation: u64,
}

impl Loaded {
    /// Every model-facing name visible to a session that found nothing.
    fn base_names(engine: &Engine) -> Result<HashSet<String>, ServeError> {
        // A session id no client can have: it holds no state, and no call is ever made in it.
        let probe = engine.session(Some("\u{0}toolgate-serve-probe"))?;
        Ok(engine
            .visible_tools(&probe)
            .into_iter()
            .map(|s| s.name)
            .collect())
    }
}

/// The current engine, and how to make the next one.
pub(crate) struct Engines {
    current: ArcSwap<Loaded>,
    policy: PathBuf,
    default_store_url: Option<String>,
    progress: Arc<ProgressRoutes>,
    generations: AtomicU64,
}

impl Engines {
    /// Loads the policy and builds the first engine.
    pub(crate) fn load(
        policy: &Path,
        default_store_url: Option<String>,
        progress: Arc<ProgressRoutes>,
    ) -> Result<Self, ServeError> {
        let first = build(policy, default_store_url.as_deref(), &progress, None, 1)?;
        Ok(Engines {
            current: ArcSwap::from_pointee(first),
            policy: policy.to_path_buf(),
            default_store_url,
            progress,
            generations: AtomicU64::new(1),
        })
    }

    /// The engine for a call that starts now.
    pub(crate) fn current(&self) -> Arc<Loaded> {
        self.current.load_full()
    }

    /// The policy file.
    pub(crate) fn policy_path(&self) -> &Path {
        &self.policy
    }

    /// Loads the policy again and, when it is good, makes it current; answers the engine it
    /// replaced and the new one. On an error the current engine stays.
    pub(crate) fn reload(&self) -> Result<(Arc<Loaded>, Arc<Loaded>), ServeError> {
        let previous = self.current();
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        let next = Arc::new(build(
            &self.policy,
            self.default_store_url.as_deref(),
            &self.progress,
            Some(&previous.sessions),
            generation,
        )?);
        self.current.store(Arc::clone(&next));
        Ok((previous, next))
    }
}

/// The policy's files that a change to should reload it: the policy itself, its script files
/// and its catalogs.
pub(crate) fn watched_files(policy_path: &Path, policy: &Policy) -> Vec<PathBuf> {
    let mut files = vec![policy_path.to_path_buf()];
    let scripts = &policy.scripts;
    for script in [
        &scripts.rewrite,
        &scripts.before,
        &scripts.after,
        &scripts.unknown_tool,
    ]
    .into_iter()
    .flatten()
    {
        files.push(script.file.clone());
    }
    if let Some(search) = &policy.search {
        files.extend(search.catalogs.iter().cloned());
    }
    files.sort();
    files.dedup();
    files
}

fn build(
    path: &Path,
    default_store_url: Option<&str>,
    progress: &Arc<ProgressRoutes>,
    previous: Option<&StoredSessions>,
    generation: u64,
) -> Result<Loaded, ServeError> {
    let policy = toolgate_policy::load_file(path)?;
    let sessions = match previous {
        Some(previous) => {
            StoredSessions::for_reloaded_policy(&policy, default_store_url, previous)?
        }
        None => StoredSessions::for_policy(&policy, default_store_url)?,
    };
    let needs_store = policy.reduction.as_ref().is_some_and(|r| r.store.is_none());
    let mut builder = Engine::builder(policy).on_event(progress.listener());
    if needs_store && let Some(url) = default_store_url {
        builder = builder.default_store_url(url);
    }
    let engine = builder.build()?;
    let always_visible = Loaded::base_names(&engine)?;
    Ok(Loaded {
        engine,
        sessions,
        always_visible,
        generation,
    })
}
