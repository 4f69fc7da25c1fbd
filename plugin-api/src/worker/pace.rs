//! The pace of a stream of calls over a pipe, and the short watch between back-to-back calls
//! that spares each call its thread wake-ups.
//!
//! Waking a sleeping thread costs far more than a quick call on a virtual machine whose cores
//! idle (about 28 µs for a bare park/unpark round trip between two threads on the machine the
//! plugin benches ran on). So while calls come back to back and are quick ([`Pace`]), the
//! thread that expects the next frame polls its pipe for a short, bounded while
//! ([`Pace::watch_fd`], [`readable_within`]) before it sleeps in `read`. Both ends of a process
//! worker's pipe use it: the worker for its input (`Input::watch`, and `take` tries the
//! input's lock instead of sleeping on it), the engine's reader thread for the worker's output.
//! A lone call, or one after a pause, finds every thread asleep as without the watch.

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

/// How long, at most, a thread watches its pipe for the next frame after the last call began
/// or ended, while calls come back to back and are quick.
pub const WATCH: Duration = Duration::from_micros(50);

/// A call that begins within this of the previous call's end comes back to back.
pub const BACK_TO_BACK: Duration = Duration::from_micros(200);

/// The pace of a stream of calls: whether they come back to back, and are quick. Times are
/// ns since the pace was made ([`Pace::now`]), 0 for never. The worker notes a call's run
/// (read to answered), the engine its round trip (sent to result).
pub struct Pace {
    epoch: Instant,
    /// How long the watch lasts after the last call began or ended.
    watch: Duration,
    /// A call that begins within this of the previous end comes back to back.
    back_to_back_within: Duration,
    /// A call that took less than this is quick.
    quick_within: Duration,
    /// When the last call began.
    began_ns: AtomicU64,
    /// When the last call ended.
    ended_ns: AtomicU64,
    /// How long the last call took.
    took_ns: AtomicU64,
    /// Whether the last call began within `back_to_back_within` of the end before.
    back_to_back: AtomicBool,
}

impl Default for Pace {
    /// The worker's pace: a call is quick if it ran for less than the watch.
    fn default() -> Self {
        Pace::new(WATCH, BACK_TO_BACK, WATCH)
    }
}

/// `d` in whole ns (saturating).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Pace {
    /// A pace whose watch lasts `watch`, in which a call that begins within
    /// `back_to_back_within` of the previous end comes back to back, and one that takes less
    /// than `quick_within` is quick.
    pub fn new(watch: Duration, back_to_back_within: Duration, quick_within: Duration) -> Pace {
        Pace {
            epoch: Instant::now(),
            watch,
            back_to_back_within,
            quick_within,
            began_ns: AtomicU64::new(0),
            ended_ns: AtomicU64::new(0),
            took_ns: AtomicU64::new(u64::MAX),
            back_to_back: AtomicBool::new(false),
        }
    }

    /// ns since the pace was made, at least 1.
    pub fn now(&self) -> u64 {
        nanos(self.epoch.elapsed()).max(1)
    }

    /// The instant `ns` ns after the pace was made.
    pub fn at(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    /// Notes a call that began at `now`; answers whether it is hot: back to back after a quick
    /// call, so that whoever waits for its end may watch for it before sleeping.
    pub fn began(&self, now: u64) -> bool {
        let ended = self.ended_ns.load(Ordering::Relaxed);
        self.back_to_back.store(
            ended != 0 && now.saturating_sub(ended) < nanos(self.back_to_back_within),
            Ordering::Relaxed,
        );
        self.began_ns.store(now, Ordering::Relaxed);
        self.hot()
    }

    /// Notes the end, at `now`, of a call that began at `began`.
    pub fn ended(&self, began: u64, now: u64) {
        self.took_ns
            .store(now.saturating_sub(began), Ordering::Relaxed);
        self.ended_ns.store(now, Ordering::Relaxed);
    }

    /// Whether the last call came back to back and the one before it was quick.
    fn hot(&self) -> bool {
        self.back_to_back.load(Ordering::Relaxed)
            && self.took_ns.load(Ordering::Relaxed) < nanos(self.quick_within)
    }

    /// Until when (ns) a thread that wants the next frame stays awake for it: the watch after
    /// the last call began or ended, whichever is later, while calls are hot ([`Pace::began`]);
    /// `None` otherwise.
    pub fn watch_until(&self) -> Option<u64> {
        let last = self
            .began_ns
            .load(Ordering::Relaxed)
            .max(self.ended_ns.load(Ordering::Relaxed));
        (self.hot() && last != 0).then(|| last.saturating_add(nanos(self.watch)))
    }

    /// Whether the watch is still on.
    pub fn watching(&self) -> bool {
        self.watch_until().is_some_and(|until| self.now() < until)
    }

    /// Watches `fd` while the watch is on, returning once it has something to read (or has
    /// ended) or the watch is over. A call that begins meanwhile moves the watch's end.
    #[cfg(unix)]
    pub fn watch_fd(&self, fd: std::os::fd::BorrowedFd<'_>) {
        while let Some(until) = self.watch_until() {
            if self.now() >= until || readable_within(fd, self.at(until)) {
                return;
            }
        }
    }
}

/// Whether `fd` has something to read (or has ended) before `until`: polls it without
/// blocking, yielding the core between polls. Returns at once, with `false`, when `until` has
/// passed.
#[cfg(unix)]
pub fn readable_within(fd: std::os::fd::BorrowedFd<'_>, until: Instant) -> bool {
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

impl Input {
    /// Watches the input, without reading it, until a frame is there or `pace` says the
    /// watch is over; returns at once if a frame is already buffered or the input has no
    /// descriptor.
    pub(super) fn watch(&self, pace: &Pace) {
        #[cfg(unix)]
        if let Some(fd) = self.fd
            && self.reader.buffer().is_empty()
        {
            // SAFETY: the input's descriptor, open while `self` is.
            pace.watch_fd(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) });
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
        let pace = Pace::new(watch, Duration::from_secs(3600), watch);
        let now = pace.now();
        pace.began(now);
        pace.ended(now, now);
        let _ = pace.began(pace.now());
        pace.ended(now, pace.now());
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
        pace.began(1_000 * US);
        assert_eq!(pace.watch_until(), None);
    }

    #[test]
    fn a_call_after_a_pause_starts_no_watch() {
        let pace = Pace::default();
        pace.began(1_000 * US);
        pace.ended(1_000 * US, 1_005 * US);
        // 10 ms later: not back to back.
        pace.began(11_005 * US);
        assert_eq!(pace.watch_until(), None);
    }

    #[test]
    fn a_quick_call_back_to_back_is_watched_for_until_its_bound_after_the_answer() {
        let pace = Pace::default();
        pace.began(1_000 * US);
        pace.ended(1_000 * US, 1_005 * US);
        pace.began(1_020 * US);
        pace.ended(1_020 * US, 1_025 * US);
        assert_eq!(pace.watch_until(), Some(1_025 * US + nanos(WATCH)));
    }

    #[test]
    fn a_call_back_to_back_after_a_slow_one_starts_no_watch() {
        let pace = Pace::default();
        pace.began(1_000 * US);
        pace.ended(1_000 * US, 2_000 * US);
        pace.began(2_010 * US);
        assert_eq!(pace.watch_until(), None);
    }

    /// The engine's pace of a worker's calls: quick means a round trip under 500 µs.
    fn round_trips() -> Pace {
        Pace::new(WATCH, BACK_TO_BACK, Duration::from_micros(500))
    }

    #[test]
    fn a_call_after_a_pause_is_not_hot() {
        let pace = round_trips();
        assert!(!pace.began(1_000 * US));
        pace.ended(1_000 * US, 1_030 * US);
        // 10 ms later.
        assert!(!pace.began(11_030 * US));
        assert_eq!(pace.watch_until(), None);
    }

    #[test]
    fn a_quick_call_back_to_back_is_hot_and_watched_for_until_the_bound_after_it_began() {
        let pace = round_trips();
        pace.began(1_000 * US);
        pace.ended(1_000 * US, 1_300 * US);
        assert!(pace.began(1_350 * US));
        assert_eq!(pace.watch_until(), Some(1_350 * US + nanos(WATCH)));
    }

    #[test]
    fn a_call_back_to_back_after_one_slower_than_quick_is_not_hot() {
        let pace = round_trips();
        pace.began(1_000 * US);
        pace.ended(1_000 * US, 5_000 * US);
        assert!(!pace.began(5_050 * US));
        assert_eq!(pace.watch_until(), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_with_data_is_readable_at_once() {
        use std::os::fd::AsFd;
        let (reader, mut writer) = io::pipe().expect("a pipe");
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
        let (reader, _writer) = io::pipe().expect("a pipe");
        assert!(!readable_within(
            reader.as_fd(),
            Instant::now() + Duration::from_millis(1)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_whose_writer_is_gone_is_readable() {
        use std::os::fd::AsFd;
        let (reader, writer) = io::pipe().expect("a pipe");
        drop(writer);
        assert!(readable_within(
            reader.as_fd(),
            Instant::now() + Duration::from_secs(60)
        ));
    }
}
