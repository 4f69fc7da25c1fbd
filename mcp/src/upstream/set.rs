//! [`Upstreams`]: every upstream server of a policy, started together, their tools registered
//! on an engine builder, kept running, shut down together.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CompleteRequestParams, CompleteResult};
use toolgate::EngineBuilder;
use toolgate::tool::{Tool, ToolError};
use toolgate_policy::{McpServerSpec, Position};

use super::access::{self, Slot};
use super::adapter::tools_of;
use super::callers::Downstream;
use super::catalog::Catalog;
use super::lists::{Offered, pinned};
use super::supervisor::Server;
use super::watch::MAX_SUBSCRIBED;

/// How long [`Upstreams::shutdown`] waits for cancellation notices still being sent.
const NOTICE_GRACE: Duration = Duration::from_secs(1);

/// The upstream MCP servers of a policy, started and supervised. Cheap to clone; every clone
/// shares the same servers.
///
/// ```no_run
/// # async fn demo(policy: toolgate::Policy) -> Result<(), Box<dyn std::error::Error>> {
/// use toolgate_mcp::upstream::Upstreams;
///
/// let upstreams = Upstreams::start(&policy.mcp_servers).await;
/// for problem in upstreams.problems() {
///     eprintln!("warning: {problem}");
/// }
/// let engine = upstreams.register(toolgate::Engine::builder(policy)).build()?;
/// // ... serve calls with `engine` ...
/// upstreams.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct Upstreams {
    servers: Arc<[Arc<Server>]>,
    /// Tells sets apart (every [`Upstreams::start`] draws the next one).
    id: u64,
    /// The table of every server's resources, templates and prompts, and the lists it was
    /// built from (it is built again when one of them changes).
    catalog: Arc<Mutex<Option<Built>>>,
}

/// A built [`Catalog`] and the lists it was built from.
type Built = (Vec<Arc<Offered>>, Arc<Catalog>);

/// Something wrong with one server: it did not start, or some of its tools were left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The server's name.
    pub server: String,
    /// Where its entry is in the policy.
    pub position: Option<Position>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = &self.position {
            write!(f, "{at}: ")?;
        }
        write!(f, "MCP server {}: {}", self.server, self.message)
    }
}

impl fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.servers.iter().map(|s| s.name()))
            .finish()
    }
}

impl Upstreams {
    /// Starts every server at once and returns when each has started or failed, each within
    /// its `startup_timeout`. A server that failed keeps being retried in the background (see
    /// the module docs); [`Upstreams::problems`] says which and why.
    pub async fn start(servers: &[McpServerSpec]) -> Upstreams {
        Self::start_for(servers, None).await
    }

    /// [`start`](Self::start) for a host that serves clients: what a server sends during a
    /// call (requests to the client, progress, log messages) goes to the call's client as
    /// `downstream` names it.
    pub(crate) async fn start_for(
        servers: &[McpServerSpec],
        downstream: Option<Arc<dyn Downstream>>,
    ) -> Upstreams {
        let mut started = Vec::with_capacity(servers.len());
        let mut firsts = Vec::with_capacity(servers.len());
        for spec in servers {
            let (server, first) = Server::start(spec.clone(), downstream.clone());
            tokio::spawn(resubscribe_on_restart(Arc::downgrade(&server)));
            started.push(server);
            firsts.push(first);
        }
        for first in firsts {
            // An error means the supervisor is gone, which leaves the server down too.
            let _ = first.await;
        }
        static SETS: AtomicU64 = AtomicU64::new(1);
        Upstreams {
            servers: started.into(),
            id: SETS.fetch_add(1, Ordering::Relaxed),
            catalog: Arc::default(),
        }
    }

    /// What tells this set of started servers from another (a reload that restarts them
    /// makes another); `0` for the empty set of [`Default`].
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The servers, in policy order.
    pub(crate) fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// Whether the policy has no upstream servers.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The servers' names, in policy order.
    pub fn names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name().to_owned()).collect()
    }

    /// Each server's state, in policy order, for the metrics (`toolgate_upstream_up`).
    pub fn health(&self) -> Vec<toolgate_telemetry::metrics::UpstreamHealth> {
        self.servers
            .iter()
            .map(|s| toolgate_telemetry::metrics::UpstreamHealth {
                server: s.name().to_owned(),
                state: s.health().0,
            })
            .collect()
    }

    /// What is wrong now: servers that never started (their tools are missing), and tools
    /// its list left out (a bad name or schema, see `docs/policy.md`). Empty when every server runs with
    /// every tool.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        for server in self.servers.iter() {
            let problem = |message: String| Problem {
                server: server.name().to_owned(),
                position: server.spec.position.clone(),
                message,
            };
            if let Some(error) = server.start_error() {
                out.push(problem(format!(
                    "did not start, so its tools are missing: {error}"
                )));
            }
            let (_, left_out) = tools_of(server);
            out.extend(left_out.into_iter().map(problem));
            out.extend(server.offered().left_out.iter().cloned().map(problem));
        }
        for (i, line) in &self.catalog().left_out {
            let server = &self.servers[*i];
            out.push(Problem {
                server: server.name().to_owned(),
                position: server.spec.position.clone(),
                message: line.clone(),
            });
        }
        out
    }

    /// Every server's resources, templates and prompts in one table (see
    /// [`catalog`](super::catalog)), built again when a list changed since the last call.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        let lists: Vec<Arc<Offered>> = self.servers.iter().map(|s| s.offered()).collect();
        let mut cached = self.catalog.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((built_from, catalog)) = cached.as_ref()
            && built_from.len() == lists.len()
            && built_from
                .iter()
                .zip(&lists)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return catalog.clone();
        }
        let mut held = Vec::new();
        let named: Vec<(&str, Arc<Offered>)> = self
            .servers
            .iter()
            .zip(&lists)
            .enumerate()
            .map(|(i, (s, o))| {
                let (kept, lines) = pinned(&s.spec, o);
                held.extend(lines.into_iter().map(|line| (i, line)));
                (s.name(), kept)
            })
            .collect();
        let mut catalog = Catalog::build(&named);
        catalog.left_out.extend(held);
        let catalog = Arc::new(catalog);
        for (i, line) in &catalog.left_out {
            tracing::warn!(
                server = self.servers[*i].name(),
                "MCP server {}: {line}",
                self.servers[*i].name()
            );
        }
        *cached = Some((lists, catalog.clone()));
        catalog
    }

    /// What the server `server` (an index of the catalog) declared besides tools.
    pub(crate) fn declared(&self, server: usize) -> super::lists::Declared {
        self.servers[server].offered().declared
    }

    /// The target that reads `uri` (as the client sent it) from the server `server` (an index
    /// of the catalog), and the slot the rest of its result is left in.
    pub(crate) fn reader(&self, server: usize, uri: &str) -> (Arc<dyn Tool>, Slot) {
        access::reader(self.servers[server].clone(), uri)
    }

    /// The target that gets the prompt `name` (`remote` on the server `server`), and its slot.
    pub(crate) fn getter(&self, server: usize, name: &str, remote: &str) -> (Arc<dyn Tool>, Slot) {
        access::getter(self.servers[server].clone(), name, remote)
    }

    /// `completion/complete` on the server `server`, the reference in the server's names.
    pub(crate) async fn complete(
        &self,
        server: usize,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ToolError> {
        access::complete(&self.servers[server], params).await
    }

    /// One more subscription to `uri` on the server `server`: the first is sent on, and at
    /// most [`MAX_SUBSCRIBED`] URIs are watched on one server.
    pub(crate) async fn subscribe(&self, server: usize, uri: &str) -> Result<(), ToolError> {
        let server = &self.servers[server];
        let mut subscribed = server.handler.watch().subscribed().await;
        if let Some(count) = subscribed.get_mut(uri) {
            *count += 1;
            return Ok(());
        }
        if subscribed.len() >= MAX_SUBSCRIBED {
            return Err(ToolError::coded(
                "overloaded",
                format!(
                    "toolgate already watches {MAX_SUBSCRIBED} resources of the MCP server {}, the most it watches on one server",
                    server.name()
                ),
            ));
        }
        access::subscription(server, uri, true).await?;
        subscribed.insert(uri.to_owned(), 1);
        Ok(())
    }

    /// One subscription to `uri` on the server `server` fewer: the last is sent on.
    pub(crate) async fn unsubscribe(&self, server: usize, uri: &str) {
        let server = &self.servers[server];
        let mut subscribed = server.handler.watch().subscribed().await;
        let Some(count) = subscribed.get_mut(uri) else {
            return;
        };
        *count -= 1;
        if *count > 0 {
            return;
        }
        subscribed.remove(uri);
        if let Err(e) = access::subscription(server, uri, false).await {
            tracing::debug!(server = server.name(), uri, "unsubscribe not sent: {e}");
        }
    }

    /// Calls `f` with the server's index and the URI of every `notifications/resources/updated`
    /// a server sends. `f` runs on the server's connection task: it must not wait.
    pub(crate) fn on_resource_updated(&self, f: impl Fn(usize, &str) + Send + Sync + 'static) {
        let f = Arc::new(f);
        for (i, server) in self.servers.iter().enumerate() {
            let f = f.clone();
            server
                .handler
                .watch()
                .on_updated(Arc::new(move |uri: &str| f(i, uri)));
        }
    }

    /// Registers the tools every server listed last (`<server>.<tool>`, searchable as the
    /// policy says) on `builder`. A server that never started brings none; a pinned server
    /// brings the tools its pins let through (see `pins:` in `docs/policy.md`), and each tool
    /// held back is logged as a warning naming what changed.
    pub fn register(&self, mut builder: EngineBuilder) -> EngineBuilder {
        // The pins may have changed (a reload): the resources, templates and prompts they let
        // through are checked again the next time they are asked for.
        *self.catalog.lock().unwrap_or_else(|p| p.into_inner()) = None;
        for server in self.servers.iter() {
            super::pins::warn_held(&server.spec, &server.tools());
            let (tools, _) = tools_of(server);
            builder = builder.tools_from(server.description.clone(), server.spec.searchable, tools);
        }
        builder
    }

    /// Calls `f` with a server's name whenever its tool list changes after the start: it sent
    /// `notifications/tools/list_changed` and listed other tools, it came back from a restart
    /// with other tools, or it started late. An engine never changes once built, so the host
    /// rebuilds one with [`Upstreams::register`] and swaps it in (calls in flight finish on
    /// the old engine, whose tools still reach the same servers). `f` runs on the server's
    /// supervisor task: hand the work to a task or a channel rather than doing it there.
    pub fn on_change(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        let f: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(f);
        for server in self.servers.iter() {
            server.on_change(f.clone());
        }
    }

    /// Stops every server: cancellation notices still being sent get a moment to go out, then
    /// each connection is closed and each child process stopped as MCP's stdio shutdown says
    /// (its stdin closed; SIGTERM if it has not exited two seconds later; its process group
    /// killed two seconds after that). Returns once every child
    /// has exited or been killed, so a host may exit right after it without cutting a server
    /// off before it read what was sent last. Calls made after this fail with
    /// `upstream_unavailable`.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown(NOTICE_GRACE))).await;
    }
}

/// Subscribes again to everything watched on the server each time it (re)starts, until it is
/// shut down: a restarted server has forgotten its subscriptions.
async fn resubscribe_on_restart(server: std::sync::Weak<Server>) {
    let Some(up) = server.upgrade().map(|s| s.handler.watch().up()) else {
        return;
    };
    loop {
        up.notified().await;
        let Some(server) = server.upgrade() else {
            return;
        };
        let watch = server.handler.watch();
        if watch.is_stopped() {
            return;
        }
        let subscribed = watch.subscribed().await;
        for uri in subscribed.keys() {
            if let Err(e) = access::subscription(&server, uri, true).await {
                tracing::warn!(
                    server = server.name(),
                    uri,
                    "cannot subscribe again after a restart: {e}"
                );
            }
        }
    }
}
