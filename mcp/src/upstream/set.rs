//! [`Upstreams`]: every upstream server of a policy, started together, their tools registered
//! on an engine builder, kept running, shut down together.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use toolgate::EngineBuilder;
use toolgate_policy::{McpServerSpec, Position};

use super::adapter::tools_of;
use super::callers::Downstream;
use super::supervisor::Server;

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
}

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
            started.push(server);
            firsts.push(first);
        }
        for first in firsts {
            // An error means the supervisor is gone, which leaves the server down too.
            let _ = first.await;
        }
        Upstreams {
            servers: started.into(),
        }
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
        }
        out
    }

    /// Registers the tools every server listed last (`<server>.<tool>`, searchable as the
    /// policy says) on `builder`. A server that never started brings none; a pinned server
    /// brings the tools its pins let through (see `pins:` in `docs/policy.md`), and each tool
    /// held back is logged as a warning naming what changed.
    pub fn register(&self, mut builder: EngineBuilder) -> EngineBuilder {
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
    /// each connection is closed and each child process stopped (its stdin closed, killed with
    /// its process group if it has not exited half a second later). Returns once every child
    /// has exited or been killed, so a host may exit right after it without cutting a server
    /// off before it read what was sent last. Calls made after this fail with
    /// `upstream_unavailable`.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown(NOTICE_GRACE))).await;
    }
}
