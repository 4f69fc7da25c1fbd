//! Live reload: a change to the policy file, or to a script or catalog it names, `SIGHUP`, or an
//! upstream MCP server whose tool list changed builds a new engine; a good one becomes current for new calls and every client is told
//! `list_changed`; a bad one is logged with its `file:line:col` errors and the last good policy
//! stays.
//!
//! The watch is on the directories of those files, not the files: editors save by writing a new
//! file and renaming it over the old one, which a watch on the old file would miss. A file
//! behind symbolic links is watched along the way: each link, and the file it resolves to, so
//! that swapping a link (a Kubernetes ConfigMap volume swaps `..data` on every update) reloads.
//! Events for other files in those directories are ignored. A burst of events (an editor's several writes)
//! makes one reload, [`SETTLE`] after the first of them.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::engines::{Loaded, watched_files};
use super::error::ServeError;
use super::handler::capabilities;
use super::shared::Shared;

/// How long after the first change event a reload waits for the rest of a burst.
const SETTLE: Duration = Duration::from_millis(30);

/// What set a reload off.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    FileChanged,
    Hangup,
    /// An upstream MCP server's tool list changed.
    UpstreamChanged,
}

/// The files whose change reloads the policy, and the watch on their directories.
struct Watched {
    files: Arc<Mutex<HashSet<PathBuf>>>,
    dirs: HashSet<PathBuf>,
    watcher: RecommendedWatcher,
}

impl Watched {
    fn start(tx: UnboundedSender<Trigger>) -> Result<Self, ServeError> {
        let files: Arc<Mutex<HashSet<PathBuf>>> = Arc::default();
        let filter = Arc::clone(&files);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            let hit = filter
                .lock()
                .map(|files| event.paths.iter().any(|p| files.contains(p)))
                .unwrap_or(false);
            if hit {
                let _ = tx.send(Trigger::FileChanged);
            }
        })?;
        Ok(Watched {
            files,
            dirs: HashSet::new(),
            watcher,
        })
    }

    /// Watches `files` (and stops caring about the others): each file as named, every
    /// symbolic link on the way to what it names, and the file it resolves to.
    fn set(&mut self, files: &[PathBuf]) {
        let files: HashSet<PathBuf> = files.iter().flat_map(|f| resolution(f)).collect();
        let dirs: HashSet<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();
        for gone in self.dirs.difference(&dirs) {
            // A directory that no longer exists (an old ConfigMap revision) has lost its watch.
            let _ = self.watcher.unwatch(gone);
        }
        self.dirs.retain(|dir| dirs.contains(dir));
        for dir in dirs {
            if self.dirs.contains(&dir) {
                continue;
            }
            match self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.dirs.insert(dir);
                }
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot watch"),
            }
        }
        if let Ok(mut watched) = self.files.lock() {
            *watched = files;
        }
    }
}

/// Most symbolic links followed while resolving one path (as Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// The paths whose change changes what `path` reads, each with its directory resolved (as the
/// watcher reports events): `path` itself, every symbolic link met while resolving it (in a
/// Kubernetes ConfigMap volume, `policy.yaml` and the `..data` link swapped on every update),
/// and the file it resolves to.
fn resolution(path: &Path) -> Vec<PathBuf> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut paths = vec![canonical(&absolute)];
    let mut pending: VecDeque<OsString> = absolute
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let mut current = PathBuf::new();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == "." {
            continue;
        }
        if part == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&part);
        match std::fs::read_link(&next) {
            Ok(target) if links < MAX_LINKS => {
                links += 1;
                paths.push(next);
                if target.is_absolute() {
                    current = PathBuf::new();
                }
                for part in target.components().rev() {
                    pending.push_front(part.as_os_str().to_owned());
                }
            }
            _ => current = next,
        }
    }
    paths.push(current);
    paths.sort();
    paths.dedup();
    paths
}

/// `path` with its directory resolved (symbolic links, `..`), as the watcher reports it.
fn canonical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or(absolute),
        _ => absolute,
    }
}

/// Starts listening for `SIGHUP` and, with `watch_files`, watching the current policy's files;
/// the returned task reloads on every trigger until `shutdown` fires.
pub(crate) fn start(
    shared: Arc<Shared>,
    watch_files: bool,
    shutdown: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, ServeError> {
    let (tx, rx) = unbounded_channel();
    let watched = match watch_files {
        true => {
            let mut watched = Watched::start(tx.clone())?;
            let current = shared.engines.current();
            watched.set(&watched_files(
                shared.engines.policy_path(),
                current.engine.policy(),
            ));
            Some(watched)
        }
        false => None,
    };
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|source| ServeError::Io {
            what: "cannot listen for SIGHUP",
            source,
        })?;
    let upstream_changed = Arc::clone(shared.engines.upstream_changed());
    let upstream_tx = tx.clone();
    let upstream_shutdown = shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = upstream_shutdown.cancelled() => break,
                () = upstream_changed.notified() => {
                    let _ = upstream_tx.send(Trigger::UpstreamChanged);
                }
            }
        }
    });
    let hup_shutdown = shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = hup_shutdown.cancelled() => break,
                signal = hangup.recv() => match signal {
                    Some(()) => { let _ = tx.send(Trigger::Hangup); }
                    None => break,
                },
            }
        }
    });
    Ok(tokio::spawn(run(shared, watched, rx, shutdown)))
}

async fn run(
    shared: Arc<Shared>,
    mut watched: Option<Watched>,
    mut rx: UnboundedReceiver<Trigger>,
    shutdown: CancellationToken,
) {
    loop {
        let trigger = tokio::select! {
            () = shutdown.cancelled() => return,
            trigger = rx.recv() => match trigger {
                Some(trigger) => trigger,
                None => return,
            },
        };
        let started = Instant::now();
        tokio::time::sleep(SETTLE).await;
        while rx.try_recv().is_ok() {}
        reload(&shared, trigger, started).await;
        if let Some(watched) = &mut watched {
            // Also after a failed reload: a link on the way to a file may point elsewhere now.
            let current = shared.engines.current();
            watched.set(&watched_files(
                shared.engines.policy_path(),
                current.engine.policy(),
            ));
        }
    }
}

/// Reloads now; a bad policy is logged and the current one stays.
async fn reload(shared: &Arc<Shared>, trigger: Trigger, started: Instant) {
    let building = Arc::clone(shared);
    let result = tokio::task::spawn_blocking(move || building.engines.reload()).await;
    match result {
        Ok(Ok((previous, next))) => {
            log_change(&previous, &next, trigger, started);
            let told = shared.peers.all_lists_changed(&capabilities(shared)).await;
            tracing::debug!(clients = told, "told the clients their tool list changed");
        }
        Ok(Err(e)) => {
            tracing::error!(
                "policy reload failed; still serving the last good policy (generation {}):\n{}",
                shared.engines.current().generation,
                toolgate::error::Chain(&e)
            );
        }
        Err(e) => {
            tracing::error!(error = %e, "policy reload panicked; still serving the last good policy");
        }
    }
}

fn log_change(previous: &Loaded, next: &Loaded, trigger: Trigger, started: Instant) {
    let mut added: Vec<&String> = next
        .always_visible
        .difference(&previous.always_visible)
        .collect();
    let mut removed: Vec<&String> = previous
        .always_visible
        .difference(&next.always_visible)
        .collect();
    added.sort();
    removed.sort();
    tracing::info!(
        generation = next.generation,
        ?trigger,
        ?added,
        ?removed,
        took_ms = started.elapsed().as_secs_f64() * 1000.0,
        "policy reloaded"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configmap_policy_resolves_through_its_data_link() {
        let dir = tempfile::tempdir().unwrap();
        let mount = std::fs::canonicalize(dir.path()).unwrap();
        let revision = mount.join("..2026_01_01.1");
        std::fs::create_dir(&revision).unwrap();
        std::fs::write(revision.join("policy.yaml"), "version: 1\n").unwrap();
        std::os::unix::fs::symlink("..2026_01_01.1", mount.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/policy.yaml", mount.join("policy.yaml")).unwrap();

        let paths = resolution(&mount.join("policy.yaml"));
        assert_eq!(
            paths,
            vec![
                mount.join("..2026_01_01.1/policy.yaml"),
                mount.join("..data"),
                mount.join("policy.yaml"),
            ]
        );
    }

    #[test]
    fn a_plain_file_resolves_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::canonicalize(dir.path()).unwrap().join("p.yaml");
        std::fs::write(&file, "version: 1\n").unwrap();
        assert_eq!(resolution(&file), vec![file]);
    }
}
