//! Joining scoped threads whose panics belong to the caller.

use std::thread::ScopedJoinHandle;

/// Joins `handles` in order and returns their results; a panic in one of them is resumed
/// here, as if the work had run on this thread.
pub(crate) fn join_resuming<R>(handles: Vec<ScopedJoinHandle<'_, R>>) -> Vec<R> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
        .collect()
}
