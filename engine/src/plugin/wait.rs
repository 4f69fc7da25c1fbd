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
//! - a thread reading a pipe ([`readable_within`]): it polls the pipe without blocking,
//!   yielding its core between polls, until data is there or its bound has passed, then reads
//!   (and blocks, if nothing came). The process worker's host side uses it for the worker's
//!   output; the worker does the same with its input (`toolgate_plugin_api::worker`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

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
    if !watch.is_zero() && multi_thread {
        let until = Instant::now() + watch;
        loop {
            match outcome.try_recv() {
                Ok(got) => return Some(got),
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) if Instant::now() < until => {
                    std::thread::yield_now();
                }
                Err(oneshot::error::TryRecvError::Empty) => break,
            }
        }
    } else if !watch.is_zero() {
        let until = Instant::now() + watch;
        loop {
            match outcome.try_recv() {
                Ok(got) => return Some(got),
                // A receiver that answered this must not be awaited.
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) if Instant::now() < until => {
                    tokio::task::yield_now().await;
                }
                Err(oneshot::error::TryRecvError::Empty) => break,
            }
        }
    }
    outcome.await.ok()
}

/// Whether `fd` has something to read (or has ended) before `until`: polls it without blocking,
/// yielding the core between polls. Returns at once, with `false`, when `until` has passed.
#[cfg(unix)]
pub(crate) fn readable_within(fd: std::os::fd::BorrowedFd<'_>, until: Instant) -> bool {
    use std::os::fd::AsRawFd;
    loop {
        let mut pollfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a descriptor borrowed for the call, a zero timeout.
        let ready = unsafe { libc::poll(&mut pollfd, 1, 0) };
        // Readable, ended (POLLHUP) or broken (POLLERR): a read returns at once.
        if ready != 0 {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::yield_now();
    }
}

/// The pace of a process worker's calls: whether they come back to back, and are quick. Times are ns
/// since the worker started, 0 for never.
#[derive(Default)]
pub(crate) struct Pace {
    /// When the last call was sent.
    sent_ns: AtomicU64,
    /// When the last result was handed to its caller.
    answered_ns: AtomicU64,
    /// How long the last call took from its sending to its result.
    round_trip_ns: AtomicU64,
    /// Whether the last call was sent within [`BACK_TO_BACK`] of the result before.
    back_to_back: AtomicBool,
}

/// A call sent within this of the previous result comes back to back: the reader and the
/// caller of such a call, if the last call was quick, watch for its result before they sleep.
const BACK_TO_BACK: Duration = Duration::from_micros(200);

/// A call whose sending and result were at most this far apart is quick. Larger than
/// [`CALLER_WAIT`]: the first calls of a run, whose reader is still woken, take longer
/// than the ones that follow.
const QUICK_ROUND_TRIP: Duration = Duration::from_micros(500);

/// How long the reader watches the worker's output after a call was sent or a result came,
/// while calls are back to back and quick.
pub(crate) const READER_WAIT: Duration = CALLER_WAIT;

impl Pace {
    /// Notes a call sent at `now`; answers whether its caller should watch for its result
    /// (it comes back to back after a quick call).
    pub(crate) fn sent(&self, now: u64) -> bool {
        let answered = self.answered_ns.load(Ordering::Relaxed);
        let back_to_back = answered != 0 && now.saturating_sub(answered) < nanos(BACK_TO_BACK);
        self.back_to_back.store(back_to_back, Ordering::Relaxed);
        self.sent_ns.store(now, Ordering::Relaxed);
        back_to_back && self.round_trip_ns.load(Ordering::Relaxed) < nanos(QUICK_ROUND_TRIP)
    }

    /// Notes the result, at `now`, of a call sent at `sent`.
    pub(crate) fn answered(&self, sent: u64, now: u64) {
        self.round_trip_ns
            .store(now.saturating_sub(sent), Ordering::Relaxed);
        self.answered_ns.store(now, Ordering::Relaxed);
    }

    /// Until when the reader watches the output before it blocks: [`READER_WAIT`] after the
    /// last call was sent or the last result came, whichever is later, while calls come back
    /// to back and are quick; `None` otherwise.
    pub(crate) fn watch_until(&self) -> Option<u64> {
        let hot = self.back_to_back.load(Ordering::Relaxed)
            && self.round_trip_ns.load(Ordering::Relaxed) < nanos(QUICK_ROUND_TRIP);
        let last = self
            .sent_ns
            .load(Ordering::Relaxed)
            .max(self.answered_ns.load(Ordering::Relaxed));
        (hot && last != 0).then(|| last.saturating_add(nanos(READER_WAIT)))
    }
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

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

    #[cfg(unix)]
    #[test]
    fn a_pipe_with_data_is_readable_at_once() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let (reader, mut writer) = std::io::pipe().expect("a pipe");
        writer.write_all(b"x").expect("written");
        assert!(readable_within(
            reader.as_fd(),
            Instant::now() + Duration::from_secs(60)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn an_empty_pipe_is_not_readable_once_the_bound_has_passed() {
        use std::os::fd::AsFd;
        let (reader, _writer) = std::io::pipe().expect("a pipe");
        assert!(!readable_within(
            reader.as_fd(),
            Instant::now() + Duration::from_millis(1)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_whose_writer_is_gone_is_readable() {
        use std::os::fd::AsFd;
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(writer);
        assert!(readable_within(
            reader.as_fd(),
            Instant::now() + Duration::from_secs(60)
        ));
    }

    const US: u64 = 1_000;

    #[test]
    fn a_call_after_a_pause_is_not_watched_for() {
        let pace = Pace::default();
        assert!(!pace.sent(1_000 * US));
        pace.answered(1_000 * US, 1_030 * US);
        // 10 ms later.
        assert!(!pace.sent(11_030 * US));
        assert_eq!(pace.watch_until(), None);
    }

    #[test]
    fn a_quick_call_back_to_back_is_watched_for_until_the_bound_after_its_sending() {
        let pace = Pace::default();
        pace.sent(1_000 * US);
        pace.answered(1_000 * US, 1_030 * US);
        assert!(pace.sent(1_050 * US), "its caller does not watch");
        assert_eq!(pace.watch_until(), Some(1_050 * US + nanos(READER_WAIT)));
    }

    #[test]
    fn the_watch_after_a_result_lasts_the_bound_after_it() {
        let pace = Pace::default();
        pace.sent(1_000 * US);
        pace.answered(1_000 * US, 1_030 * US);
        pace.sent(1_050 * US);
        pace.answered(1_050 * US, 1_080 * US);
        assert_eq!(pace.watch_until(), Some(1_080 * US + nanos(READER_WAIT)));
    }

    #[test]
    fn a_call_back_to_back_after_a_slow_one_is_not_watched_for() {
        let pace = Pace::default();
        pace.sent(1_000 * US);
        pace.answered(1_000 * US, 5_000 * US);
        assert!(!pace.sent(5_050 * US));
        assert_eq!(pace.watch_until(), None);
    }
}
