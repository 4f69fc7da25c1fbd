//! What every connection of one `serve` shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::console::hub::Hub;
use super::downstream::Links;
use super::engines::Engines;
use super::peers::Peers;
use super::progress::ProgressRoutes;
use super::stateless::{MAX_IN_MEMORY, Recent};
use super::subscriptions::Subscriptions;

/// The engines, the connected clients, the calls running for them and the progress routes of
/// one `serve`.
pub(crate) struct Shared {
    pub(crate) engines: Engines,
    pub(crate) peers: Arc<Peers>,
    pub(crate) links: Arc<Links>,
    /// The stateless sessions whose state the engine keeps in memory.
    pub(crate) stateless: Recent,
    pub(crate) progress: Arc<ProgressRoutes>,
    /// Every client's `resources/subscribe`.
    pub(crate) subscriptions: Arc<Subscriptions>,
    /// The console's ring and broadcast of recent calls (fed while `serve.console` is on).
    pub(crate) console: Arc<Hub>,
    calls: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        engines: Engines,
        peers: Arc<Peers>,
        links: Arc<Links>,
        progress: Arc<ProgressRoutes>,
        console: Arc<Hub>,
    ) -> Self {
        Shared {
            engines,
            peers,
            links,
            stateless: Recent::new(MAX_IN_MEMORY),
            progress,
            subscriptions: Arc::default(),
            console,
            calls: AtomicU64::new(0),
        }
    }

    /// A call id no other call of this process has (events and progress are routed by it).
    pub(crate) fn next_call_id(&self) -> String {
        format!("mcp-{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }
}
