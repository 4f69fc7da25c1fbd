//! The threads policy scripts run on: a bounded pool of their own, with the hand-off of the
//! plugin pool (`plugin::pool`), instead of a `spawn_blocking` hop per hook.
//!
//! A run that needs more than the inline budget of its caller's thread (`script::INLINE_OPS`
//! and its kin) runs again here, never on a runtime worker. Each such run is a job for one of at most
//! [`ScriptPool::threads`] threads, started lazily and kept (a thread idle for 30 s ends); a
//! thread that finished a job of a back-to-back run spins briefly for the next, and the caller
//! watches briefly for a quick script's answer (`plugin::wait`), so that with a free core a
//! hook of back-to-back calls need not wait for a thread wake-up. At most [`MAX_QUEUED`] jobs
//! wait for a thread; one more is refused at once.
//!
//! Measured in `engine/benches/guard.rs` (`hooks`, release, idle 2-core machine, one run; the
//! inline-first runs of today are in docs/benchmarks.md):
//! aliases + rewrite + before + after took 60.5 µs a call with a `spawn_blocking` hop per
//! hook and 20.8 µs with this pool; one hook (aliases + rewrite) 22.0 against 8.3 µs. Hooks
//! that fit the inline budget now make no hop at all (figures in `docs/benchmarks.md`).
//!
//! The bound of a run (`dispatch.script_timeout`) counts from when the hook asked for it: a job
//! that waited for a thread runs for what is left, and one that waited past its bound is
//! refused without running. The caller stops waiting at the bound (plus [`GRACE`]) whatever the
//! thread does, so a runaway script ties up one thread until its own bound and no caller
//! longer than its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::plugin::pool::{Job, Pool, Wait};
use crate::plugin::wait::{self, Spin};

/// How many jobs may wait for a thread, all hooks of the engine together.
pub(crate) const MAX_QUEUED: usize = 1024;

/// How long after a run's bound its caller still waits for the thread's own answer (which
/// names the limit that ended it) before it answers for it.
pub(crate) const GRACE: Duration = Duration::from_millis(50);

/// The script threads of one engine.
pub(crate) struct ScriptPool {
    pool: Pool,
    threads: usize,
    /// At most this many jobs wait for a thread.
    max_queued: usize,
    /// Jobs queued or running.
    in_flight: Arc<AtomicUsize>,
}

/// A job's place in the pool, given back when dropped.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ScriptPool {
    /// Twice the cores, at least 4 and at most 32 threads: scripts use the CPU only, but a
    /// runaway one holds its thread until its bound, so a few more threads than cores keep
    /// the others running meanwhile.
    pub(crate) fn new() -> ScriptPool {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ScriptPool::with_bounds((cores * 2).clamp(4, 32), MAX_QUEUED)
    }

    /// A pool of at most `threads` threads (at least one), with at most `max_queued` jobs
    /// waiting for one.
    pub(crate) fn with_bounds(threads: usize, max_queued: usize) -> ScriptPool {
        let threads = threads.max(1);
        ScriptPool {
            pool: Pool::named("toolgate-script".into(), threads, Wait::DEFAULT),
            threads,
            max_queued,
            in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// At most this many scripts run at once.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// At most this many jobs wait for a thread.
    pub(crate) fn max_queued(&self) -> usize {
        self.max_queued
    }

    /// A place for one more job, or `None` when the queue is full.
    pub(crate) fn slot(&self) -> Option<Slot> {
        let before = self.in_flight.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(self.in_flight.clone());
        (before < self.threads + self.max_queued).then_some(slot)
    }

    /// Runs `job` on one of the threads; it must hold its [`Slot`] until it ends.
    pub(crate) fn submit(&self, job: Job) -> std::io::Result<()> {
        self.pool.submit(job)
    }

    /// How the caller of a job waits for its answer: watching for it first when the last
    /// script was quick.
    pub(crate) fn caller_spin(&self) -> Option<&Spin> {
        self.pool
            .ran_within(wait::CALLER_WAIT)
            .then(|| self.pool.caller_spin())
    }
}
