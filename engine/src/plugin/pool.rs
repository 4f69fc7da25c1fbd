//! A plugin's own threads: the blocking C calls of one plugin run here instead of on tokio's
//! blocking pool.
//!
//! A [`Pool`] starts threads lazily, up to its bound, and keeps them: a call is handed to an
//! idle thread through a queue, without spawning a task or a thread per call. A thread that
//! has just finished a call takes the next one if it is already queued. Otherwise it sleeps at
//! once, unless calls are coming back to back ([`Wait`]): then it stays awake briefly, so the
//! next call needs no wake-up: it spins for the first 10 µs (no system call: a caller that
//! calls again at once does so within 2-3 µs), then yields its core to any thread that wants
//! it. A spin that saw no job turns the next spins off for a while (`wait::Spin`): then the
//! caller is slower than a spin, or waits for this core. (An earlier version spun 50 µs after
//! every call, yielding nothing; on a machine with few cores and other work that took the core
//! the caller needed, and made calls 2-10x slower.) A thread idle for [`IDLE_EXIT`] ends; the
//! pool starts another when it needs one.
//!
//! The pool does not bound anything itself: the plugin's thread permits (`max_threads`) are
//! taken before a job is submitted and released by the job when the plugin returns, so at most
//! that many jobs exist at once and each finds a thread. The pool's bound equals the permits'.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::wait::{Spin, THREAD_SPIN};

/// How long a thread with nothing to do stays before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(30);

/// One unit of work: a plugin call and the sending of its result. It calls
/// [`Finishing::now`] just before it sends the result, so that the caller's next job, which may
/// come right after, finds this thread ready instead of starting another.
pub(crate) type Job = Box<dyn FnOnce(&Finishing) + Send + 'static>;

/// Given to a job: lets it say its thread is about to be free.
pub(crate) struct Finishing<'a> {
    shared: &'a Shared,
    started: Instant,
    announced: std::cell::Cell<bool>,
}

impl Finishing<'_> {
    /// The job is done but for sending its result: count the thread as available.
    pub(crate) fn now(&self) {
        if !self.announced.replace(true) {
            let now = Instant::now();
            self.shared.between_jobs.fetch_add(1, Ordering::AcqRel);
            self.shared
                .last_run_ns
                .store(nanos(now - self.started), Ordering::Relaxed);
            self.shared
                .last_finish_ns
                .store(self.shared.since_epoch(now), Ordering::Relaxed);
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The threads of one plugin.
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    /// The name the threads carry (`toolgate-plugin-<name>`).
    thread_name: String,
    /// At most this many threads.
    max_threads: usize,
    state: Mutex<State>,
    wake: Condvar,
    /// Threads that have finished a job and are about to look for the next one: as available
    /// as idle ones.
    between_jobs: AtomicUsize,
    /// Jobs in the queue, readable without the lock (a waiting thread watches it).
    queued: AtomicUsize,
    /// When the pool was made: the origin of the times below.
    epoch: Instant,
    /// When the last job finished, in ns since `epoch`.
    last_finish_ns: AtomicU64,
    /// How long the last job ran (until it announced its end), in ns.
    last_run_ns: AtomicU64,
    /// Set by `submit` when the job came soon after the previous one finished: calls are
    /// coming back to back, and a thread that finishes one waits briefly for the next.
    back_to_back: AtomicBool,
    /// Set when the pool is dropped, readable without the lock.
    closing: AtomicBool,
    wait: Wait,
    /// Whether the threads' spins for a next job pay off.
    thread_spin: Spin,
    /// Whether the callers' spins for a result pay off.
    caller_spin: Spin,
}

/// How a thread that has finished a job waits for the next before it sleeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    /// How long it stays awake watching the queue (0: it sleeps at once).
    pub(crate) awake_for: Duration,
    /// How much of `awake_for` it spins (no system call) before it yields its core in turns.
    pub(crate) spin_for: Duration,
    /// It stays awake only after a job that came less than this after the one before ended.
    pub(crate) after_gap_below: Duration,
}

impl Wait {
    /// Awake 50 µs after a job that came within 200 µs of the previous one's end. Measured in
    /// `engine/benches/guard.rs` (`plugin` group, 2 loaded cores): on a multi-thread runtime a
    /// call then finds its thread awake instead of paying a futex wake-up and the scheduler's
    /// delay; a lone call (or one after a pause) still finds it asleep and costs no CPU. The
    /// first [`THREAD_SPIN`] of it spin (see `wait` for the figures).
    pub(crate) const DEFAULT: Wait = Wait {
        awake_for: Duration::from_micros(50),
        spin_for: THREAD_SPIN,
        after_gap_below: Duration::from_micros(200),
    };
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Threads sleeping on `wake`.
    idle: usize,
    /// Threads alive.
    threads: usize,
    /// Set when the pool is dropped: threads end once the queue is empty.
    closed: bool,
}

impl Pool {
    /// A pool of at most `max_threads` threads (at least one) named after `plugin`.
    pub(crate) fn new(plugin: &str, max_threads: usize) -> Pool {
        Pool::with_wait(plugin, max_threads, Wait::DEFAULT)
    }

    /// The same, with threads that wait for the next job as `wait` says.
    pub(crate) fn with_wait(plugin: &str, max_threads: usize, wait: Wait) -> Pool {
        Pool::named(format!("toolgate-plugin-{plugin}"), max_threads, wait)
    }

    /// A pool whose threads carry `thread_name` (the script pool's, `toolgate-script`).
    pub(crate) fn named(thread_name: String, max_threads: usize, wait: Wait) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                thread_name,
                max_threads: max_threads.max(1),
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                between_jobs: AtomicUsize::new(0),
                queued: AtomicUsize::new(0),
                epoch: Instant::now(),
                last_finish_ns: AtomicU64::new(0),
                last_run_ns: AtomicU64::new(u64::MAX),
                back_to_back: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                wait,
                thread_spin: Spin::default(),
                caller_spin: Spin::default(),
            }),
        }
    }

    /// Runs `job` on one of the pool's threads. A panic in it is caught and logged (the job
    /// should catch its own). Fails only if no thread can be started at all.
    pub(crate) fn submit(&self, job: Job) -> std::io::Result<()> {
        let shared = &self.shared;
        let last_finish = shared.last_finish_ns.load(Ordering::Relaxed);
        let gap = shared
            .since_epoch(Instant::now())
            .saturating_sub(last_finish);
        // 0: no job has finished yet.
        shared.back_to_back.store(
            last_finish != 0 && gap < nanos(shared.wait.after_gap_below),
            Ordering::Relaxed,
        );
        let mut state = self.shared.lock();
        state.queue.push_back(job);
        self.shared.queued.fetch_add(1, Ordering::Release);
        // Idle threads that were woken but have not yet taken a job still count as idle, and a
        // thread that has just finished a job will find it under the lock: each takes one, so a
        // new thread is needed only when there are more jobs than takers.
        let takers = state.idle + self.shared.between_jobs.load(Ordering::Acquire);
        if state.queue.len() > takers && state.threads < self.shared.max_threads {
            let shared = self.shared.clone();
            let started = std::thread::Builder::new()
                .name(self.shared.thread_name.clone())
                .spawn(move || shared.work());
            match started {
                Ok(_) => state.threads += 1,
                Err(err) if state.threads == 0 => {
                    // Nobody would ever run it: take it back.
                    state.queue.pop_back();
                    self.shared.queued.fetch_sub(1, Ordering::Release);
                    return Err(err);
                }
                // A thread that is alive will take it when it is done.
                Err(_) => {}
            }
        } else if state.queue.len() > self.shared.between_jobs.load(Ordering::Acquire) {
            // More jobs than finishing threads will take: wake a sleeping one.
            self.shared.wake.notify_one();
        }
        Ok(())
    }
}

impl Pool {
    /// Whether the last call ran for less than `within`.
    pub(crate) fn ran_within(&self, within: Duration) -> bool {
        self.shared.ran_within(within)
    }

    /// Whether the spins of this plugin's callers for their results pay off.
    pub(crate) fn caller_spin(&self) -> &Spin {
        &self.shared.caller_spin
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        self.shared.lock().closed = true;
        self.shared.wake.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs run outside the lock, so a poisoned lock only means a panic between two plain
        // updates of the counters: the state is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self, state: &mut State) -> Option<Job> {
        let job = state.queue.pop_front()?;
        self.queued.fetch_sub(1, Ordering::Release);
        Some(job)
    }

    /// ns since `epoch`, at least 1.
    fn since_epoch(&self, at: Instant) -> u64 {
        nanos(at.saturating_duration_since(self.epoch)).max(1)
    }

    /// Whether the last job ran for less than `within`: a caller may wait for its result
    /// that long without registering a waker.
    fn ran_within(&self, within: Duration) -> bool {
        self.last_run_ns.load(Ordering::Relaxed) < nanos(within)
    }

    /// A thread's life: run jobs until the pool is closed or nothing came for [`IDLE_EXIT`].
    fn work(&self) {
        let mut between_jobs = false;
        loop {
            let Some(job) = self.next(between_jobs) else {
                return;
            };
            let finishing = Finishing {
                shared: self,
                started: Instant::now(),
                announced: std::cell::Cell::new(false),
            };
            if catch_unwind(AssertUnwindSafe(|| job(&finishing))).is_err() {
                tracing::error!(thread = %self.thread_name, "a plugin job panicked");
            }
            // Counted in `between_jobs` until it takes the lock again in `next`.
            finishing.now();
            between_jobs = true;
        }
    }

    /// The next job, or `None` when this thread should end (and has been counted out).
    /// `between_jobs`: this thread is counted in `between_jobs`; it stops being counted under
    /// the lock, so that `submit` always sees it as between jobs or as idle, never as neither.
    fn next(&self, between_jobs: bool) -> Option<Job> {
        if between_jobs && self.back_to_back.load(Ordering::Relaxed) {
            // Still counted in `between_jobs`: `submit` does not wake anyone for a job that
            // comes now, this thread takes it below.
            let now = Instant::now();
            let until = now + self.wait.awake_for;
            let some =
                || self.queued.load(Ordering::Acquire) != 0 || self.closing.load(Ordering::Acquire);
            // First without a system call: a caller that calls again at once does so within a
            // few µs; then yielding the core in turns.
            let spun = now + self.wait.spin_for.min(self.wait.awake_for);
            if !self.thread_spin.until(spun, some) {
                while !some() && Instant::now() < until {
                    std::thread::yield_now();
                }
            }
        }
        let mut state = self.lock();
        if between_jobs {
            self.between_jobs.fetch_sub(1, Ordering::AcqRel);
        }
        loop {
            if let Some(job) = self.take(&mut state) {
                return Some(job);
            }
            if state.closed {
                state.threads -= 1;
                return None;
            }
            state.idle += 1;
            let (next, timeout) = self
                .wake
                .wait_timeout(state, IDLE_EXIT)
                .unwrap_or_else(PoisonError::into_inner);
            state = next;
            state.idle -= 1;
            if timeout.timed_out() && state.queue.is_empty() {
                state.threads -= 1;
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_submitted_job_runs_on_a_thread_named_after_the_plugin() {
        let pool = Pool::new("demo", 2);
        let (tx, rx) = mpsc::channel();
        pool.submit(Box::new(move |_: &Finishing| {
            let name = std::thread::current().name().map(str::to_string);
            tx.send(name).ok();
        }))
        .expect("submitted");
        let name = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the job ran");
        assert_eq!(name.as_deref(), Some("toolgate-plugin-demo"));
    }

    #[test]
    fn jobs_up_to_the_bound_run_at_the_same_time() {
        let pool = Pool::new("demo", 3);
        let barrier = Arc::new(std::sync::Barrier::new(3));
        let (tx, rx) = mpsc::channel();
        for _ in 0..3 {
            let barrier = barrier.clone();
            let tx = tx.clone();
            pool.submit(Box::new(move |_: &Finishing| {
                // Returns only once all three run at once.
                barrier.wait();
                tx.send(()).ok();
            }))
            .expect("submitted");
        }
        for _ in 0..3 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("all three jobs ran together");
        }
    }

    #[test]
    fn the_pool_starts_no_more_threads_than_its_bound() {
        let pool = Pool::new("demo", 2);
        let (tx, rx) = mpsc::channel();
        for _ in 0..6 {
            let tx = tx.clone();
            pool.submit(Box::new(move |_: &Finishing| {
                std::thread::sleep(Duration::from_millis(5));
                tx.send(std::thread::current().id()).ok();
            }))
            .expect("submitted");
        }
        let mut ids: Vec<_> = (0..6)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("job ran"))
            .collect();
        ids.sort_by_key(|id| format!("{id:?}"));
        ids.dedup();
        assert!(ids.len() <= 2, "{} threads ran the jobs", ids.len());
        assert!(pool.shared.lock().threads <= 2);
    }

    #[test]
    fn jobs_one_after_another_reuse_one_thread() {
        let pool = Pool::new("demo", 8);
        let (tx, rx) = mpsc::channel();
        for _ in 0..20 {
            let tx = tx.clone();
            pool.submit(Box::new(move |finishing: &Finishing| {
                finishing.now();
                tx.send(std::thread::current().id()).ok();
            }))
            .expect("submitted");
            rx.recv_timeout(Duration::from_secs(10)).expect("job ran");
        }
        assert_eq!(pool.shared.lock().threads, 1);
    }

    /// Runs one job on `pool` and waits for it.
    fn run_one(pool: &Pool) {
        let (tx, rx) = mpsc::channel();
        pool.submit(Box::new(move |finishing: &Finishing| {
            finishing.now();
            tx.send(()).ok();
        }))
        .expect("submitted");
        rx.recv_timeout(Duration::from_secs(10)).expect("job ran");
    }

    /// Whether the pool's one thread is asleep, waiting at most 10 s for it.
    fn falls_asleep(pool: &Pool) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if pool.shared.lock().idle == 1 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_thread_stays_awake_after_a_job_that_came_back_to_back() {
        let pool = Pool::with_wait(
            "demo",
            1,
            Wait {
                awake_for: Duration::from_secs(60),
                spin_for: Duration::ZERO,
                after_gap_below: Duration::from_secs(60),
            },
        );
        run_one(&pool);
        run_one(&pool);
        std::thread::sleep(Duration::from_millis(50));
        let state = pool.shared.lock();
        assert_eq!(
            (state.idle, pool.shared.between_jobs.load(Ordering::Acquire)),
            (0, 1),
            "the thread sleeps instead of watching the queue"
        );
    }

    #[test]
    fn a_thread_awake_after_a_job_takes_the_next_that_comes() {
        let pool = Pool::with_wait(
            "demo",
            4,
            Wait {
                awake_for: Duration::from_secs(60),
                spin_for: Duration::ZERO,
                after_gap_below: Duration::from_secs(60),
            },
        );
        for _ in 0..20 {
            run_one(&pool);
        }
        assert_eq!(pool.shared.lock().threads, 1);
    }

    #[test]
    fn a_thread_spinning_after_a_job_takes_the_next_that_comes() {
        let pool = Pool::with_wait(
            "demo",
            4,
            Wait {
                awake_for: Duration::from_secs(60),
                spin_for: Duration::from_secs(60),
                after_gap_below: Duration::from_secs(60),
            },
        );
        for _ in 0..20 {
            run_one(&pool);
        }
        assert_eq!(pool.shared.lock().threads, 1);
    }

    #[test]
    fn a_thread_spinning_after_a_job_sleeps_once_its_wait_is_over() {
        let pool = Pool::with_wait(
            "demo",
            1,
            Wait {
                awake_for: Duration::from_millis(5),
                spin_for: Duration::from_millis(5),
                after_gap_below: Duration::from_secs(60),
            },
        );
        run_one(&pool);
        run_one(&pool);
        assert!(falls_asleep(&pool), "the thread is still awake after 10 s");
    }

    #[test]
    fn a_thread_awake_after_a_job_sleeps_once_its_wait_is_over() {
        let pool = Pool::with_wait(
            "demo",
            1,
            Wait {
                awake_for: Duration::from_millis(5),
                spin_for: Duration::ZERO,
                after_gap_below: Duration::from_secs(60),
            },
        );
        run_one(&pool);
        run_one(&pool);
        assert!(falls_asleep(&pool), "the thread is still awake after 10 s");
    }

    #[test]
    fn a_thread_sleeps_at_once_after_a_job_that_came_after_a_pause() {
        let pool = Pool::with_wait(
            "demo",
            1,
            Wait {
                awake_for: Duration::from_secs(60),
                spin_for: Duration::ZERO,
                after_gap_below: Duration::from_millis(1),
            },
        );
        run_one(&pool);
        std::thread::sleep(Duration::from_millis(20));
        run_one(&pool);
        assert!(falls_asleep(&pool), "the thread is still awake after 10 s");
    }

    #[test]
    fn a_panicking_job_leaves_the_thread_able_to_run_the_next() {
        let pool = Pool::new("demo", 1);
        pool.submit(Box::new(|_: &Finishing| panic!("job panics")))
            .expect("submitted");
        let (tx, rx) = mpsc::channel();
        pool.submit(Box::new(move |_: &Finishing| {
            tx.send(()).ok();
        }))
        .expect("submitted");
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the next job ran");
    }
}
