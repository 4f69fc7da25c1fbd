//! Clients on protocol 2026-07-28 listening for changes (`subscriptions/listen`).
//!
//! On the 2025 revisions a server tells a connected client `notifications/tools/list_changed`
//! whenever it likes ([`super::peers`]). From 2026-07-28 there is no connection to tell: a
//! client that wants to hear of changes keeps a `subscriptions/listen` request open, and the
//! notifications go down that request's stream, marked with its id. `serve` accepts
//! `toolsListChanged` there, and tells each listener when its tool list changed: every
//! listener on a reload or an upstream's change, the listeners of one session when that
//! session found tools.
//!
//! Listeners are bounded ([`MAX_LISTENERS`]); one more is refused with an error that says so.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::service::SubscriptionSink;
use toolgate_store::SessionId;

/// The most `subscriptions/listen` requests open at once, over all clients.
pub(crate) const MAX_LISTENERS: usize = 1024;

/// How long telling one listener may take before it is skipped (it reads nothing).
const SEND_WAIT: Duration = Duration::from_secs(1);

/// The open `subscriptions/listen` requests.
#[derive(Debug, Default)]
pub(crate) struct Listeners {
    next: AtomicU64,
    sinks: Mutex<HashMap<u64, (SessionId, SubscriptionSink)>>,
}

/// Removes its listener when dropped (the listen request ended).
pub(crate) struct Listening<'a> {
    listeners: &'a Listeners,
    key: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.listeners.lock().remove(&self.key);
    }
}

impl Listeners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SessionId, SubscriptionSink)>> {
        self.sinks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds the listener of `session`; it stays until the guard is dropped.
    ///
    /// # Errors
    ///
    /// `-32000` when [`MAX_LISTENERS`] are open already.
    pub(crate) fn add(
        &self,
        session: SessionId,
        sink: SubscriptionSink,
    ) -> Result<Listening<'_>, McpError> {
        let mut sinks = self.lock();
        if sinks.len() >= MAX_LISTENERS {
            return Err(McpError::new(
                rmcp::model::ErrorCode(-32000),
                format!(
                    "too many subscriptions: this server holds at most {MAX_LISTENERS} \
                     subscriptions/listen requests open; close one or try later"
                ),
                None,
            ));
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        sinks.insert(key, (session, sink));
        Ok(Listening {
            listeners: self,
            key,
        })
    }

    /// Tells the listeners of `session` (all of them for `None`) that their tool list
    /// changed; answers how many were told.
    pub(crate) async fn tool_list_changed(&self, session: Option<&SessionId>) -> usize {
        let sinks: Vec<SubscriptionSink> = self
            .lock()
            .values()
            .filter(|(id, _)| session.is_none_or(|s| s == id))
            .map(|(_, sink)| sink.clone())
            .collect();
        let sends = sinks
            .iter()
            .map(|sink| tokio::time::timeout(SEND_WAIT, sink.notify_tool_list_changed()));
        futures::future::join_all(sends)
            .await
            .into_iter()
            .filter(|sent| matches!(sent, Ok(Ok(()))))
            .count()
    }
}
