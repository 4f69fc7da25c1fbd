//! The short waits that spare a plugin call its thread wake-ups when calls come back to back.
//!
//! Waking a sleeping thread costs far more than the call itself on a virtual machine whose
//! cores idle (about 28 µs for a bare park/unpark round trip between two threads on the machine
//! the plugin benches ran on). So the sides of a quick call that expect an answer soon watch
//! for it a short, bounded while before they sleep:
//!
//! - the caller ([`answer`]): a task waiting for a plugin call's result watches it for at most
//!   [`CALLER_WAIT`], and only when the plugin's last call was quick. It first spins for
//!   [`CALLER_SPIN`] ([`Spin`]: no system call, no turn of the runtime), then yields in turns.
//!   Each turn yields its thread ([`std::thread::yield_now`]), so that a plugin thread waiting
//!   for this core runs; on a current-thread runtime it also yields to the runtime
//!   ([`tokio::task::yield_now`]), which is cooperative: tokio hands the yielded task's waker
//!   back only after it has run its other ready tasks and polled its timer (and IO) driver
//!   without blocking, so the other tasks, timers (a call's timeout) and IO keep running while a
//!   call is waited on; a cancellation is seen at the next poll. (On a multi-thread runtime a
//!   task yielded to the runtime made an idle worker wake to steal it, 5-10x slower in the
//!   `plugin` bench: there the watch keeps its worker.) Past the bound the task sleeps until the
//!   result wakes it, as without the wait.
//! - a plugin thread that finished a call of a back-to-back run spins for the next for
//!   [`THREAD_SPIN`], then yields its core in turns (`pool`).
//! - a thread reading a pipe: the process worker's reader thread watches the worker's output
//!   while calls are hot ([`worker_pace`]), as the worker watches its input; both use
//!   `toolgate_plugin_api::worker::pace`, which owns the pace and the watch.
//!
//! Why spin first, and why a spin that missed turns spinning off for a while ([`Spin`]):
//! measured with `perf stat` on 20,000 `echo` calls of 1 KB from a current-thread runtime
//! (`plugin_echo_1kb`'s loop, load 5.7 on 2 cores: the other core busy with builds, so the
//! caller and the plugin's thread shared one), the earlier watch (runtime turns only, the plugin
//! thread yielding) kept the plugin thread off the caller's core for the whole 50 µs watch,
//! then both slept: 107-124 µs a call, 2.2 futex calls and 2.2 context switches a call, 67 µs of
//! CPU a call. Spinning 5 µs, then yielding the thread each turn, with spins turned off after
//! one that missed: 16.4-17.4 µs a call, 0.01 futex calls a call, 9 µs of CPU a call. A spin
//! that missed once costs 5-10 µs in 65 calls. In criterion at the same load, interleaved,
//! `plugin_echo_1kb` went from 95-116 µs to 11-14 µs (native 1.5-2.1 µs); the multi-thread pair
//! stayed within the noise (37-65 µs before, 42-50 µs after, one outlier at 110; native 14-20
//! µs). With a free core each side finds the other's answer within its spin (a 1 KB echo runs
//! in 2-3 µs; the caller calls again 2-3 µs after a result), so a call makes no system call:
//! on a quiet machine (load 2.2, two runs) `plugin_echo_1kb` took 3.54 and 3.48 µs against
//! 1.00 and 0.99 µs native (+2.5 µs; 9.3 µs before, +7.1-7.8), the multi-thread pair 14.5 and
//! 17.1 µs against 20.6 and 28.1 µs native (that baseline's own runtime hop dominates it), and
//! `process/echo_1kb` 14.1 and 12.3 µs (17.8-26.0 before).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use toolgate_plugin_api::worker::pace::{self as worker, Pace};

/// How long a caller watches for the result of a call expected to be quick (the plugin's last
/// call took less) before it sleeps until woken: a result that comes within it costs no
/// wake-up of the caller's thread. At most this much later than without the wait does the
/// caller's task sleep; timers, IO, other tasks and cancellation are served meanwhile.
pub(crate) const CALLER_WAIT: Duration = Duration::from_micros(50);

/// The result sent on `outcome`, or `None` if its sender was dropped without sending. With
/// `quick` (the plugin's spin gauge for its callers), first watches it for up to
/// [`CALLER_WAIT`]: spinning ([`Spin`]), then yielding in turns.
pub(crate) async fn answer<T>(outcome: oneshot::Receiver<T>, quick: Option<&Spin>) -> Option<T> {
    match quick {
        Some(spin) => answer_watching(outcome, CALLER_WAIT, spin).await,
        None => outcome.await.ok(),
    }
}

/// [`answer`], watching for up to `watch`: spinning for its first [`CALLER_SPIN`] (as `spin`
/// allows), then yielding.
async fn answer_watching<T>(
    mut outcome: oneshot::Receiver<T>,
    watch: Duration,
    spin: &Spin,
) -> Option<T> {
    // On a multi-thread runtime a yielded task is handed to the scheduler, which wakes an idle
    // worker to steal it: in the `plugin` bench that made calls 5-10x slower than the hop
    // baseline. There the watch blocks its worker instead (other workers run the other tasks).
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if !watch.is_zero() {
        let started = Instant::now();
        let until = started + watch;
        // First without a system call nor a turn of the runtime: a quick call's result comes
        // within a few µs, before one turn (driver, timers, the caller's `select!`) would end.
        spin.until(started + CALLER_SPIN.min(watch), || !outcome.is_empty());
        loop {
            match outcome.try_recv() {
                Ok(got) => return Some(got),
                // A receiver that answered this must not be awaited.
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) if Instant::now() < until => {
                    // Lets the plugin's thread run if it waits for this core: a spin or a turn
                    // of the runtime alone would keep it off until the caller sleeps.
                    std::thread::yield_now();
                    if !multi_thread {
                        tokio::task::yield_now().await;
                    }
                }
                Err(oneshot::error::TryRecvError::Empty) => break,
            }
        }
    }
    outcome.await.ok()
}

/// How long a caller expecting a quick result spins for it ([`spin_until`]) before it yields:
/// the longest it holds its thread without letting its runtime run. Longer than a quick call's
/// hand-off and run (2-3 µs for `echo` of 1 KB), far shorter than a thread wake-up.
pub(crate) const CALLER_SPIN: Duration = Duration::from_micros(5);

/// How long a plugin thread that finished a call of a back-to-back run spins for the next
/// ([`spin_until`]) before it yields its core in turns (`pool::Wait`).
pub(crate) const THREAD_SPIN: Duration = Duration::from_micros(10);

/// Whether one side's spins pay off. A spin that runs its course in vain means the other side
/// had no core to run on (it waits for the spinner's, which a spin does not give up) or takes
/// longer than a spin: the next [`SKIPS_AFTER_A_MISS`] waits then go straight to yielding.
#[derive(Debug, Default)]
pub(crate) struct Spin {
    skips: AtomicU32,
}

/// How many waits skip their spin after one that missed.
pub(crate) const SKIPS_AFTER_A_MISS: u32 = 64;

impl Spin {
    /// [`spin_until`], unless a recent spin missed: then only checks `ready` once.
    pub(crate) fn until(&self, until: Instant, mut ready: impl FnMut() -> bool) -> bool {
        let skips = self.skips.load(Ordering::Relaxed);
        if skips > 0 {
            self.skips.store(skips - 1, Ordering::Relaxed);
            return ready();
        }
        let got = spin_until(until, ready);
        if !got {
            self.skips.store(SKIPS_AFTER_A_MISS, Ordering::Relaxed);
        }
        got
    }
}

/// Checks `ready` with the core paused between checks ([`std::hint::spin_loop`]), without a
/// system call, until it holds or `until` passes; whether it held. The clock is read every
/// [`SPINS_PER_CLOCK_READ`] checks.
pub(crate) fn spin_until(until: Instant, mut ready: impl FnMut() -> bool) -> bool {
    let mut spins: u32 = 0;
    loop {
        if ready() {
            return true;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(SPINS_PER_CLOCK_READ) && Instant::now() >= until {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// Checks between two readings of the clock in [`spin_until`] (a pause is ~10-60 ns).
const SPINS_PER_CLOCK_READ: u32 = 16;

/// The pace of a process worker's calls ([`Pace`]): a call that begins within
/// [`worker::BACK_TO_BACK`] of the previous result, after a call whose round trip took less
/// than [`QUICK_ROUND_TRIP`], is hot: its caller and the reader thread watch for its result
/// (the reader for up to [`worker::WATCH`] after the call was sent or a result came).
pub(crate) fn worker_pace() -> Pace {
    Pace::new(worker::WATCH, worker::BACK_TO_BACK, QUICK_ROUND_TRIP)
}

/// A call whose sending and result were at most this far apart is quick. Larger than
/// [`CALLER_WAIT`]: the first calls of a run, whose reader is still woken, take longer
/// than the ones that follow.
const QUICK_ROUND_TRIP: Duration = Duration::from_micros(500);

#[cfg(test)]
mod tests {
    use super::*;

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    }

    /// Longer than any test waits: a wait that did not let the runtime run would still be
    /// watching when the test gives up.
    const LONG_WATCH: Duration = Duration::from_secs(60);

    /// Generous: how long a test waits for what should come at once.
    const WAIT: Duration = Duration::from_secs(20);

    #[test]
    fn another_task_of_a_current_thread_runtime_runs_while_a_call_is_watched_for() {
        let rt = current_thread();
        let got = rt.block_on(async {
            let (done, outcome) = oneshot::channel::<u8>();
            // On a current-thread runtime it runs only when the watching task lets it.
            tokio::spawn(async move {
                let _ = done.send(7);
            });
            tokio::time::timeout(WAIT, answer_watching(outcome, LONG_WATCH, &Spin::default())).await
        });
        assert_eq!(got.ok().flatten(), Some(7));
    }

    #[test]
    fn a_timer_of_a_current_thread_runtime_fires_while_a_call_is_watched_for() {
        let rt = current_thread();
        let got = rt.block_on(async {
            let (done, outcome) = oneshot::channel::<u8>();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = done.send(9);
            });
            tokio::time::timeout(WAIT, answer_watching(outcome, LONG_WATCH, &Spin::default())).await
        });
        assert_eq!(got.ok().flatten(), Some(9));
    }

    #[test]
    fn a_timeout_ends_the_watch_for_a_call() {
        let rt = current_thread();
        let (_done, outcome) = oneshot::channel::<u8>();
        let started = Instant::now();
        let timed_out = rt.block_on(async {
            tokio::time::timeout(
                Duration::from_millis(20),
                answer_watching(outcome, LONG_WATCH, &Spin::default()),
            )
            .await
            .is_err()
        });
        assert!(timed_out);
        assert!(
            started.elapsed() < WAIT,
            "the timeout was seen only after the watch"
        );
    }

    #[test]
    fn a_cancellation_ends_the_watch_for_a_call() {
        let rt = current_thread();
        let (_done, outcome) = oneshot::channel::<u8>();
        let cancel = tokio_util::sync::CancellationToken::new();
        let started = Instant::now();
        let cancelled = rt.block_on(async {
            let token = cancel.clone();
            let spin = Spin::default();
            tokio::spawn(async move { token.cancel() });
            tokio::select! {
                biased;
                () = cancel.cancelled() => true,
                _ = answer_watching(outcome, LONG_WATCH, &spin) => false,
            }
        });
        assert!(cancelled);
        assert!(
            started.elapsed() < WAIT,
            "the cancellation was seen only after the watch"
        );
    }

    #[test]
    fn a_result_sent_during_the_watch_on_a_multi_thread_runtime_reaches_the_caller() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a multi-thread runtime");
        let got = rt.block_on(async {
            let (done, outcome) = oneshot::channel::<u8>();
            let sender = std::thread::spawn(move || {
                let _ = done.send(5);
            });
            let waiter = tokio::spawn(async move {
                answer_watching(outcome, LONG_WATCH, &Spin::default()).await
            });
            let got = tokio::time::timeout(WAIT, waiter).await;
            sender.join().ok();
            got
        });
        assert_eq!(got.ok().and_then(Result::ok).flatten(), Some(5));
    }

    #[test]
    fn a_spin_ends_as_soon_as_what_it_waits_for_holds() {
        let mut checks = 0;
        let got = Spin::default().until(Instant::now() + LONG_WATCH, || {
            checks += 1;
            checks == 3
        });
        assert_eq!((got, checks), (true, 3));
    }

    #[test]
    fn a_spin_gives_up_at_its_deadline() {
        let until = Instant::now() + Duration::from_millis(1);
        assert!(!Spin::default().until(until, || false));
        assert!(Instant::now() >= until);
    }

    /// How many times a spin of `spin` checks a condition that never holds, for up to 1 ms.
    fn checks_of_a_vain_spin(spin: &Spin) -> u32 {
        let mut checks = 0;
        spin.until(Instant::now() + Duration::from_millis(1), || {
            checks += 1;
            false
        });
        checks
    }

    #[test]
    fn the_waits_after_a_spin_that_missed_check_once_without_spinning() {
        let spin = Spin::default();
        checks_of_a_vain_spin(&spin);
        let next: Vec<u32> = (0..SKIPS_AFTER_A_MISS)
            .map(|_| checks_of_a_vain_spin(&spin))
            .collect();
        assert_eq!(next, vec![1; SKIPS_AFTER_A_MISS as usize]);
    }

    #[test]
    fn a_wait_spins_again_once_the_skips_after_a_miss_are_used_up() {
        let spin = Spin::default();
        for _ in 0..=SKIPS_AFTER_A_MISS {
            checks_of_a_vain_spin(&spin);
        }
        assert!(checks_of_a_vain_spin(&spin) > 1);
    }

    #[test]
    fn a_spin_that_pays_off_leaves_the_next_wait_spinning() {
        let spin = Spin::default();
        assert!(spin.until(Instant::now() + LONG_WATCH, || true));
        assert!(checks_of_a_vain_spin(&spin) > 1);
    }

    #[test]
    fn a_dropped_sender_ends_the_wait_with_an_error() {
        let rt = current_thread();
        let (done, outcome) = oneshot::channel::<u8>();
        drop(done);
        assert_eq!(rt.block_on(answer(outcome, Some(&Spin::default()))), None);
    }

    #[test]
    fn a_result_sent_after_the_watch_still_reaches_the_caller() {
        let rt = current_thread();
        let (done, outcome) = oneshot::channel::<u8>();
        let sender = std::thread::spawn(move || {
            // Well past CALLER_WAIT: the caller has stopped watching by then.
            std::thread::sleep(Duration::from_millis(50));
            let _ = done.send(3);
        });
        assert_eq!(
            rt.block_on(answer(outcome, Some(&Spin::default()))),
            Some(3)
        );
        sender.join().ok();
    }
}
