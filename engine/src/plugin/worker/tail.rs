//! The last words of a worker: the tail of its stderr, for the crash message.

use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How much of the worker's stderr is kept for the crash message: its last 2 KiB.
const STDERR_TAIL: usize = 2048;

/// How long a crash message waits for a dead worker's stderr to end, so that it has the last
/// words (the pipe ends at once, unless a process the plugin started still holds it).
const STDERR_END_WAIT: Duration = Duration::from_millis(50);

/// The last bytes of a worker's stderr, and whether it has ended.
#[derive(Default)]
pub(super) struct Tail {
    state: Mutex<TailState>,
    ended: Condvar,
}

#[derive(Default)]
struct TailState {
    bytes: Vec<u8>,
    ended: bool,
}

/// Keeps the last [`STDERR_TAIL`] bytes of the worker's stderr in `tail`, on its own thread.
pub(super) fn keep_tail(mut stderr: impl Read + Send + 'static, tail: Arc<Tail>) {
    let _ = std::thread::Builder::new()
        .name("toolgate-worker-stderr".into())
        .spawn(move || {
            let mut buf = [0u8; 1024];
            loop {
                let n = stderr.read(&mut buf).unwrap_or(0);
                let mut state = lock(&tail.state);
                if n == 0 {
                    state.ended = true;
                    tail.ended.notify_all();
                    return;
                }
                state.bytes.extend_from_slice(&buf[..n]);
                let excess = state.bytes.len().saturating_sub(STDERR_TAIL);
                state.bytes.drain(..excess);
            }
        });
}

/// The stderr tail of a worker that has died, as one line: once its stderr has ended (so it
/// holds what the process wrote last), or [`STDERR_END_WAIT`] at most.
pub(super) fn tail_text(tail: &Tail) -> String {
    let state = lock(&tail.state);
    let (state, _) = tail
        .ended
        .wait_timeout_while(state, STDERR_END_WAIT, |s| !s.ended)
        .unwrap_or_else(PoisonError::into_inner);
    String::from_utf8_lossy(&state.bytes)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
