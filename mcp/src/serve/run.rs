//! `serve` from start to end.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolgate_store::SessionId;
use toolgate_telemetry::metrics::Metrics;

use crate::upstream::Downstream;

use super::console::hub::Hub;
use super::downstream::Links;
use super::engines::Engines;
use super::error::ServeError;
use super::options::ServeOptions;
use super::peers::Peers;
use super::progress::ProgressRoutes;
use super::session::StoredSessions;
use super::shared::Shared;
use super::telemetry::serve_admin;
use super::{http, reload, stdio};

/// Serves the policy's tools until the client goes away (stdio), or until `SIGINT`/`SIGTERM`
/// (HTTP, or stdio). Logs go to `tracing`; nothing but MCP is written to stdout.
///
/// # Errors
///
/// The policy does not load or build, its store cannot be opened, the HTTP settings are unsafe
/// (a non-loopback address without a token) or the address is taken, or the stdio connection
/// fails. A policy that breaks later, during a reload, is logged and the last good one stays.
pub async fn serve(options: ServeOptions) -> Result<(), ServeError> {
    let session = match &options.session {
        Some(id) => SessionId::parse(id)?,
        None => SessionId::parse(&format!("stdio-{}", random_hex()?))?,
    };
    let shutdown = CancellationToken::new();
    spawn_stop_on_signals(shutdown.clone())?;
    let mut started = None;
    let result = match options.http.clone() {
        Some(http_options) => {
            let shared = start(&options, &shutdown, &mut started).await?;
            let telemetry = shared.engines.current().engine.policy().telemetry.clone();
            start_admin(&telemetry, &shutdown).await?;
            http::serve_http(shared, http_options, shutdown.clone()).await
        }
        None => {
            // A policy that does not load fails now, not at the first request; what it
            // starts (plugins, upstream servers) waits for a request that needs it.
            let policy = toolgate_policy::load_file(&options.policy)?;
            super::engines::refuse_audit_on_the_channel(&policy, true)?;
            start_admin(&policy.telemetry, &shutdown).await?;
            tokio::spawn(prune_at_start(policy, options.default_store_url.clone()));
            stdio::serve_stdio(
                start(&options, &shutdown, &mut started),
                session,
                options.max_request_bytes,
                shutdown.clone(),
            )
            .await
        }
    };
    shutdown.cancel();
    if let Some((shared, reloader)) = started {
        let _ = reloader.await;
        // No child process of an upstream server outlives serve.
        shared
            .engines
            .current()
            .upstreams
            .upstreams
            .shutdown()
            .await;
        // Audit lines still buffered for an object store are written before serve returns
        // (L7): the runtime is shut down without waiting for anything after that.
        let engine = shared.engines.current().engine.clone();
        let _ = tokio::task::spawn_blocking(move || engine.close_audit()).await;
    }
    result
}

/// Loads the policy, builds its engine (starting its upstream servers), and starts what runs
/// beside the clients: the reload watch and the sweep of expired sessions. What it started is
/// left in `started`, for the end of `serve`.
async fn start(
    options: &ServeOptions,
    shutdown: &CancellationToken,
    started: &mut Option<(Arc<Shared>, tokio::task::JoinHandle<()>)>,
) -> Result<Arc<Shared>, ServeError> {
    let progress = Arc::new(ProgressRoutes::default());
    let console = Arc::new(Hub::default());
    let peers = Arc::new(Peers::default());
    let links = Arc::new(Links::new(Arc::clone(&peers)));
    // Loading plugins and building the engine blocks: off the async threads.
    let stdio = options.http.is_none();
    let (policy, default_url, routes, downstream, hub) = (
        options.policy.clone(),
        options.default_store_url.clone(),
        Arc::clone(&progress),
        Arc::clone(&links) as Arc<dyn Downstream>,
        Arc::clone(&console),
    );
    let engines = tokio::task::spawn_blocking(move || {
        Engines::load(&policy, default_url, routes, downstream, hub, stdio)
    })
    .await
    .map_err(|e| ServeError::Io {
        what: "loading the policy stopped",
        source: std::io::Error::other(e.to_string()),
    })??;
    let shared = Arc::new(Shared::new(engines, peers, links, progress, console));
    if Metrics::counting(&shared.engines.current().engine.policy().telemetry) {
        let weak = Arc::downgrade(&shared);
        Metrics::global().set_upstream_probe(Box::new(move || {
            weak.upgrade()
                .map(|shared| shared.engines.current().upstreams.upstreams.health())
                .unwrap_or_default()
        }));
    }
    let reloader = reload::start(Arc::clone(&shared), options.watch, shutdown.clone())?;
    tokio::spawn(sweep_expired_sessions(
        Arc::clone(&shared),
        shutdown.clone(),
    ));
    *started = Some((Arc::clone(&shared), reloader));
    Ok(shared)
}

/// Serves `/metrics` on the policy's `telemetry.admin_address`, when it has one (O5).
async fn start_admin(
    telemetry: &toolgate_policy::TelemetrySettings,
    shutdown: &CancellationToken,
) -> Result<(), ServeError> {
    match telemetry.admin_address {
        Some(addr) => serve_admin(addr, Metrics::global(), shutdown.child_token()).await,
        None => Ok(()),
    }
}

/// Deletes expired session state once, before the engine is built (stdio builds it at the
/// first request; the hourly sweep starts then).
async fn prune_at_start(policy: toolgate::Policy, default_url: Option<String>) {
    let sessions = match StoredSessions::for_policy(&policy, default_url.as_deref()) {
        Ok(sessions) => sessions,
        Err(e) => {
            tracing::warn!(
                "cannot open the session store to delete expired state: {}",
                toolgate::error::Chain(&e)
            );
            return;
        }
    };
    match sessions.prune_expired().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(sessions = n, "deleted expired session state"),
        Err(e) => tracing::warn!(
            "cannot delete expired session state: {}",
            toolgate::error::Chain(&e)
        ),
    }
}

/// How often `serve` deletes the state of sessions past the policy's `sessions.ttl`.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// Deletes expired session state at start and then every [`SWEEP_EVERY`] (it is invisible
/// once expired; this frees its space). Another instance on the same store doing the same is
/// harmless. A store that fails costs a warning, and the next sweep tries again.
async fn sweep_expired_sessions(shared: Arc<Shared>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let sessions = shared.engines.current().sessions.clone();
        match sessions.prune_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(sessions = n, "deleted expired session state"),
            Err(e) => tracing::warn!(
                "cannot delete expired session state: {}",
                toolgate::error::Chain(&e)
            ),
        }
    }
}

fn spawn_stop_on_signals(shutdown: CancellationToken) -> Result<(), ServeError> {
    use tokio::signal::unix::{SignalKind, signal};
    let signal_error = |source| ServeError::Io {
        what: "cannot listen for SIGINT and SIGTERM",
        source,
    };
    let mut interrupt = signal(SignalKind::interrupt()).map_err(signal_error)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(signal_error)?;
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            () = shutdown.cancelled() => return,
        }
        tracing::info!("stopping");
        shutdown.cancel();
    });
    Ok(())
}

fn random_hex() -> Result<String, ServeError> {
    let mut bits = [0u8; 8];
    getrandom::fill(&mut bits).map_err(|e| ServeError::Io {
        what: "cannot draw a random session id",
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(bits.iter().map(|b| format!("{b:02x}")).collect())
}
