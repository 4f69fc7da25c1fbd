//! An index that can be replaced while it is being searched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;

use crate::catalog::ToolDoc;
use crate::error::IndexError;
use crate::hits::SearchResults;
use crate::index::SearchIndex;
use crate::query::Query;

/// The current [`SearchIndex`], swappable at any time.
///
/// Readers take a cheap `Arc` clone of the current index and search that;
/// the lock is held only for the clone or the swap, never while building or
/// searching, so a search never waits for a rebuild. A search that started
/// before a swap finishes on the index it started with.
///
/// Rebuilds are numbered when they start. If several overlap, a rebuild only
/// installs its index if no *later-started* one has been installed already,
/// so the newest catalog wins regardless of which build finishes first.
#[derive(Debug)]
pub struct LiveIndex {
    current: RwLock<Arc<SearchIndex>>,
    /// Number of the rebuild whose index is installed (0: the initial one).
    installed: Mutex<u64>,
    next_ticket: AtomicU64,
}

impl LiveIndex {
    /// Wraps an index.
    pub fn new(index: SearchIndex) -> Arc<LiveIndex> {
        Arc::new(LiveIndex {
            current: RwLock::new(Arc::new(index)),
            installed: Mutex::new(0),
            next_ticket: AtomicU64::new(1),
        })
    }

    /// The index in use now.
    pub fn current(&self) -> Arc<SearchIndex> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Searches the current index (see [`SearchIndex::search`]).
    pub fn search(&self, query: &Query, max_results: usize) -> SearchResults {
        self.current().search(query, max_results)
    }

    /// Searches the current index and explains each hit (see
    /// [`SearchIndex::search_explained`]).
    pub fn search_explained(&self, query: &Query, max_results: usize) -> SearchResults {
        self.current().search_explained(query, max_results)
    }

    /// Replaces the index now.
    pub fn replace(&self, index: SearchIndex) {
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        self.install(ticket, index);
    }

    fn install(&self, ticket: u64, index: SearchIndex) -> bool {
        let mut installed = self
            .installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if ticket < *installed {
            return false;
        }
        *installed = ticket;
        let index = Arc::new(index);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = index;
        true
    }

    /// Builds an index from `docs` on a new thread and swaps it in when
    /// done. The handle yields `Ok(true)` if the new index was installed,
    /// `Ok(false)` if a later-started rebuild had already replaced it, and
    /// the build error otherwise (the old index then stays in use).
    pub fn rebuild_in_background(
        self: &Arc<Self>,
        docs: Vec<ToolDoc>,
    ) -> JoinHandle<Result<bool, IndexError>> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        let live = Arc::clone(self);
        std::thread::spawn(move || {
            let index = SearchIndex::build_with(docs, *live.current().ranking())?;
            Ok(live.install(ticket, index))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(names: &[&str]) -> SearchIndex {
        SearchIndex::build(
            names
                .iter()
                .map(|n| ToolDoc::new(*n, "a tool"))
                .collect::<Vec<_>>(),
        )
        .unwrap()
    }

    #[test]
    fn live_index_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LiveIndex>();
        check::<SearchIndex>();
    }

    #[test]
    fn background_rebuild_swaps_in_the_new_index() {
        let live = LiveIndex::new(index(&["old_tool"]));
        let installed = live.rebuild_in_background(vec![ToolDoc::new("new_tool", "x")]);
        assert!(installed.join().unwrap().unwrap());
        assert!(live.current().get("new_tool").is_some());
        assert!(live.current().get("old_tool").is_none());
    }

    #[test]
    fn failed_rebuild_keeps_the_old_index() {
        let live = LiveIndex::new(index(&["old_tool"]));
        let dup = vec![ToolDoc::new("a", ""), ToolDoc::new("a", "")];
        let result = live.rebuild_in_background(dup).join().unwrap();
        assert!(matches!(result, Err(IndexError::DuplicateName(_))));
        assert!(live.current().get("old_tool").is_some());
    }

    #[test]
    fn an_older_rebuild_never_replaces_a_newer_one() {
        let live = LiveIndex::new(index(&["v0"]));
        let old_ticket = live.next_ticket.fetch_add(1, Ordering::SeqCst);
        live.replace(index(&["v2"]));
        assert!(!live.install(old_ticket, index(&["v1"])));
        assert!(live.current().get("v2").is_some());
    }

    #[test]
    fn a_search_holds_its_index_across_a_swap() {
        let live = LiveIndex::new(index(&["old_tool"]));
        let held = live.current();
        live.replace(index(&["new_tool"]));
        assert!(held.get("old_tool").is_some());
        assert!(live.current().get("new_tool").is_some());
    }
}
