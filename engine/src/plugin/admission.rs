//! Admission of a plugin's calls: at most `max_threads` hold a thread (in process) or run on the
//! worker (`isolation: process`) at once; the calls beyond wait in a bounded queue
//! (`max_queued`), served fairly across sessions.
//!
//! Each session (calls without one share one queue) has its own FIFO queue of waiting calls.
//! A thread that comes free goes to the oldest call of the session whose turn it is; that
//! session then goes to the back of the line if it still has calls waiting. So a session
//! that queues a thousand calls gets one thread in turn with every other session that waits,
//! not all of them first. A call is answered `overloaded` only when `max_queued` calls already
//! wait.
//!
//! A thread is held by a [`Permit`] until the plugin really returns (calls that passed their
//! timeout and ignore cancellation included); dropping it hands the thread straight to the
//! next waiting call. A call that stops waiting (its timeout, its turn cancelled) leaves the
//! queue at once, so it never holds a place.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;
use toolgate_store::SessionId;

/// The line a call waits in: its session's, or the one of calls without a session.
type Line = Option<SessionId>;

/// The threads of one plugin and the calls waiting for them.
pub(crate) struct Admission {
    inner: Arc<Inner>,
}

struct Inner {
    plugin: String,
    max_threads: usize,
    max_queued: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Threads no call holds.
    free: usize,
    /// Calls waiting, all lines together.
    queued: usize,
    /// The id of the next waiting call.
    next_id: u64,
    /// The lines with calls waiting, in the order they are served next.
    turns: VecDeque<Line>,
    /// The calls waiting in each line, oldest first.
    lines: HashMap<Line, VecDeque<Waiter>>,
}

struct Waiter {
    id: u64,
    grant: oneshot::Sender<Permit>,
}

impl State {
    /// The waiting call whose turn it is, taken out of its line.
    fn next_waiter(&mut self) -> Option<Waiter> {
        let line = self.turns.pop_front()?;
        let waiters = self.lines.get_mut(&line)?;
        let waiter = waiters.pop_front();
        if waiters.is_empty() {
            self.lines.remove(&line);
        } else {
            self.turns.push_back(line);
        }
        if waiter.is_some() {
            self.queued -= 1;
        }
        waiter
    }

    /// Takes the call `id` out of `line`, if it still waits there.
    fn leave(&mut self, line: &Line, id: u64) {
        let Some(waiters) = self.lines.get_mut(line) else {
            return;
        };
        let Some(at) = waiters.iter().position(|w| w.id == id) else {
            return;
        };
        waiters.remove(at);
        self.queued -= 1;
        if waiters.is_empty() {
            self.lines.remove(line);
            self.turns.retain(|l| l != line);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Only plain counters and queues, changed without calling out: valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A thread came free: it goes to the next waiting call, or back to the free ones.
    fn release(self: &Arc<Self>) {
        loop {
            let waiter = {
                let mut state = self.lock();
                match state.next_waiter() {
                    Some(w) => w,
                    None => {
                        state.free += 1;
                        return;
                    }
                }
            };
            // Sent outside the lock: a permit that comes back is dropped without releasing.
            match waiter.grant.send(Permit {
                inner: Some(self.clone()),
            }) {
                Ok(()) => return,
                // The call stopped waiting between leaving the queue and now: next one.
                Err(mut permit) => permit.inner = None,
            }
        }
    }
}

/// A thread of the plugin, held by one call until the plugin returns.
pub(crate) struct Permit {
    inner: Option<Arc<Inner>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.release();
        }
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Permit")
    }
}

/// A call's place: a thread at once, or a place in the queue.
pub(crate) enum Ticket {
    /// A thread was free.
    Now(Permit),
    /// The call waits for a thread.
    Queued(Queued),
}

/// A call waiting in the queue. Dropping it leaves the queue.
pub(crate) struct Queued {
    inner: Arc<Inner>,
    line: Line,
    id: u64,
    granted: oneshot::Receiver<Permit>,
}

impl Queued {
    /// Waits for the call's turn. `None` only if the queue was torn down, which does not happen
    /// while a call waits (the call keeps it alive).
    pub(crate) async fn turn(mut self) -> Option<Permit> {
        (&mut self.granted).await.ok()
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.inner.lock().leave(&self.line, self.id);
        // A permit sent after the call left is dropped with the receiver, which releases it.
    }
}

/// The queue is full: the call is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) message: String,
}

impl Admission {
    /// `max_threads` threads (at least one) for the plugin `plugin`, and a queue of at most
    /// `max_queued` waiting calls (0: no queue, a call with no free thread is refused).
    pub(crate) fn new(plugin: &str, max_threads: usize, max_queued: usize) -> Admission {
        let max_threads = max_threads.max(1);
        Admission {
            inner: Arc::new(Inner {
                plugin: plugin.to_string(),
                max_threads,
                max_queued,
                state: Mutex::new(State {
                    free: max_threads,
                    ..State::default()
                }),
            }),
        }
    }

    /// A thread for a call of `session`: at once when one is free and nobody waits, else a
    /// place at the end of the session's line; [`Full`] when `max_queued` calls already wait.
    pub(crate) fn admit(&self, session: Option<&SessionId>) -> Result<Ticket, Full> {
        let mut state = self.inner.lock();
        if state.free > 0 && state.queued == 0 {
            state.free -= 1;
            return Ok(Ticket::Now(Permit {
                inner: Some(self.inner.clone()),
            }));
        }
        if state.queued >= self.inner.max_queued {
            return Err(Full {
                message: format!(
                    "all {} threads of the plugin {:?} are busy (plugins[].max_threads) and its \
                     queue is full: {} calls already wait for one (plugins[].max_queued); try \
                     again later",
                    self.inner.max_threads, self.inner.plugin, self.inner.max_queued
                ),
            });
        }
        let line: Line = session.cloned();
        let id = state.next_id;
        state.next_id += 1;
        let (grant, granted) = oneshot::channel();
        match state.lines.get_mut(&line) {
            Some(waiters) => waiters.push_back(Waiter { id, grant }),
            None => {
                state
                    .lines
                    .insert(line.clone(), VecDeque::from([Waiter { id, grant }]));
                state.turns.push_back(line.clone());
            }
        }
        state.queued += 1;
        Ok(Ticket::Queued(Queued {
            inner: self.inner.clone(),
            line,
            id,
            granted,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> SessionId {
        SessionId::parse(id).expect("a valid session id")
    }

    fn now(ticket: Result<Ticket, Full>) -> Permit {
        match ticket {
            Ok(Ticket::Now(p)) => p,
            Ok(Ticket::Queued(_)) => panic!("queued, expected a thread at once"),
            Err(full) => panic!("{}", full.message),
        }
    }

    fn queued(ticket: Result<Ticket, Full>) -> Queued {
        match ticket {
            Ok(Ticket::Queued(q)) => q,
            Ok(Ticket::Now(_)) => panic!("got a thread, expected to queue"),
            Err(full) => panic!("{}", full.message),
        }
    }

    /// Whether the waiting call got its thread (without waiting for it).
    fn granted(q: &mut Queued) -> Option<Permit> {
        q.granted.try_recv().ok()
    }

    #[test]
    fn calls_beyond_the_threads_queue_and_only_a_full_queue_refuses() {
        let adm = Admission::new("demo", 1, 2);
        let _running = now(adm.admit(None));
        let _a = queued(adm.admit(None));
        let _b = queued(adm.admit(None));
        let full = adm
            .admit(None)
            .err()
            .expect("the third waiting call is refused");
        assert!(
            full.message.contains("queue is full: 2 calls already wait"),
            "{}",
            full.message
        );
    }

    #[test]
    fn a_freed_thread_goes_to_the_sessions_in_turn() {
        let adm = Admission::new("demo", 1, 100);
        let running = now(adm.admit(Some(&session("greedy"))));
        let mut greedy: Vec<Queued> = (0..5)
            .map(|_| queued(adm.admit(Some(&session("greedy")))))
            .collect();
        let mut other = queued(adm.admit(Some(&session("other"))));
        drop(running);
        let first = granted(&mut greedy[0]).expect("the greedy session's oldest call is first");
        assert!(granted(&mut other).is_none());
        drop(first);
        let second = granted(&mut other).expect("the other session is served next");
        assert!(granted(&mut greedy[1]).is_none());
        drop(second);
        assert!(granted(&mut greedy[1]).is_some());
    }

    #[test]
    fn a_call_that_stops_waiting_leaves_its_place() {
        let adm = Admission::new("demo", 1, 1);
        let running = now(adm.admit(None));
        drop(queued(adm.admit(None)));
        let mut next = queued(adm.admit(None));
        drop(running);
        assert!(granted(&mut next).is_some());
    }

    #[test]
    fn a_thread_nobody_waits_for_is_free_again() {
        let adm = Admission::new("demo", 1, 0);
        drop(now(adm.admit(None)));
        let _again = now(adm.admit(None));
    }
}
