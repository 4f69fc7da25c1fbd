//! Clients take turns on a server whose requests nothing ties to a call.
//!
//! Over stdio, a server's `sampling/createMessage` (or elicitation, or roots) request names no
//! call: toolgate can tell whose it is only when every call of the server in flight was made by
//! the same client (see [`inflight`](super::inflight)). So when a `command` server may ask the
//! client anything, its calls go by turns: the calls of one client run together, as many as
//! they like; a call of another client waits until they are done. Clients wait in line, in
//! the order they came, and a client whose turn it is does not start new calls while another
//! waits, so no client waits forever. A waiting call counts against its own timeout.
//!
//! Only servers that may ask the client something are served so; over Streamable HTTP a server
//! sends a call's requests on that call's stream, which says whose they are.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The turns of one server's clients.
#[derive(Default)]
pub(crate) struct Turns {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// Whose turn it is, and how many of its calls run.
    holder: Option<(u64, usize)>,
    /// The clients waiting, in order, with how many calls each has waiting.
    line: VecDeque<(u64, usize)>,
}

impl State {
    /// Starts a call of `client` if it may start now.
    fn try_start(&mut self, client: u64) -> bool {
        match &mut self.holder {
            None if self.line.front().is_none_or(|(first, _)| *first == client) => {
                self.holder = Some((client, 1));
                self.leave_line(client);
                true
            }
            // Its turn, and nobody else waits: it may add calls.
            Some((holder, running))
                if *holder == client && self.line.iter().all(|(c, _)| *c == client) =>
            {
                *running += 1;
                self.leave_line(client);
                true
            }
            _ => false,
        }
    }

    fn join_line(&mut self, client: u64) {
        match self.line.iter_mut().find(|(c, _)| *c == client) {
            Some((_, waiting)) => *waiting += 1,
            None => self.line.push_back((client, 1)),
        }
    }

    /// One waiting call of `client` leaves the line (it started, or gave up).
    fn leave_line(&mut self, client: u64) {
        if let Some(i) = self.line.iter().position(|(c, _)| *c == client) {
            let waiting = &mut self.line[i].1;
            *waiting -= 1;
            if *waiting == 0 {
                self.line.remove(i);
            }
        }
    }
}

/// A call's part of its client's turn; dropping it ends the call's part.
pub(crate) struct Turn {
    turns: Arc<Turns>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut state = self.turns.state();
        if let Some((_, running)) = &mut state.holder {
            *running -= 1;
            if *running == 0 {
                state.holder = None;
            }
        }
        drop(state);
        self.turns.changed.notify_waiters();
    }
}

impl Turns {
    fn state(&self) -> MutexGuard<'_, State> {
        // Plain counters, consistent after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for `client`'s turn; `None` when `cancel` fired first. Dropping the future
    /// leaves the line too.
    pub(crate) async fn take(
        self: &Arc<Self>,
        client: u64,
        cancel: &CancellationToken,
    ) -> Option<Turn> {
        let mut queued = Queued {
            turns: self,
            client,
            in_line: false,
        };
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state();
                if !queued.in_line {
                    state.join_line(client);
                    queued.in_line = true;
                }
                if state.try_start(client) {
                    queued.in_line = false;
                    return Some(Turn {
                        turns: Arc::clone(self),
                    });
                }
            }
            tokio::select! {
                () = changed => {}
                () = cancel.cancelled() => return None,
            }
        }
    }
}

/// A call waiting in line; dropped before its turn came, it leaves the line.
struct Queued<'a> {
    turns: &'a Turns,
    client: u64,
    in_line: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.in_line {
            self.turns.state().leave_line(self.client);
            // Whoever was behind may go now.
            self.turns.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn take_soon(turns: &Arc<Turns>, client: u64) -> Option<Turn> {
        tokio::time::timeout(
            Duration::from_millis(50),
            turns.take(client, &CancellationToken::new()),
        )
        .await
        .ok()
        .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn the_calls_of_one_client_run_together() {
        let turns = Arc::new(Turns::default());
        let a = take_soon(&turns, 1).await;
        let b = take_soon(&turns, 1).await;
        assert!(a.is_some() && b.is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn another_client_waits_until_the_turn_ends() {
        let turns = Arc::new(Turns::default());
        let first = take_soon(&turns, 1).await.expect("a free server");
        assert!(take_soon(&turns, 2).await.is_none(), "client 2 must wait");
        let never = CancellationToken::new();
        let waiting = turns.take(2, &never);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(10), &mut waiting)
                .await
                .is_err()
        );
        drop(first);
        let second = tokio::time::timeout(Duration::from_millis(10), waiting)
            .await
            .expect("the turn passes")
            .expect("not cancelled");
        drop(second);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_in_its_turn_starts_nothing_new_while_another_waits() {
        let turns = Arc::new(Turns::default());
        let first = take_soon(&turns, 1).await.expect("a free server");
        let never = CancellationToken::new();
        let waiting = turns.take(2, &never);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(10), &mut waiting)
                .await
                .is_err()
        );
        assert!(
            take_soon(&turns, 1).await.is_none(),
            "client 1 must let 2 go first"
        );
        drop(first);
        assert!(waiting.await.is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_wait_leaves_the_line() {
        let turns = Arc::new(Turns::default());
        let first = take_soon(&turns, 1).await.expect("a free server");
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(turns.take(2, &cancel).await.is_none());
        // Client 2 is not in line any more: client 1 may go on.
        assert!(take_soon(&turns, 1).await.is_some());
        drop(first);
    }
}
