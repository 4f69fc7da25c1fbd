//! One upstream server kept running: started, restarted with backoff when it crashes or its
//! connection breaks, its tool list fetched again when it says the list changed or comes back
//! with other tools, and stopped on shutdown.
//!
//! Calls ask [`Server::peer`] for the live connection. While a restart is under way they wait
//! for it; while the server is down between attempts they fail at once with
//! `upstream_unavailable`, saying why it stopped and when the next attempt is.
//!
//! Restarts: the first restart after a crash is immediate; when the server keeps failing (it
//! does not start, or dies within [`HEALTHY_AFTER`] of starting), the pauses between attempts
//! grow 0.5 s, 1 s, 2 s, ... up to [`MAX_BACKOFF`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolgate::tool::ToolError;
use toolgate_policy::{McpServerSpec, McpTransport};

use super::callers::Downstream;
use super::connection::{self, Connection};
use super::error::{UpstreamError, stderr_note, unavailable};
use super::handler::Handler;
use super::listing::{self, Listed};
use super::lists::{Offered, list_offered};

/// A server that ran this long before it stopped counts as healthy: its next restart is
/// immediate again.
pub(crate) const HEALTHY_AFTER: Duration = Duration::from_secs(10);
/// The first pause between attempts to start a failing server.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest pause between attempts.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where a server is.
#[derive(Clone)]
enum State {
    /// Being started (or restarted); calls wait.
    Starting,
    /// Running.
    Up(Peer<RoleClient>),
    /// Down until the next attempt; calls fail at once.
    Down { reason: String, retry_at: Instant },
    /// Being shut down: the connection is closing and the child stopping; calls fail at once.
    Stopping,
    /// Shut down: the connection is closed and the child has exited or been killed.
    Stopped,
}

/// Called with a server's name when its tool list changed after it first started.
pub(crate) type OnChange = Arc<dyn Fn(&str) + Send + Sync>;

/// One upstream server and its supervisor.
pub(crate) struct Server {
    pub spec: McpServerSpec,
    /// How messages name it ("MCP server time (stdio: mcp-server-time)").
    pub description: String,
    pub handler: Handler,
    state: watch::Sender<State>,
    /// Its tools as last listed, checked.
    tools: Mutex<Arc<Listed>>,
    /// Its resources, templates and prompts as last listed, checked.
    offered: Mutex<Arc<Offered>>,
    /// Why its first start failed, while it has not started since.
    start_error: Mutex<Option<String>>,
    on_change: Mutex<Vec<OnChange>>,
    shutdown: CancellationToken,
    /// Work that outlives a call: notifications of cancellation still being sent.
    pub tasks: TaskTracker,
}

/// The pause before attempt `failures + 1` of a server that has failed `failures` times in a
/// row (`failures` >= 1).
pub(crate) fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MAX_BACKOFF)
}

impl Server {
    /// Starts supervising `spec`; the receiver resolves when its first start has succeeded or
    /// failed.
    pub(crate) fn start(
        spec: McpServerSpec,
        downstream: Option<Arc<dyn Downstream>>,
    ) -> (Arc<Server>, oneshot::Receiver<()>) {
        let description = super::config::describe(&spec);
        let server = Arc::new(Server {
            handler: Handler::new(
                &spec.name,
                spec.client_requests.clone(),
                matches!(spec.transport, McpTransport::Stdio { .. }),
                downstream,
            ),
            spec,
            description,
            state: watch::Sender::new(State::Starting),
            tools: Mutex::new(Arc::new(Listed::default())),
            offered: Mutex::new(Arc::new(Offered::default())),
            start_error: Mutex::new(None),
            on_change: Mutex::new(Vec::new()),
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        let (first_tx, first_rx) = oneshot::channel();
        tokio::spawn(server.clone().supervise(first_tx));
        (server, first_rx)
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// Its tools as last listed, and those left out.
    pub(crate) fn tools(&self) -> Arc<Listed> {
        lock(&self.tools).clone()
    }

    /// Its resources, templates and prompts as last listed.
    pub(crate) fn offered(&self) -> Arc<Offered> {
        lock(&self.offered).clone()
    }

    /// Why it did not start, while it has never started.
    pub(crate) fn start_error(&self) -> Option<String> {
        lock(&self.start_error).clone()
    }

    /// Where the server is now: `starting`, `up`, `down` (with why, and when it is tried
    /// again), `stopping` or `stopped`; for the console of `serve`.
    pub(crate) fn health(&self) -> (&'static str, Option<String>) {
        match &*self.state.borrow() {
            State::Starting => ("starting", None),
            State::Up(peer) if peer.is_transport_closed() => ("starting", None),
            State::Up(_) => ("up", None),
            State::Down { reason, retry_at } => (
                "down",
                Some(format!(
                    "{reason}; the next attempt to start it is in {}",
                    toolgate_policy::format_duration(Some(round_up(
                        retry_at.saturating_duration_since(Instant::now())
                    )))
                )),
            ),
            State::Stopping => ("stopping", None),
            State::Stopped => ("stopped", None),
        }
    }

    /// Calls `f` with the server's name each time its tool list changes after its first start.
    pub(crate) fn on_change(&self, f: OnChange) {
        lock(&self.on_change).push(f);
    }

    /// The live connection, waiting while the server is being started (or restarted after its
    /// connection broke). Fails at once while it is down, and when `cancel` fires.
    pub(crate) async fn peer(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Peer<RoleClient>, ToolError> {
        let mut state = self.state.subscribe();
        loop {
            let now = state.borrow_and_update().clone();
            match now {
                // A connection that has just broken is still `Up` until the supervisor sees it
                // end: wait for the restart instead of sending into the dead connection.
                State::Up(peer) if !peer.is_transport_closed() => return Ok(peer),
                State::Up(_) => {}
                State::Down { reason, retry_at } => {
                    let wait = retry_at.saturating_duration_since(Instant::now());
                    return Err(unavailable(format!(
                        "the MCP server {} is not running ({reason}; see the gateway log); the next attempt to start it is in {}",
                        self.spec.name,
                        toolgate_policy::format_duration(Some(round_up(wait))),
                    )));
                }
                State::Stopping | State::Stopped => {
                    return Err(unavailable(format!(
                        "the MCP server {} has been shut down",
                        self.spec.name
                    )));
                }
                State::Starting => {}
            }
            tokio::select! {
                changed = state.changed() => {
                    if changed.is_err() {
                        return Err(unavailable(format!(
                            "the MCP server {} has been shut down",
                            self.spec.name
                        )));
                    }
                }
                () = cancel.cancelled() => {
                    return Err(unavailable(format!(
                        "the call was cancelled while the MCP server {} was starting",
                        self.spec.name
                    )));
                }
            }
        }
    }

    /// Stops the server: waits (at most `grace`) for notifications still being sent, then
    /// closes the connection and stops the child, returning once the child has exited or been
    /// killed (the supervisor reports `Stopped` only then).
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.tasks.close();
        let _ = tokio::time::timeout(grace, self.tasks.wait()).await;
        self.shutdown.cancel();
        let mut state = self.state.subscribe();
        // Closing takes at most `CLOSE_AT_MOST` (a server that ignores SIGTERM takes about
        // that); the bound, a second above it, only guards against a supervisor that is gone.
        let _ = tokio::time::timeout(
            connection::CLOSE_AT_MOST.saturating_add(Duration::from_secs(1)),
            state.wait_for(|s| matches!(s, State::Stopped)),
        )
        .await;
    }

    async fn supervise(self: Arc<Server>, first: oneshot::Sender<()>) {
        let mut first = Some(first);
        let mut failures: u32 = 0;
        loop {
            self.state.send_replace(State::Starting);
            let attempt = tokio::select! {
                attempt = connection::open(&self.spec, self.handler.clone()) => attempt,
                () = self.shutdown.cancelled() => break,
            };
            // `reason` is for the model, `logged` (with the server's stderr) for the log.
            let (reason, logged, delay) = match attempt {
                Ok(connection) => {
                    let initial = first.is_some();
                    self.set_tools(connection.tools.clone(), !initial);
                    *lock(&self.offered) = Arc::new(connection.offered.clone());
                    *lock(&self.start_error) = None;
                    self.state.send_replace(State::Up(connection.peer()));
                    if let Some(first) = first.take() {
                        let _ = first.send(());
                    }
                    // A restarted server has forgotten what toolgate subscribed to.
                    self.handler.watch().came_up();
                    tracing::info!(server = %self.spec.name, tools = connection.tools.tools.len(), "MCP server started");
                    let since = Instant::now();
                    if !self.serve(&connection).await {
                        // Calls fail from now on, but `shutdown` waits for `Stopped`: the child
                        // must get its stdin closed and time to exit (reading what was sent
                        // last, such as a cancellation) before the host may exit and take it down.
                        self.state.send_replace(State::Stopping);
                        connection.close().await;
                        self.state.send_replace(State::Stopped);
                        self.handler.watch().stopped();
                        return;
                    }
                    self.state.send_replace(State::Starting);
                    let (reason, stderr) = connection.exit_note().await;
                    connection.close().await;
                    if since.elapsed() >= HEALTHY_AFTER {
                        failures = 0;
                    }
                    failures += 1;
                    // Its stderr goes to the log; the model is told only how it ended.
                    let logged = format!("{reason}{}", stderr_note(&stderr));
                    if failures == 1 {
                        tracing::warn!(server = %self.spec.name, "MCP server stopped ({logged}); starting it again");
                        continue;
                    }
                    (reason, logged, backoff(failures - 1))
                }
                Err(error) => {
                    let logged = error.report();
                    if first.is_some() {
                        // The host reports a failed first start (`Upstreams::problems`).
                        tracing::debug!(server = %self.spec.name, "MCP server did not start: {logged}");
                        *lock(&self.start_error) = Some(logged.clone());
                    }
                    if let Some(first) = first.take() {
                        let _ = first.send(());
                    }
                    failures += 1;
                    // What failed may quote its stderr or a URL with a secret: the log has it.
                    (
                        "it could not be started".to_owned(),
                        logged,
                        backoff(failures),
                    )
                }
            };
            let next = toolgate_policy::format_duration(Some(delay));
            if self.start_error().is_none() {
                tracing::warn!(server = %self.spec.name, "MCP server not running ({logged}); next attempt in {next}");
            } else {
                // It never started: the host has reported that once (`Upstreams::problems`).
                tracing::debug!(server = %self.spec.name, "MCP server still not started ({logged}); next attempt in {next}");
            }
            self.state.send_replace(State::Down {
                reason,
                retry_at: Instant::now() + delay,
            });
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.shutdown.cancelled() => break,
            }
        }
        self.state.send_replace(State::Stopped);
        self.handler.watch().stopped();
    }

    /// Serves a started connection until it closes (`true`) or the server is shut down
    /// (`false`), fetching the tool list again whenever the server says it changed.
    async fn serve(&self, connection: &Connection) -> bool {
        loop {
            tokio::select! {
                () = connection.closed() => return true,
                () = self.shutdown.cancelled() => return false,
                () = self.handler.watch().offered_change() => {
                    let peer = connection.peer();
                    let listing = list_offered(&peer, &self.spec.name);
                    let offered = match self.spec.startup_timeout {
                        Some(after) => match tokio::time::timeout(after, listing).await {
                            Ok(offered) => offered,
                            Err(_) => {
                                tracing::warn!(server = %self.spec.name, "listing its resources and prompts took longer than its startup_timeout; the last lists stay");
                                self.handler.offered_refreshed();
                                continue;
                            }
                        },
                        None => listing.await,
                    };
                    for line in &offered.left_out {
                        tracing::warn!(server = %self.spec.name, "MCP server {}: {line}", self.spec.name);
                    }
                    *lock(&self.offered) = Arc::new(offered);
                    self.handler.offered_refreshed();
                }
                () = self.handler.list_changed() => {
                    let peer = connection.peer();
                    let listing = listing::list_tools(&peer, &self.spec.name);
                    let listed = match self.spec.startup_timeout {
                        Some(after) => tokio::time::timeout(after, listing)
                            .await
                            .unwrap_or_else(|_| Err(rmcp::ServiceError::Timeout { timeout: after })),
                        None => listing.await,
                    };
                    match listed {
                        Ok(tools) => self.set_tools(tools, true),
                        Err(source) => tracing::warn!(
                            server = %self.spec.name,
                            "{}",
                            UpstreamError::ListTools { source }.report()
                        ),
                    }
                }
            }
        }
    }

    /// Keeps `tools` as the server's list; when it differs from the last one and `notify` is
    /// set, tells the listeners.
    /// The host reports what the first list left out (`Upstreams::problems`); what a later
    /// list leaves out is logged here.
    fn set_tools(&self, tools: Listed, notify: bool) {
        let changed = {
            let mut current = lock(&self.tools);
            if **current == tools {
                false
            } else {
                *current = Arc::new(tools);
                true
            }
        };
        if changed && notify {
            tracing::info!(server = %self.spec.name, "the MCP server's tool list changed");
            for line in &self.tools().left_out {
                tracing::warn!(server = %self.spec.name, "MCP server {}: {line}", self.spec.name);
            }
            let listeners = lock(&self.on_change).clone();
            for f in listeners {
                f(&self.spec.name);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `d` rounded up to whole milliseconds, for messages.
fn round_up(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_micros().div_ceil(1000)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_half_a_second_up_to_thirty() {
        let pauses: Vec<u128> = (1..=9).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(
            pauses,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
