//! The short waits that spare a plugin call its thread wake-ups when calls come back to back.
//!
//! Waking a sleeping thread costs far more than the call itself on a virtual machine whose
//! cores idle (about 28 µs for a bare park/unpark round trip between two threads on the machine
//! the plugin benches ran on). So the sides of a quick call that expect an answer soon watch
//! for it a short, bounded while before they sleep:
//!
//! - the caller ([`answer`]): a task waiting for a plugin call's result tries the result, then
//!   yields, for at most [`CALLER_WAIT`], and only when the plugin's last call was quick. On a
//!   multi-thread runtime it yields its thread (the other workers run the other tasks; a
//!   yielded task made an idle worker wake to steal it, 5-10x slower in the `plugin` bench). On
//!   a current-thread runtime it yields to the runtime ([`tokio::task::yield_now`]), which is
//!   cooperative: tokio hands the yielded
//!   task's waker back only after it has run its other ready tasks and polled its IO and timer
//!   driver without blocking, so on a current-thread runtime the other tasks, timers (a call's
//!   timeout) and IO keep running while a call is waited on; a cancellation is seen at the next
//!   poll. Past the bound the task sleeps until the result wakes it, as without the wait.
//! - a thread reading a pipe: the process worker's reader thread watches the worker's output
//!   while calls are hot ([`worker_pace`]), as the worker watches its input; both use
//!   `toolgate_plugin_api::worker::pace`, which owns the pace and the watch.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use toolgate_plugin_api::worker::pace::{self as worker, Pace};

/// How long a caller watches for the result of a call expected to be quick (the plugin's last
/// call took less) before it sleeps until woken: a result that comes within it costs no
/// wake-up of the caller's thread. At most this much later than without the wait does the
/// caller's task sleep; timers, IO, other tasks and cancellation are served meanwhile.
pub(crate) const CALLER_WAIT: Duration = Duration::from_micros(50);

/// The result sent on `outcome`, or `None` if its sender was dropped without sending. With
/// `quick`, first tries it and yields to the runtime in turns for up to [`CALLER_WAIT`].
pub(crate) async fn answer<T>(outcome: oneshot::Receiver<T>, quick: bool) -> Option<T> {
    let watch = if quick { CALLER_WAIT } else { Duration::ZERO };
    answer_watching(outcome, watch).await
}

/// [`answer`], watching for up to `watch`.
async fn answer_watching<T>(mut outcome: oneshot::Receiver<T>, watch: Duration) -> Option<T> {
    // On a multi-thread runtime a yielded task is handed to the scheduler, which wakes an idle
    // worker to steal it: in the `plugin` bench that made calls 5-10x slower than the hop
    // baseline. There the watch blocks its worker instead (other workers run the other tasks).
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if !watch.is_zero() {
        let until = Instant::now() + watch;
        loop {
            match outcome.try_recv() {
                Ok(got) => return Some(got),
                // A receiver that answered this must not be awaited.
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) if Instant::now() < until => {
                    if multi_thread {
                        std::thread::yield_now();
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
                Err(oneshot::error::TryRecvError::Empty) => break,
            }
        }
    }
    outcome.await.ok()
}

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
            tokio::time::timeout(WAIT, answer_watching(outcome, LONG_WATCH)).await
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
            tokio::time::timeout(WAIT, answer_watching(outcome, LONG_WATCH)).await
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
                answer_watching(outcome, LONG_WATCH),
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
            tokio::spawn(async move { token.cancel() });
            tokio::select! {
                biased;
                () = cancel.cancelled() => true,
                _ = answer_watching(outcome, LONG_WATCH) => false,
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
            let waiter = tokio::spawn(answer_watching(outcome, LONG_WATCH));
            let got = tokio::time::timeout(WAIT, waiter).await;
            sender.join().ok();
            got
        });
        assert_eq!(got.ok().and_then(Result::ok).flatten(), Some(5));
    }

    #[test]
    fn a_dropped_sender_ends_the_wait_with_an_error() {
        let rt = current_thread();
        let (done, outcome) = oneshot::channel::<u8>();
        drop(done);
        assert_eq!(rt.block_on(answer(outcome, true)), None);
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
        assert_eq!(rt.block_on(answer(outcome, true)), Some(3));
        sender.join().ok();
    }
}
