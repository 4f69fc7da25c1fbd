//! A plugin's own threads: the blocking C calls of one plugin run here instead of on tokio's
//! blocking pool.
//!
//! A [`Pool`] starts threads lazily, up to its bound, and keeps them: a call is handed to an
//! idle thread through a queue, without spawning a task or a thread per call. A thread that
//! has just finished a call takes the next one if it is already queued, and otherwise sleeps
//! at once: it does not spin waiting for one (on a machine with few cores and other work,
//! a spinning thread takes the core the caller needs to finish its call and send the next;
//! measured in `engine/benches/guard.rs`, `plugin` group, spinning 50 µs made calls 2-10x
//! slower). A thread idle for [`IDLE_EXIT`] ends; the pool starts another when it needs one.
//!
//! The pool does not bound anything itself: the plugin's thread permits (`max_threads`) are
//! taken before a job is submitted and released by the job when the plugin returns, so at most
//! that many jobs exist at once and each finds a thread. The pool's bound equals the permits'.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a thread with nothing to do stays before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(30);

/// One unit of work: a plugin call and the sending of its result. It calls
/// [`Finishing::now`] just before it sends the result, so that the caller's next job, which may
/// come right after, finds this thread ready instead of starting another.
pub(crate) type Job = Box<dyn FnOnce(&Finishing) + Send + 'static>;

/// Given to a job: lets it say its thread is about to be free.
pub(crate) struct Finishing<'a> {
    between_jobs: &'a AtomicUsize,
    announced: std::cell::Cell<bool>,
}

impl Finishing<'_> {
    /// The job is done but for sending its result: count the thread as available.
    pub(crate) fn now(&self) {
        if !self.announced.replace(true) {
            self.between_jobs.fetch_add(1, Ordering::AcqRel);
        }
    }
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
        Pool {
            shared: Arc::new(Shared {
                thread_name: format!("toolgate-plugin-{plugin}"),
                max_threads: max_threads.max(1),
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                between_jobs: AtomicUsize::new(0),
            }),
        }
    }

    /// Runs `job` on one of the pool's threads. A panic in it is caught and logged (the job
    /// should catch its own). Fails only if no thread can be started at all.
    pub(crate) fn submit(&self, job: Job) -> std::io::Result<()> {
        let mut state = self.shared.lock();
        state.queue.push_back(job);
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

impl Drop for Pool {
    fn drop(&mut self) {
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
        state.queue.pop_front()
    }

    /// A thread's life: run jobs until the pool is closed or nothing came for [`IDLE_EXIT`].
    fn work(&self) {
        let mut between_jobs = false;
        loop {
            let Some(job) = self.next(between_jobs) else {
                return;
            };
            let finishing = Finishing {
                between_jobs: &self.between_jobs,
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
