//! The worker's input, and its short watch between back-to-back calls: [`Pace`] says whether
//! calls come back to back and quick, [`Input::watch`] polls the input pipe meanwhile, and
//! [`take`] tries the input's lock instead of sleeping on it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use std::io::{self, Read};

/// The host's frames, read by one thread at a time.
pub(super) struct Input {
    pub(super) reader: io::BufReader<Box<dyn Read + Send>>,
    /// The input's descriptor, when it has one: the reader watches it (see `Calls`).
    #[cfg(unix)]
    pub(super) fd: Option<std::os::fd::RawFd>,
    /// The input ended (or broke): the threads that come to read stop.
    pub(super) ended: bool,
}

impl Input {
    pub(super) fn new(reader: Box<dyn Read + Send>) -> Input {
        Input {
            // A frame's length and body in one read, instead of two.
            reader: io::BufReader::with_capacity(64 * 1024, reader),
            #[cfg(unix)]
            fd: None,
            ended: false,
        }
    }
}

/// How long, at most, the next reader watches the input for a call after the last call was
/// read or answered, while calls come back to back and are quick (see `serve_pipe_confined`).
pub const WATCH: Duration = Duration::from_micros(50);

/// A call read within this of the previous answer comes back to back.
const BACK_TO_BACK: Duration = Duration::from_micros(200);

/// The pace of the calls: whether they come back to back, and are quick. Times are ns since
/// `epoch`, 0 for never.
pub(super) struct Pace {
    epoch: Instant,
    /// How long the watch lasts after the last call was read or answered ([`WATCH`]).
    watch: Duration,
    /// A call read within this of the previous answer comes back to back ([`BACK_TO_BACK`]).
    back_to_back_within: Duration,
    /// When the last call was read.
    read_ns: AtomicU64,
    /// When the last call was answered.
    answered_ns: AtomicU64,
    /// How long the last call ran.
    run_ns: AtomicU64,
    /// Whether the last call was read within [`BACK_TO_BACK`] of the answer before.
    back_to_back: AtomicBool,
}

impl Default for Pace {
    fn default() -> Self {
        Pace::new(WATCH, BACK_TO_BACK)
    }
}

impl Pace {
    fn new(watch: Duration, back_to_back_within: Duration) -> Pace {
        Pace {
            epoch: Instant::now(),
            watch,
            back_to_back_within,
            read_ns: AtomicU64::new(0),
            answered_ns: AtomicU64::new(0),
            run_ns: AtomicU64::new(u64::MAX),
            back_to_back: AtomicBool::new(false),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Pace {
    /// ns since `epoch`, at least 1.
    pub(super) fn now(&self) -> u64 {
        nanos(self.epoch.elapsed()).max(1)
    }

    /// Notes a call read at `now`.
    pub(super) fn read(&self, now: u64) {
        let answered = self.answered_ns.load(Ordering::Relaxed);
        self.back_to_back.store(
            answered != 0 && now.saturating_sub(answered) < nanos(self.back_to_back_within),
            Ordering::Relaxed,
        );
        self.read_ns.store(now, Ordering::Relaxed);
    }

    /// Notes the answer, at `now`, of a call read at `read`.
    pub(super) fn answered(&self, read: u64, now: u64) {
        self.run_ns
            .store(now.saturating_sub(read), Ordering::Relaxed);
        self.answered_ns.store(now, Ordering::Relaxed);
    }

    /// Until when (ns) a thread that wants the next frame stays awake for it: `watch` after the
    /// last call was read or answered, whichever is later, while calls come back to back and
    /// the last one ran for less than `watch`; `None` otherwise.
    pub(super) fn watch_until(&self) -> Option<u64> {
        let hot = self.back_to_back.load(Ordering::Relaxed)
            && self.run_ns.load(Ordering::Relaxed) < nanos(self.watch);
        let last = self
            .read_ns
            .load(Ordering::Relaxed)
            .max(self.answered_ns.load(Ordering::Relaxed));
        (hot && last != 0).then(|| last.saturating_add(nanos(self.watch)))
    }

    /// Whether the watch is still on.
    pub(super) fn watching(&self) -> bool {
        self.watch_until().is_some_and(|until| self.now() < until)
    }
}

impl Input {
    /// Watches the input, without reading it, until a frame is there or `pace` says the
    /// watch is over; returns at once if a frame is already buffered or the input has no
    /// descriptor.
    pub(super) fn watch(&self, pace: &Pace) {
        #[cfg(unix)]
        if let Some(fd) = self.fd
            && self.reader.buffer().is_empty()
        {
            while pace.watching() {
                let mut pollfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd on the input's descriptor, open while `self` is; a
                // zero timeout.
                if unsafe { libc::poll(&mut pollfd, 1, 0) } != 0 {
                    // Readable, ended or broken: the read returns at once.
                    return;
                }
                std::thread::yield_now();
            }
        }
        #[cfg(not(unix))]
        let _ = pace;
    }
}

/// `input`, once no other thread holds it; tried in turns, yielding, while `pace` watches.
pub(super) fn take<'a>(input: &'a Mutex<Input>, pace: &Pace) -> std::sync::MutexGuard<'a, Input> {
    while pace.watching() {
        match input.try_lock() {
            Ok(input) => return input,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
    input.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    const US: u64 = 1_000;

    /// Generous: how long a test waits for what should come at once.
    const WAIT: Duration = Duration::from_secs(20);

    /// A pace whose calls come back to back, quick, the last one answered just now; its
    /// watch lasts `watch`.
    fn hot(watch: Duration) -> Arc<Pace> {
        let pace = Pace::new(watch, Duration::from_secs(3600));
        let now = pace.now();
        pace.read(now);
        pace.answered(now, now);
        pace.read(pace.now());
        pace.answered(now, pace.now());
        assert!(pace.watching());
        Arc::new(pace)
    }

    /// Runs `f` on another thread; whether it returned within [`WAIT`].
    fn returns(f: impl FnOnce() + Send + 'static) -> bool {
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            f();
            let _ = done.send(());
        });
        returned.recv_timeout(WAIT).is_ok()
    }

    #[cfg(unix)]
    fn input_on(reader: io::PipeReader) -> Input {
        use std::os::fd::AsRawFd;
        let fd = reader.as_raw_fd();
        let mut input = Input::new(Box::new(reader));
        input.fd = Some(fd);
        input
    }

    #[cfg(unix)]
    #[test]
    fn a_watch_on_an_input_that_stays_empty_ends_with_its_bound() {
        let (reader, writer) = io::pipe().expect("a pipe");
        let pace = hot(Duration::from_millis(5));
        assert!(returns(move || input_on(reader).watch(&pace)));
        drop(writer);
    }

    #[cfg(unix)]
    #[test]
    fn a_watch_ends_when_a_frame_comes_before_its_bound() {
        let (reader, mut writer) = io::pipe().expect("a pipe");
        // Longer than the test waits: only the frame can end the watch in time.
        let pace = hot(Duration::from_secs(3600));
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            writer.write_all(b"frame").expect("written");
            writer
        });
        assert!(returns(move || input_on(reader).watch(&pace)));
        drop(sender.join());
    }

    #[test]
    fn a_thread_waiting_for_the_input_during_a_watch_gets_it_when_it_is_let_go() {
        let (reader, _writer) = io::pipe().expect("a pipe");
        let calls = Arc::new(Mutex::new(Input::new(Box::new(reader))));
        let pace = hot(Duration::from_secs(3600));
        let held = calls.lock().expect("the input");
        let other = calls.clone();
        let taken = std::thread::spawn(move || {
            let (done, returned) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                drop(take(&other, &pace));
                let _ = done.send(());
            });
            returned.recv_timeout(WAIT).is_ok()
        });
        std::thread::sleep(Duration::from_millis(10));
        drop(held);
        assert!(taken.join().expect("joined"));
    }

    #[test]
    fn the_first_call_starts_no_watch() {
        let pace = Pace::default();
        pace.read(1_000 * US);
        assert_eq!(pace.watch_until(), None);
    }

    #[test]
    fn a_call_after_a_pause_starts_no_watch() {
        let pace = Pace::default();
        pace.read(1_000 * US);
        pace.answered(1_000 * US, 1_005 * US);
        // 10 ms later: not back to back.
        pace.read(11_005 * US);
        assert_eq!(pace.watch_until(), None);
    }

    #[test]
    fn a_quick_call_back_to_back_is_watched_for_until_its_bound_after_the_answer() {
        let pace = Pace::default();
        pace.read(1_000 * US);
        pace.answered(1_000 * US, 1_005 * US);
        pace.read(1_020 * US);
        pace.answered(1_020 * US, 1_025 * US);
        assert_eq!(pace.watch_until(), Some(1_025 * US + nanos(WATCH)));
    }

    #[test]
    fn a_call_back_to_back_after_a_slow_one_starts_no_watch() {
        let pace = Pace::default();
        pace.read(1_000 * US);
        pace.answered(1_000 * US, 2_000 * US);
        pace.read(2_010 * US);
        assert_eq!(pace.watch_until(), None);
    }
}
