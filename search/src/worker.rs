//! The one helper thread a search splits its first stage with ([`Worker::join`]): the caller
//! scores the lower half of the tools while the worker scores the upper half (see
//! `score.rs`), each on its own core with its own per-thread scratch.
//!
//! **Why a persistent thread.** Spawning a thread per query costs 20-50 µs, as much as a
//! whole query; so one worker thread is started on first use and kept for the life of the
//! process ([`worker`]). A job is handed over through an atomic state and a slot, not a
//! channel. After a job, and after [`Worker::wake`], the worker spins for [`SPIN`] watching for
//! the next one before it parks: back-to-back searches then hand off in well under a
//! microsecond instead of paying a futex wake-up (tens of µs on a virtual machine whose cores
//! idle, see `engine/src/plugin/wait.rs`). A search wakes the worker when it starts
//! (`SearchIndex::search`), before it looks up its words, so that the wake-up overlaps that
//! work.
//!
//! **Never slower than alone by much.** The caller runs its own half first, then takes the
//! worker's half back if the worker has not started it yet (a worker still waking up, or one
//! with no free core on a loaded machine) and runs it itself: a split search waits for the
//! worker only once the worker is actually running its half. One search at a time uses the
//! worker ([`Worker::join`] leases it); a search that finds it busy (another thread's search)
//! runs both halves itself, so concurrent searches never queue behind each other.
//!
//! **A worker without a core.** Once the worker has started its half the caller must wait for
//! it, and on a machine busy with other processes the worker can be descheduled for a whole
//! time slice. So a join whose worker started its half more than 20 µs after the hand-off
//! and after the caller was half-way through its own half (or not at all) is late, and three late joins in a row turn splits off for the next 64
//! searches that could split ([`Worker::ready`]); a split run on one thread costs 7-20% more
//! than the work unsplit. A single late join is forgiven: a worker asleep after a pause is
//! late once, then spins. (Judging by when the halves ended and turning splits off after one
//! late join, as first written, counted uneven halves as lateness, and the parked worker was
//! late again after every pause: in a quieter minute only a few hundred of 19,514 searches
//! split. With this rule, over 3 x 19,514 searches of 100,000 tools, 46,000 split, 1,461 of them
//! late, and 2,752 ran alone.)
//! A start 20 µs late costs little on a search whose halves take 100 µs: judged by 20 µs
//! alone, the 200 slowest searches of 100,000 tools, which follow each other and so often find
//! the worker just parked, turned splits off again and again: p50 270, p99 435 µs; with the
//! half-way rule 233-247 and 343-350 µs, and the 19,514 searches unchanged (p99 199-210 µs).
//!
//! **Panics and borrows.** The worker's half runs under `catch_unwind` and its panic is resumed
//! on the caller, as if the half had run there (as `threads.rs` does for scoped threads); the
//! worker survives it. The job borrows the caller's data with its lifetime erased: the caller
//! never leaves [`Worker::join`] (by return or by unwinding) before the worker is done with
//! it, which a guard that waits on drop ensures.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long the worker watches for a job after one, or after a wake-up, before it parks.
/// Longer than the gap between back-to-back searches' first stages (a 100,000-tool query is
/// parsed and looked up in 5-30 µs), far shorter than a query's time slice on a loaded
/// machine: a search that uses the worker costs the other core at most this much spinning.
pub(crate) const SPIN: Duration = Duration::from_micros(50);

/// How long the caller, its half done, spins for the worker's before it yields its core in
/// turns (so that a worker waiting for this core runs).
const CALLER_SPIN: Duration = Duration::from_micros(20);

/// How many asks of [`Worker::ready`] say no after [`MISSES_IN_A_ROW`] joins whose worker
/// was late.
pub(crate) const SKIPS_AFTER_MISSES: u32 = 64;

/// Late joins in a row that turn splits off for a while: one alone is no sign of a busy
/// machine (a worker asleep after a pause needs a wake-up of tens of µs), and on a quiet
/// machine the next join finds it spinning.
pub(crate) const MISSES_IN_A_ROW: u32 = 3;

/// A worker that starts a job later than this after it was posted is late: a spinning one
/// starts within a microsecond, a parked one needs a wake-up (about 28 µs for a park/unpark
/// round trip on the machine of `engine/src/plugin/wait.rs`), one without a free core a time
/// slice of another process.
const START_LATE: Duration = Duration::from_micros(20);

/// The threads one search uses by default: 2 where the machine has 2 or more cores, else 1.
/// Read once per process (`available_parallelism` reads cgroup files on Linux).
pub(crate) fn default_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get().min(2)))
}

/// The process's worker, started on first use.
pub(crate) fn worker() -> &'static Worker {
    static WORKER: OnceLock<Worker> = OnceLock::new();
    WORKER.get_or_init(Worker::new)
}

/// No job.
const IDLE: u8 = 0;
/// A job waits in the slot.
const POSTED: u8 = 1;
/// The worker took the job and runs it.
const RUNNING: u8 = 2;
/// The worker finished the job.
const DONE: u8 = 3;

/// A job with its type erased: `call(data)` runs it.
struct Job {
    call: unsafe fn(*mut ()),
    data: *mut (),
    /// When it was posted.
    posted: Instant,
}

// SAFETY: a `Job` is only made by `Worker::join`, from a `Slot<F, B>` whose `F` and `B` are
// `Send`: running it on another thread moves only `Send` values there and back.
unsafe impl Send for Job {}

/// What the caller and the worker share.
struct Shared {
    state: AtomicU8,
    job: Mutex<Option<Job>>,
    /// Set by the worker just before it parks (it then checks `state` again).
    sleeping: AtomicBool,
    /// Set by [`Worker::wake`]: the worker spins for [`SPIN`] again.
    woken: AtomicBool,
    /// Set when the [`Worker`] is dropped: the thread ends.
    stop: AtomicBool,
    /// How long after it was posted the worker started the last job, in nanoseconds.
    started_after: AtomicU64,
    /// Jobs the worker ran (counted for the tests only).
    #[cfg(test)]
    ran: std::sync::atomic::AtomicUsize,
}

/// A persistent helper thread for [`Worker::join`].
pub(crate) struct Worker {
    shared: Arc<Shared>,
    /// The thread, started on first use (`None` if it could not be).
    thread: OnceLock<Option<Thread>>,
    /// Held by the one [`Worker::join`] using the worker.
    leased: AtomicBool,
    /// Asks of [`Worker::ready`] left to say no to.
    skips: AtomicU32,
    /// Late joins since the last on time.
    misses: AtomicU32,
}

impl Worker {
    pub(crate) fn new() -> Worker {
        Worker {
            shared: Arc::new(Shared {
                state: AtomicU8::new(IDLE),
                job: Mutex::new(None),
                sleeping: AtomicBool::new(false),
                woken: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                started_after: AtomicU64::new(0),
                #[cfg(test)]
                ran: std::sync::atomic::AtomicUsize::new(0),
            }),
            thread: OnceLock::new(),
            leased: AtomicBool::new(false),
            skips: AtomicU32::new(0),
            misses: AtomicU32::new(0),
        }
    }

    /// The worker thread, started if it is not yet.
    fn thread(&self) -> Option<&Thread> {
        self.thread
            .get_or_init(|| {
                let shared = Arc::clone(&self.shared);
                let spawned = thread::Builder::new()
                    .name("toolgate-search".into())
                    .spawn(move || work(&shared));
                spawned.ok().map(|handle| handle.thread().clone())
            })
            .as_ref()
    }

    /// Tells the worker a job may come soon: a parked worker is woken (its wake-up then
    /// overlaps the caller's work until the job), a spinning one spins for [`SPIN`] again.
    pub(crate) fn wake(&self) {
        if self.skips.load(Ordering::Relaxed) > 0 {
            return;
        }
        let Some(thread) = self.thread() else {
            return;
        };
        self.shared.woken.store(true, Ordering::Relaxed);
        if self.shared.sleeping.load(Ordering::SeqCst) {
            thread.unpark();
        }
    }

    /// Runs `a` on this thread and `b` on the worker at the same time, and returns both
    /// results. If the worker is busy (another thread's join) or cannot be started, or has not
    /// started `b` by the time `a` is done, `b` runs here after `a`. A panic of `b` is resumed
    /// here once `a` is done; a panic of `a` unwinds from here once the worker is done with
    /// `b` (whose result is then dropped).
    ///
    /// A worker is late if it started `b` more than 20 µs ([`START_LATE`]) and more than half
    /// the time `a` took after it was
    /// posted, or had not started it when `a` was done and `a` took longer than that. After
    /// [`MISSES_IN_A_ROW`] late joins in a row (the worker has no free core), [`Worker::ready`]
    /// says no for the next [`SKIPS_AFTER_MISSES`] asks.
    pub(crate) fn join<A, B, FB>(&self, a: impl FnOnce() -> A, b: FB) -> (A, B)
    where
        FB: FnOnce() -> B + Send,
        B: Send,
    {
        self.join_counting(a, b, true)
    }

    /// [`Worker::join`] for work too small to judge the worker by (a search's word lookups,
    /// run soon after [`Worker::wake`], when a parked worker may still be waking up): its
    /// lateness is not counted.
    pub(crate) fn join_quiet<A, B, FB>(&self, a: impl FnOnce() -> A, b: FB) -> (A, B)
    where
        FB: FnOnce() -> B + Send,
        B: Send,
    {
        self.join_counting(a, b, false)
    }

    fn join_counting<A, B, FB>(&self, a: impl FnOnce() -> A, b: FB, counts: bool) -> (A, B)
    where
        FB: FnOnce() -> B + Send,
        B: Send,
    {
        let mut slot = Slot {
            f: Some(b),
            out: None,
        };
        let lease = match (self.thread(), self.lease()) {
            (Some(thread), Some(lease)) => Some((thread, lease)),
            _ => None,
        };
        let Some((thread, _lease)) = lease else {
            let a = a();
            return (a, slot.run_here());
        };
        let shared = &*self.shared;
        let posted = Instant::now();
        let job = Job {
            call: call_slot::<FB, B>,
            data: (&raw mut slot).cast(),
            posted,
        };
        *shared.job.lock().unwrap_or_else(PoisonError::into_inner) = Some(job);
        // The guard exists before the job can run: whatever `a` does, the caller does not
        // leave this frame (where `slot` lives) while the worker may use it.
        let wait = Wait { shared };
        shared.state.store(POSTED, Ordering::SeqCst);
        if shared.sleeping.load(Ordering::SeqCst) {
            thread.unpark();
        }
        let a = a();
        let done_here = posted.elapsed();
        let ran_there = wait.finish();
        let started_after =
            ran_there.then(|| Duration::from_nanos(shared.started_after.load(Ordering::Relaxed)));
        if counts {
            self.count(is_late(started_after, done_here));
        }
        let b = if ran_there {
            match slot.out.take() {
                Some(Ok(b)) => b,
                Some(Err(panic)) => panic::resume_unwind(panic),
                // (A job that ran always leaves its outcome.)
                None => slot.run_here(),
            }
        } else {
            slot.run_here()
        };
        (a, b)
    }

    /// Counts a join's worker late or on time (see [`Worker::join`] and [`is_late`]).
    fn count(&self, late: bool) {
        if !late {
            self.misses.store(0, Ordering::Relaxed);
            return;
        }
        let misses = self.misses.load(Ordering::Relaxed) + 1;
        if misses >= MISSES_IN_A_ROW {
            self.skips.store(SKIPS_AFTER_MISSES, Ordering::Relaxed);
            self.misses.store(0, Ordering::Relaxed);
        } else {
            self.misses.store(misses, Ordering::Relaxed);
        }
    }

    /// Whether to split work with the worker now: no for the [`SKIPS_AFTER_MISSES`] asks after
    /// [`MISSES_IN_A_ROW`] joins whose worker was late (it had no free core: a caller waiting
    /// on such a worker can wait for a whole time slice of another process, and a split run on
    /// one thread costs more than the work unsplit). Each ask while skipping counts one off.
    /// No, too, while another thread's join holds the worker (its split would run on one
    /// thread).
    pub(crate) fn ready(&self) -> bool {
        if self.leased.load(Ordering::Relaxed) || self.failed() {
            return false;
        }
        let skips = self.skips.load(Ordering::Relaxed);
        if skips > 0 {
            self.skips.store(skips - 1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Whether [`Worker::ready`] would say yes, without counting as one of its asks.
    pub(crate) fn available(&self) -> bool {
        !self.leased.load(Ordering::Relaxed)
            && self.skips.load(Ordering::Relaxed) == 0
            && !self.failed()
    }

    /// Whether the thread could not be started: a split would then run both halves here, at
    /// more cost than the work unsplit.
    fn failed(&self) -> bool {
        matches!(self.thread.get(), Some(None))
    }

    /// The worker for this thread's join, unless another thread's holds it.
    fn lease(&self) -> Option<Lease<'_>> {
        self.leased
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Lease { worker: self })
    }

    /// Threads this worker started: 1 once used, whatever the number of joins.
    #[cfg(test)]
    pub(crate) fn threads_started(&self) -> usize {
        usize::from(matches!(self.thread.get(), Some(Some(_))))
    }

    /// Jobs the worker thread ran (not those taken back by their caller).
    #[cfg(test)]
    pub(crate) fn jobs_run(&self) -> usize {
        self.shared.ran.load(Ordering::Relaxed)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(Some(thread)) = self.thread.get() {
            thread.unpark();
        }
    }
}

/// Whether a join's worker was late: it started the job `started_after` its posting (`None`:
/// it had not started it when the caller's own part, which took `caller_took`, was done, and
/// the caller took it back) later than [`START_LATE`] and later than half of `caller_took`.
fn is_late(started_after: Option<Duration>, caller_took: Duration) -> bool {
    match started_after {
        Some(after) => after > START_LATE.max(caller_took / 2),
        None => caller_took > START_LATE,
    }
}

/// Holds [`Worker::leased`] until dropped.
struct Lease<'w> {
    worker: &'w Worker,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.worker.leased.store(false, Ordering::Release);
    }
}

/// A job's closure and, once run, its outcome.
struct Slot<F, B> {
    f: Option<F>,
    out: Option<thread::Result<B>>,
}

impl<F: FnOnce() -> B, B> Slot<F, B> {
    /// Runs the closure on this thread (it was not run elsewhere).
    fn run_here(&mut self) -> B {
        match self.f.take() {
            Some(f) => f(),
            // `join` runs a slot's closure once, here or there, never both.
            None => unreachable!("a join's second closure runs once"),
        }
    }
}

/// Runs the closure of the `Slot<F, B>` at `data` under `catch_unwind`, storing its outcome.
///
/// # Safety
///
/// `data` points to a live `Slot<F, B>` (these very `F` and `B`) that nothing else uses until
/// this returns.
unsafe fn call_slot<F: FnOnce() -> B, B>(data: *mut ()) {
    // SAFETY: `join` made `data` from a `&mut Slot<F, B>` with these type parameters, and keeps
    // that slot alive and untouched until the worker has stored `DONE` after this call (the
    // `Wait` guard, also on unwinding).
    let slot = unsafe { &mut *data.cast::<Slot<F, B>>() };
    if let Some(f) = slot.f.take() {
        slot.out = Some(panic::catch_unwind(AssertUnwindSafe(f)));
    }
}

/// Waits, when finished or dropped, until the worker is done with the posted job or the job
/// is taken back; then clears the state for the next join.
struct Wait<'s> {
    shared: &'s Shared,
}

impl Wait<'_> {
    /// Whether the worker ran the job (else it was taken back, not run).
    fn finish(self) -> bool {
        let ran = self.settle();
        std::mem::forget(self);
        ran
    }

    fn settle(&self) -> bool {
        let state = &self.shared.state;
        // Taken back if the worker has not started it.
        if state
            .compare_exchange(POSTED, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.shared
                .job
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            return false;
        }
        let started = Instant::now();
        let mut spins = 0u32;
        while state.load(Ordering::Acquire) != DONE {
            if spins < 64 || started.elapsed() < CALLER_SPIN {
                spins = spins.saturating_add(1);
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        state.store(IDLE, Ordering::Release);
        true
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}

/// The worker thread: runs posted jobs; between them spins for [`SPIN`], then parks.
fn work(shared: &Shared) {
    let mut until = Instant::now() + SPIN;
    let mut spins = 0u32;
    loop {
        // Read before the locked exchange: a spinning worker writes the line the caller posts
        // on only when there is a job to take.
        if shared.state.load(Ordering::Relaxed) == POSTED
            && shared
                .state
                .compare_exchange(POSTED, RUNNING, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            let job = shared
                .job
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(job) = job {
                let after = u64::try_from(job.posted.elapsed().as_nanos()).unwrap_or(u64::MAX);
                shared.started_after.store(after, Ordering::Relaxed);
                // SAFETY: `join` posted this job and waits (its `Wait` guard) until `DONE`
                // before its slot can go away; see `call_slot`.
                unsafe { (job.call)(job.data) };
                #[cfg(test)]
                shared.ran.fetch_add(1, Ordering::Relaxed);
            }
            shared.state.store(DONE, Ordering::Release);
            until = Instant::now() + SPIN;
            continue;
        }
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if shared.woken.load(Ordering::Relaxed) && shared.woken.swap(false, Ordering::Relaxed) {
            until = Instant::now() + SPIN;
        }
        spins = spins.wrapping_add(1);
        // The clock is read every 32 turns only.
        if !spins.is_multiple_of(32) || Instant::now() < until {
            std::hint::spin_loop();
            continue;
        }
        shared.sleeping.store(true, Ordering::SeqCst);
        // Checked again after saying so: a job posted before `sleeping` was set is seen here,
        // one posted after it unparks this thread (and an unpark before `park` makes it return).
        if shared.state.load(Ordering::SeqCst) != POSTED && !shared.stop.load(Ordering::SeqCst) {
            thread::park();
        }
        shared.sleeping.store(false, Ordering::SeqCst);
        until = Instant::now() + SPIN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_returns_both_results() {
        let w = Worker::new();
        let data = [1u32, 2, 3, 4];
        let (a, b) = w.join(
            || data[..2].iter().sum::<u32>(),
            || data[2..].iter().sum::<u32>(),
        );
        assert_eq!((a, b), (3, 7));
    }

    #[test]
    fn the_worker_is_started_once_for_many_joins() {
        let w = Worker::new();
        for i in 0..200u32 {
            let (a, b) = w.join(|| i, || i + 1);
            assert_eq!(a + 1, b);
        }
        assert_eq!(w.threads_started(), 1);
    }

    #[test]
    fn the_second_closure_runs_on_the_worker_when_it_is_free() {
        let w = Worker::new();
        let caller = thread::current().id();
        // The caller's half waits for the worker's, so the worker's cannot be taken back.
        let started = AtomicBool::new(false);
        let (_, there) = w.join(
            || {
                while !started.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            },
            || {
                started.store(true, Ordering::Release);
                thread::current().id()
            },
        );
        assert_ne!(there, caller);
        assert_eq!(w.jobs_run(), 1);
    }

    #[test]
    fn a_panic_in_the_workers_half_is_resumed_on_the_caller() {
        let w = Worker::new();
        let started = AtomicBool::new(false);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            w.join(
                || {
                    while !started.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                },
                || -> u32 {
                    started.store(true, Ordering::Release);
                    panic!("the upper half failed")
                },
            )
        }));
        let payload = caught.err().and_then(|p| p.downcast_ref::<&str>().copied());
        assert_eq!(payload, Some("the upper half failed"));
        // The worker survives its job's panic.
        assert_eq!(w.join(|| 1, || 2), (1, 2));
        assert_eq!(w.threads_started(), 1);
    }

    #[test]
    fn a_panic_in_the_callers_half_waits_for_the_workers_half_to_end() {
        let w = Worker::new();
        let started = AtomicBool::new(false);
        let finished = AtomicU32::new(0);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            w.join(
                || {
                    while !started.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    panic!("the lower half failed")
                },
                || {
                    started.store(true, Ordering::Release);
                    thread::sleep(Duration::from_millis(20));
                    // Still borrowed here: the caller has not unwound past `finished`.
                    finished.fetch_add(1, Ordering::Relaxed);
                },
            )
        }));
        assert!(caught.is_err());
        assert_eq!(finished.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_join_while_the_worker_is_busy_runs_both_halves_on_the_caller() {
        let w = Worker::new();
        let _held = w.lease();
        let caller = thread::current().id();
        let (_, there) = w.join(|| (), || thread::current().id());
        assert_eq!(there, caller);
        assert_eq!(w.jobs_run(), 0);
    }

    #[test]
    fn three_late_joins_in_a_row_turn_splits_off_for_the_next_64_asks() {
        let w = Worker::new();
        for _ in 0..MISSES_IN_A_ROW {
            w.count(true);
        }
        let asks: Vec<bool> = (0..=SKIPS_AFTER_MISSES).map(|_| w.ready()).collect();
        assert!(
            asks[..SKIPS_AFTER_MISSES as usize]
                .iter()
                .all(|&ready| !ready)
        );
        assert!(asks[SKIPS_AFTER_MISSES as usize]);
    }

    #[test]
    fn a_worker_starting_within_20_us_is_on_time_however_short_the_callers_part() {
        assert!(!is_late(
            Some(Duration::from_micros(19)),
            Duration::from_micros(5)
        ));
    }

    #[test]
    fn a_worker_starting_before_the_caller_is_half_way_is_on_time() {
        assert!(!is_late(
            Some(Duration::from_micros(45)),
            Duration::from_micros(100)
        ));
    }

    #[test]
    fn a_worker_starting_past_20_us_and_half_way_is_late() {
        assert!(is_late(
            Some(Duration::from_micros(55)),
            Duration::from_micros(100)
        ));
    }

    #[test]
    fn a_job_taken_back_after_a_long_part_of_the_callers_is_late() {
        assert!(is_late(None, Duration::from_micros(30)));
        assert!(!is_late(None, Duration::from_micros(10)));
    }

    #[test]
    fn asking_whether_the_worker_is_available_does_not_use_up_a_skip() {
        let w = Worker::new();
        for _ in 0..MISSES_IN_A_ROW {
            w.count(true);
        }
        for _ in 0..2 * SKIPS_AFTER_MISSES {
            assert!(!w.available());
        }
        let asks = (0..SKIPS_AFTER_MISSES).filter(|_| !w.ready()).count();
        assert_eq!(asks, SKIPS_AFTER_MISSES as usize);
        assert!(w.available());
    }

    #[test]
    fn a_worker_held_by_another_join_is_not_ready() {
        let w = Worker::new();
        let held = w.lease();
        assert!(held.is_some());
        assert!(!w.ready());
        drop(held);
        assert!(w.ready());
    }

    #[test]
    fn a_join_on_time_forgives_the_late_ones_before_it() {
        let w = Worker::new();
        for _ in 1..MISSES_IN_A_ROW {
            w.count(true);
        }
        w.count(false);
        w.count(true);
        assert!(w.ready());
    }

    #[test]
    fn dropping_a_worker_ends_its_thread() {
        let w = Worker::new();
        let shared = Arc::clone(&w.shared);
        w.join(|| (), || ());
        drop(w);
        // The thread holds the other reference until it returns.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&shared) > 1 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
