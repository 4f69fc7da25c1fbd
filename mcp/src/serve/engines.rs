//! The engine every new call runs on, swapped whole when the policy changes.
//!
//! A [`Loaded`] is one policy made into an engine, with the session store it names. The
//! current one sits in an [`ArcSwap`]: a call takes an `Arc` of it when it starts and keeps it
//! to the end, so a swap never changes the engine under a running call; the old engine is
//! dropped when its last call ends.
//!
//! The policy's upstream MCP servers (`mcp_servers:`) are started with the first engine and
//! kept across reloads while the policy lists the same servers: a reload rebuilds the engine
//! with their current tool lists, without restarting them. A server whose tool list changes
//! (it sent `notifications/tools/list_changed`, or came back from a restart with other tools)
//! sets off a reload too ([`Engines::upstream_changed`]). When a reload lists other servers,
//! the new set is started, and the old set is shut down once the last engine that uses it is
//! dropped, so calls in flight still reach their server.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use tokio::sync::Notify;
use toolgate::{Engine, Policy};
use toolgate_policy::McpServerSpec;

use crate::upstream::{Downstream, Upstreams};

use super::auth::Authenticator;
use super::console::hub::Hub;
use super::error::ServeError;
use super::progress::ProgressRoutes;
use super::session::StoredSessions;

/// One policy, built.
pub(crate) struct Loaded {
    pub(crate) engine: Engine,
    pub(crate) sessions: StoredSessions,
    /// The model-facing names every session sees without having found anything: a call to one
    /// of these needs no look at the session store first.
    pub(crate) always_visible: HashSet<String>,
    /// Counts the policies loaded, from 1.
    pub(crate) generation: u64,
    /// The most items a page of a list holds (`serve.page_size`).
    pub(crate) page_size: std::num::NonZeroUsize,
    /// The upstream servers whose tools this engine has.
    pub(crate) upstreams: Arc<UpstreamSet>,
    /// The credentials the policy accepts over HTTP (`auth:`).
    pub(crate) auth: Arc<Authenticator>,
}

/// The upstream servers of one `mcp_servers:` list, shared by every engine built while the
/// policy lists the same servers, and shut down when the last of those engines is dropped.
pub(crate) struct UpstreamSet {
    specs: Vec<McpServerSpec>,
    pub(crate) upstreams: Upstreams,
    runtime: tokio::runtime::Handle,
}

impl UpstreamSet {
    /// Starts the servers of `specs` (blocks until each started or failed, each within its
    /// `startup_timeout`); a server that did not start is logged and costs only its own tools.
    /// Must run on a thread of the runtime's blocking pool.
    fn start(
        specs: &[McpServerSpec],
        changed: &Arc<Notify>,
        downstream: &Arc<dyn Downstream>,
    ) -> Arc<UpstreamSet> {
        let runtime = tokio::runtime::Handle::current();
        let upstreams = runtime.block_on(Upstreams::start_for(specs, Some(Arc::clone(downstream))));
        for problem in upstreams.problems() {
            tracing::warn!("{problem}");
        }
        let changed = Arc::clone(changed);
        upstreams.on_change(move |server| {
            tracing::info!(server, "an upstream MCP server's tool list changed");
            changed.notify_one();
        });
        Arc::new(UpstreamSet {
            specs: specs.to_vec(),
            upstreams,
            runtime,
        })
    }

    /// Whether `specs` lists the same servers, set up the same way (where in the file they
    /// are written does not matter).
    fn serves(&self, specs: &[McpServerSpec]) -> bool {
        let same = |a: &McpServerSpec, b: &McpServerSpec| {
            a.name == b.name
                && a.transport == b.transport
                && a.searchable == b.searchable
                && a.startup_timeout == b.startup_timeout
                && a.protocol == b.protocol
                // Declared to the server when it starts.
                && a.client_requests == b.client_requests
                && a.pins == b.pins
        };
        self.specs.len() == specs.len() && self.specs.iter().zip(specs).all(|(a, b)| same(a, b))
    }
}

impl Drop for UpstreamSet {
    /// The last engine with these servers is gone: stop them (their child processes are
    /// killed with their process groups in any case when the process ends).
    fn drop(&mut self) {
        if self.upstreams.is_empty() {
            return;
        }
        let upstreams = self.upstreams.clone();
        self.runtime
            .spawn(async move { upstreams.shutdown().await });
    }
}

impl Loaded {
    /// Every model-facing name visible to a session that found nothing.
    fn base_names(engine: &Engine) -> Result<HashSet<String>, ServeError> {
        // A session id no client can have: it holds no state, and no call is ever made in it.
        let probe = engine.session(Some("\u{0}toolgate-serve-probe"))?;
        Ok(engine
            .visible_tools(&probe)
            .into_iter()
            .map(|s| s.name)
            .collect())
    }
}

/// The current engine, and how to make the next one.
pub(crate) struct Engines {
    /// Served over stdio: standard output is the MCP channel.
    stdio: bool,
    current: ArcSwap<Loaded>,
    policy: PathBuf,
    default_store_url: Option<String>,
    progress: Arc<ProgressRoutes>,
    /// Where upstream servers send what belongs to a client.
    downstream: Arc<dyn Downstream>,
    generations: AtomicU64,
    upstream_changed: Arc<Notify>,
    /// Fed with every call's events while the policy turns the console on.
    console: Arc<Hub>,
}

impl Engines {
    /// Loads the policy, starts its upstream servers and builds the first engine. Blocks: call
    /// it on the runtime's blocking pool.
    pub(crate) fn load(
        policy: &Path,
        default_store_url: Option<String>,
        progress: Arc<ProgressRoutes>,
        downstream: Arc<dyn Downstream>,
        console: Arc<Hub>,
        stdio: bool,
    ) -> Result<Self, ServeError> {
        let upstream_changed = Arc::new(Notify::new());
        let first = build(
            stdio,
            policy,
            default_store_url.as_deref(),
            (&progress, &console),
            None,
            (&upstream_changed, &downstream),
            1,
        )?;
        Ok(Engines {
            stdio,
            current: ArcSwap::from_pointee(first),
            policy: policy.to_path_buf(),
            default_store_url,
            progress,
            downstream,
            generations: AtomicU64::new(1),
            upstream_changed,
            console,
        })
    }

    /// The engine for a call that starts now.
    pub(crate) fn current(&self) -> Arc<Loaded> {
        self.current.load_full()
    }

    /// Notified when an upstream server's tool list changed: the engine should be rebuilt.
    pub(crate) fn upstream_changed(&self) -> &Arc<Notify> {
        &self.upstream_changed
    }

    /// The policy file.
    pub(crate) fn policy_path(&self) -> &Path {
        &self.policy
    }

    /// Loads the policy again and, when it is good, makes it current; answers the engine it
    /// replaced and the new one. On an error the current engine stays. Blocks: call it on the
    /// runtime's blocking pool.
    pub(crate) fn reload(&self) -> Result<(Arc<Loaded>, Arc<Loaded>), ServeError> {
        let previous = self.current();
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        let next = Arc::new(build(
            self.stdio,
            &self.policy,
            self.default_store_url.as_deref(),
            (&self.progress, &self.console),
            Some(&previous),
            (&self.upstream_changed, &self.downstream),
            generation,
        )?);
        self.current.store(Arc::clone(&next));
        Ok((previous, next))
    }
}

/// The policy's files that a change to should reload it: the policy itself, its script files,
/// its catalogs and its upstream servers' pins files.
pub(crate) fn watched_files(policy_path: &Path, policy: &Policy) -> Vec<PathBuf> {
    let mut files = vec![policy_path.to_path_buf()];
    let scripts = &policy.scripts;
    for script in [
        &scripts.rewrite,
        &scripts.before,
        &scripts.after,
        &scripts.unknown_tool,
    ]
    .into_iter()
    .flatten()
    {
        files.push(script.file.clone());
    }
    if let Some(search) = &policy.search {
        files.extend(search.catalogs.iter().cloned());
    }
    // Pinning again (`toolgate upstream pin`) offers the tools it approves at once.
    files.extend(policy.mcp_servers.iter().filter_map(|s| s.pins.clone()));
    // A JWKS file: the issuer rotated its keys.
    files.extend(policy.auth.jwt.as_ref().and_then(|j| j.jwks_file.clone()));
    files.sort();
    files.dedup();
    files
}

fn build(
    stdio: bool,
    path: &Path,
    default_store_url: Option<&str>,
    (progress, console): (&Arc<ProgressRoutes>, &Arc<Hub>),
    previous: Option<&Loaded>,
    (upstream_changed, downstream): (&Arc<Notify>, &Arc<dyn Downstream>),
    generation: u64,
) -> Result<Loaded, ServeError> {
    let policy = toolgate_policy::load_file(path)?;
    let auth = Arc::new(Authenticator::for_policy(
        &policy,
        previous.map(|p| p.auth.as_ref()),
    )?);
    refuse_audit_on_the_channel(&policy, stdio)?;
    let sessions = match previous {
        Some(previous) => {
            StoredSessions::for_reloaded_policy(&policy, default_store_url, &previous.sessions)?
        }
        None => StoredSessions::for_policy(&policy, default_store_url)?,
    };
    let upstreams = match previous {
        Some(previous) if previous.upstreams.serves(&policy.mcp_servers) => {
            Arc::clone(&previous.upstreams)
        }
        _ => UpstreamSet::start(&policy.mcp_servers, upstream_changed, downstream),
    };
    let needs_store = policy.reduction.as_ref().is_some_and(|r| r.store.is_none());
    // Counted for /metrics, or for the OTLP export (O5, O7).
    let policy_metrics = toolgate_telemetry::metrics::Metrics::counting(&policy.telemetry);
    // Off, the console costs nothing: no listener, so no event is built for it. Over stdio
    // there is no page to show it on.
    let console_on = policy.serve.console && !stdio;
    let mut builder = upstreams
        .upstreams
        .register(Engine::builder(policy))
        .on_event(progress.listener());
    if policy_metrics {
        builder = builder.on_event(toolgate_telemetry::metrics::Metrics::global().listener());
    }
    if console_on {
        builder = builder.on_event(console.listener());
    }
    if needs_store && let Some(url) = default_store_url {
        builder = builder.default_store_url(url);
    }
    let engine = builder.build()?;
    let always_visible = Loaded::base_names(&engine)?;
    let page_size = engine.policy().serve.page_size;
    Ok(Loaded {
        engine,
        sessions,
        always_visible,
        generation,
        page_size,
        upstreams,
        auth,
    })
}

/// Over stdio, standard output carries the MCP messages: audit lines written there would be
/// read by the client as protocol, so a policy whose audit goes to stdout is refused (at start,
/// and on a reload, which keeps the last good policy).
pub(crate) fn refuse_audit_on_the_channel(policy: &Policy, stdio: bool) -> Result<(), ServeError> {
    match &policy.audit {
        Some(audit) if stdio && audit.sink == toolgate_policy::AuditSink::Stdout => {
            Err(ServeError::AuditOnStdout)
        }
        _ => Ok(()),
    }
}
