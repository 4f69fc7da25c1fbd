//! The concurrency gate of `limits.concurrency` (L3): at most `per_principal` calls of one
//! principal and `total` calls in all run at once; the calls beyond wait in a queue served
//! fairly.
//!
//! Each principal has a line of sessions, and each session a FIFO of waiting calls. A place
//! that comes free goes to the first principal in turn that may run another call (under its own
//! cap), to the oldest call of the session whose turn it is within that principal; both then go
//! to the back of their lines if they still wait. So a principal that queues a thousand calls
//! gets one place in turn with every other principal that waits, and within a principal each
//! session gets its turn: nobody is starved by a flood, whoever sends it.
//!
//! A place is held by a [`Permit`] until it is dropped; dropping it hands the place straight
//! to the next waiting call. A call that stops waiting leaves the queue at once.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;
use toolgate_store::SessionId;

/// The line of a session within a principal's (calls without a session share one).
type Line = Option<SessionId>;

/// The gate of one engine.
pub(crate) struct FairGate {
    inner: Arc<Inner>,
}

struct Inner {
    per_principal: usize,
    total: usize,
    max_queued: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Calls running, all principals together.
    running: usize,
    /// Calls running of each principal (absent: none).
    running_of: HashMap<String, usize>,
    /// Calls waiting, all together.
    queued: usize,
    next_id: u64,
    /// Principals with calls waiting, in the order they are served next.
    turns: VecDeque<String>,
    /// Each waiting principal's sessions.
    waiting: HashMap<String, Sessions>,
}

#[derive(Default)]
struct Sessions {
    turns: VecDeque<Line>,
    lines: HashMap<Line, VecDeque<Waiter>>,
}

struct Waiter {
    id: u64,
    grant: oneshot::Sender<Permit>,
}

impl State {
    fn may_run(&self, inner: &Inner, principal: &str) -> bool {
        self.running < inner.total
            && self.running_of.get(principal).copied().unwrap_or(0) < inner.per_principal
    }

    fn start(&mut self, principal: &str) {
        self.running += 1;
        *self.running_of.entry(principal.to_owned()).or_default() += 1;
    }

    fn end(&mut self, principal: &str) {
        self.running = self.running.saturating_sub(1);
        if let Some(n) = self.running_of.get_mut(principal) {
            *n -= 1;
            if *n == 0 {
                self.running_of.remove(principal);
            }
        }
    }

    /// The next waiting call that may run, taken out of its lines and counted as running.
    fn next_waiter(&mut self, inner: &Inner) -> Option<(String, Waiter)> {
        let at = (0..self.turns.len()).find(|&i| self.may_run(inner, &self.turns[i]))?;
        let principal = self.turns.remove(at)?;
        let sessions = self.waiting.get_mut(&principal)?;
        let line = sessions.turns.pop_front()?;
        let waiters = sessions.lines.get_mut(&line)?;
        let waiter = waiters.pop_front()?;
        if waiters.is_empty() {
            sessions.lines.remove(&line);
        } else {
            sessions.turns.push_back(line);
        }
        if sessions.turns.is_empty() {
            self.waiting.remove(&principal);
        } else {
            self.turns.push_back(principal.clone());
        }
        self.queued -= 1;
        self.start(&principal);
        Some((principal, waiter))
    }

    fn leave(&mut self, principal: &str, line: &Line, id: u64) {
        let Some(sessions) = self.waiting.get_mut(principal) else {
            return;
        };
        let Some(waiters) = sessions.lines.get_mut(line) else {
            return;
        };
        let Some(at) = waiters.iter().position(|w| w.id == id) else {
            return;
        };
        waiters.remove(at);
        self.queued -= 1;
        if waiters.is_empty() {
            sessions.lines.remove(line);
            sessions.turns.retain(|l| l != line);
        }
        if sessions.turns.is_empty() {
            self.waiting.remove(principal);
            self.turns.retain(|p| p != principal);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain counters and queues, changed without calling out: valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place of `principal` came free: hand places to the waiting calls that may run now.
    fn release(self: &Arc<Self>, principal: &str) {
        self.lock().end(principal);
        loop {
            let Some((next, waiter)) = self.lock().next_waiter(self) else {
                return;
            };
            // Sent outside the lock; a call that stopped waiting meanwhile gives it back.
            if let Err(mut permit) = waiter.grant.send(Permit {
                inner: Some(self.clone()),
                principal: next.clone(),
            }) {
                permit.inner = None;
                self.lock().end(&next);
            }
        }
    }
}

/// A place to run, held by one call until it is dropped.
pub(crate) struct Permit {
    inner: Option<Arc<Inner>>,
    principal: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.release(&self.principal);
        }
    }
}

/// A call's place: at once, or in the queue.
pub(crate) enum Ticket {
    Now(Permit),
    Queued(Queued),
}

/// A call waiting for its turn; dropping it leaves the queue.
pub(crate) struct Queued {
    inner: Arc<Inner>,
    principal: String,
    line: Line,
    id: u64,
    granted: oneshot::Receiver<Permit>,
}

impl Queued {
    /// Waits for the call's turn (`None` only if the gate went away, which a waiting call
    /// prevents).
    pub(crate) async fn turn(mut self) -> Option<Permit> {
        (&mut self.granted).await.ok()
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.inner
            .lock()
            .leave(&self.principal, &self.line, self.id);
    }
}

/// Why a call found no place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) message: String,
}

impl FairGate {
    /// A gate of `per_principal` places per principal and `total` in all (`None`: no cap),
    /// with at most `max_queued` calls waiting.
    pub(crate) fn new(
        per_principal: Option<usize>,
        total: Option<usize>,
        max_queued: usize,
    ) -> Self {
        FairGate {
            inner: Arc::new(Inner {
                per_principal: per_principal.unwrap_or(usize::MAX).max(1),
                total: total.unwrap_or(usize::MAX).max(1),
                max_queued,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// A place for a call of `principal` in `session`: at once when it may run, else at the
    /// end of its session's line; [`Full`] when `max_queued` calls already wait.
    pub(crate) fn admit(
        &self,
        principal: &str,
        session: Option<&SessionId>,
    ) -> Result<Ticket, Full> {
        let inner = &self.inner;
        let mut state = inner.lock();
        if state.may_run(inner, principal) && !state.waiting.contains_key(principal) {
            state.start(principal);
            return Ok(Ticket::Now(Permit {
                inner: Some(inner.clone()),
                principal: principal.to_owned(),
            }));
        }
        if state.queued >= inner.max_queued {
            return Err(Full {
                message: format!(
                    "the gateway is at its concurrency limit and {} calls already wait \
                     (limits.concurrency.max_queued)",
                    inner.max_queued
                ),
            });
        }
        let line: Line = session.cloned();
        let id = state.next_id;
        state.next_id += 1;
        let (grant, granted) = oneshot::channel();
        if !state.waiting.contains_key(principal) {
            state.turns.push_back(principal.to_owned());
        }
        let sessions = state.waiting.entry(principal.to_owned()).or_default();
        match sessions.lines.get_mut(&line) {
            Some(waiters) => waiters.push_back(Waiter { id, grant }),
            None => {
                sessions
                    .lines
                    .insert(line.clone(), VecDeque::from([Waiter { id, grant }]));
                sessions.turns.push_back(line.clone());
            }
        }
        state.queued += 1;
        Ok(Ticket::Queued(Queued {
            inner: inner.clone(),
            principal: principal.to_owned(),
            line,
            id,
            granted,
        }))
    }

    /// The caps, for messages.
    pub(crate) fn caps(&self) -> (usize, usize) {
        (self.inner.per_principal, self.inner.total)
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
            Ok(Ticket::Queued(_)) => panic!("queued, expected a place at once"),
            Err(full) => panic!("{}", full.message),
        }
    }

    fn queued(ticket: Result<Ticket, Full>) -> Queued {
        match ticket {
            Ok(Ticket::Queued(q)) => q,
            Ok(Ticket::Now(_)) => panic!("got a place, expected to queue"),
            Err(full) => panic!("{}", full.message),
        }
    }

    fn granted(q: &mut Queued) -> Option<Permit> {
        q.granted.try_recv().ok()
    }

    #[test]
    fn a_principal_at_its_cap_waits_while_another_runs_at_once() {
        let gate = FairGate::new(Some(1), None, 10);
        let _a = now(gate.admit("alice", None));
        let _waiting = queued(gate.admit("alice", None));
        let _b = now(gate.admit("bob", None));
    }

    #[test]
    fn a_freed_place_goes_to_the_principals_in_turn() {
        let gate = FairGate::new(None, Some(1), 100);
        let running = now(gate.admit("flood", None));
        let mut flood: Vec<Queued> = (0..5).map(|_| queued(gate.admit("flood", None))).collect();
        let mut other = queued(gate.admit("other", None));
        drop(running);
        let first = granted(&mut flood[0]).expect("the flood's oldest call is first in line");
        assert!(granted(&mut other).is_none());
        drop(first);
        let second = granted(&mut other).expect("the other principal is served next");
        drop(second);
        assert!(granted(&mut flood[1]).is_some());
    }

    #[test]
    fn the_sessions_of_one_principal_take_turns() {
        let gate = FairGate::new(None, Some(1), 100);
        let running = now(gate.admit("p", Some(&session("busy"))));
        let mut busy: Vec<Queued> = (0..3)
            .map(|_| queued(gate.admit("p", Some(&session("busy")))))
            .collect();
        let mut quiet = queued(gate.admit("p", Some(&session("quiet"))));
        drop(running);
        let first = granted(&mut busy[0]).expect("oldest first");
        drop(first);
        assert!(granted(&mut quiet).is_some(), "the quiet session is next");
    }

    #[test]
    fn a_full_queue_refuses_and_a_call_that_stops_waiting_leaves_its_place() {
        let gate = FairGate::new(None, Some(1), 1);
        let running = now(gate.admit("p", None));
        drop(queued(gate.admit("p", None)));
        let mut next = queued(gate.admit("p", None));
        assert!(gate.admit("q", None).is_err(), "one call already waits");
        drop(running);
        assert!(granted(&mut next).is_some());
    }
}
