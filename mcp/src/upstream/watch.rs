//! What toolgate watches on one server besides its tools: the resources it subscribed to for its
//! clients, the `notifications/resources/updated` the server sends for them, its notices that
//! its resource or prompt list changed, and each time it (re)starts.
//!
//! This is the bookkeeping only; [`Upstreams`](super::Upstreams) sends the requests. toolgate
//! subscribes to a URI once per server, however many clients asked: the first client's
//! `resources/subscribe` is sent on, the last one's `resources/unsubscribe` too. A server that
//! restarts has forgotten its subscriptions, so they are sent again once it is back. At most
//! [`MAX_SUBSCRIBED`] URIs are watched on one server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The most URIs toolgate subscribes to on one server.
pub const MAX_SUBSCRIBED: usize = 4096;

/// Called with the URI of each `notifications/resources/updated` of a server.
pub(crate) type OnUpdated = Arc<dyn Fn(&str) + Send + Sync>;

/// URI -> how many subscriptions of toolgate's clients hold it.
pub(crate) type Subscribed = BTreeMap<String, usize>;

/// One server's watched resources and notices; lives as long as the server's handler, across
/// restarts.
#[derive(Default)]
pub(crate) struct Watch {
    /// Held across the request upstream, so subscribes and unsubscribes reach the server in the
    /// order they were made.
    subscribed: tokio::sync::Mutex<Subscribed>,
    listeners: Mutex<Vec<OnUpdated>>,
    offered_changed: Notify,
    /// The lists the server said changed since they were last fetched: resources, prompts.
    announced: Mutex<(bool, bool)>,
    /// Notified each time the server has (re)started, and once when it is shut down.
    up: Arc<Notify>,
    stopped: AtomicBool,
}

impl Watch {
    /// The server sent `notifications/resources/updated` for `uri`.
    pub(crate) fn updated(&self, uri: &str) {
        let listeners = self
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for f in listeners {
            f(uri);
        }
    }

    /// Calls `f` with the URI of every update the server sends.
    pub(crate) fn on_updated(&self, f: OnUpdated) {
        self.listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(f);
    }

    /// The server said its resource list (or its prompt list) changed.
    pub(crate) fn offered_changed(&self, resources: bool, prompts: bool) {
        {
            let mut announced = self.announced.lock().unwrap_or_else(|p| p.into_inner());
            announced.0 |= resources;
            announced.1 |= prompts;
        }
        self.offered_changed.notify_one();
    }

    /// Which lists the server said changed since the last call: resources, prompts.
    pub(crate) fn take_announced(&self) -> (bool, bool) {
        std::mem::take(&mut *self.announced.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Resolves when the server said its resource or prompt list changed (a notice that came
    /// while nobody waited is kept).
    pub(crate) async fn offered_change(&self) {
        self.offered_changed.notified().await;
    }

    /// The subscriptions, locked for a change and the request that goes with it.
    pub(crate) async fn subscribed(&self) -> tokio::sync::MutexGuard<'_, Subscribed> {
        self.subscribed.lock().await
    }

    /// The server has (re)started.
    pub(crate) fn came_up(&self) {
        self.up.notify_one();
    }

    /// The server is shut down for good.
    pub(crate) fn stopped(&self) {
        self.stopped.store(true, Ordering::Release);
        self.up.notify_one();
    }

    /// What is notified when the server (re)starts or stops, and whether it stopped.
    pub(crate) fn up(&self) -> Arc<Notify> {
        self.up.clone()
    }

    /// Whether the server is shut down for good.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}
