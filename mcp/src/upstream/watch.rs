//! What toolgate watches on one server besides its tools: the resources it subscribed to for its
//! clients, the `notifications/resources/updated` the server sends for them, and its notices
//! that its resource or prompt list changed.
//!
//! toolgate subscribes to a URI once per server, however many clients asked: the first
//! client's `resources/subscribe` is sent on, the last one's `resources/unsubscribe` too. A
//! server that restarts has forgotten its subscriptions, so they are sent again once it is
//! back. At most [`MAX_SUBSCRIBED`] URIs are watched on one server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use toolgate::tool::ToolError;

use super::access::subscription;
use super::supervisor::Server;

/// The most URIs toolgate subscribes to on one server.
pub const MAX_SUBSCRIBED: usize = 4096;

/// Called with the URI of each `notifications/resources/updated` of a server.
pub(crate) type OnUpdated = Arc<dyn Fn(&str) + Send + Sync>;

/// One server's watched resources and list notices; lives as long as the server's handler,
/// across restarts.
#[derive(Default)]
pub(crate) struct Watch {
    /// URI -> how many subscriptions of toolgate's clients hold it. Held across the request
    /// upstream, so subscribes and unsubscribes reach the server in the order they were made.
    subscribed: tokio::sync::Mutex<BTreeMap<String, usize>>,
    listeners: Mutex<Vec<OnUpdated>>,
    offered_changed: Notify,
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

    /// The server said its resource or prompt list changed.
    pub(crate) fn offered_changed(&self) {
        self.offered_changed.notify_one();
    }

    /// Resolves when the server said its resource or prompt list changed (a notice that came
    /// while nobody waited is kept).
    pub(crate) async fn offered_change(&self) {
        self.offered_changed.notified().await;
    }

    /// One more subscription to `uri` on `server`; the first is sent on.
    pub(crate) async fn add(&self, server: &Arc<Server>, uri: &str) -> Result<(), ToolError> {
        let mut subscribed = self.subscribed.lock().await;
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
        subscription(server, uri, true).await?;
        subscribed.insert(uri.to_owned(), 1);
        Ok(())
    }

    /// One subscription to `uri` on `server` fewer; the last is sent on.
    pub(crate) async fn remove(&self, server: &Arc<Server>, uri: &str) {
        let mut subscribed = self.subscribed.lock().await;
        let Some(count) = subscribed.get_mut(uri) else {
            return;
        };
        *count -= 1;
        if *count > 0 {
            return;
        }
        subscribed.remove(uri);
        if let Err(e) = subscription(server, uri, false).await {
            tracing::debug!(server = server.name(), uri, "unsubscribe not sent: {e}");
        }
    }

    /// Subscribes again to everything watched on `server`, which has just (re)started.
    pub(crate) async fn resubscribe(&self, server: &Arc<Server>) {
        let subscribed = self.subscribed.lock().await;
        for uri in subscribed.keys() {
            if let Err(e) = subscription(server, uri, true).await {
                tracing::warn!(
                    server = server.name(),
                    uri,
                    "cannot subscribe again after a restart: {e}"
                );
            }
        }
    }
}
