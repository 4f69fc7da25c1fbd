//! Clients on protocol 2026-07-28 listening for changes (`subscriptions/listen`).
//!
//! On the 2025 revisions a server tells a connected client `notifications/*/list_changed`
//! whenever it likes ([`super::peers`]). From 2026-07-28 there is no connection to tell: a
//! client that wants to hear of changes keeps a `subscriptions/listen` request open, and the
//! notifications go down that request's stream, marked with its id. `serve` accepts
//! `toolsListChanged`, `resourcesListChanged` and `promptsListChanged` there (rmcp keeps only
//! what the capabilities offer), and tells each listener what the connections are told: every
//! listener on a reload or an upstream's change, the listeners of one session when that
//! session found tools.
//!
//! Listeners are bounded ([`MAX_LISTENERS`]); one more is refused with an error that says so.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionSink;
use toolgate_store::SessionId;

use crate::upstream::ListKind;

/// The most `subscriptions/listen` requests open at once, over all clients.
pub(crate) const MAX_LISTENERS: usize = 1024;

/// How long telling one listener may take before it is skipped (it reads nothing).
const SEND_WAIT: Duration = Duration::from_secs(1);

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Tools,
    Resources,
    Prompts,
}

impl From<ListKind> for Change {
    fn from(list: ListKind) -> Self {
        match list {
            ListKind::Resources => Change::Resources,
            ListKind::Prompts => Change::Prompts,
        }
    }
}

/// The filter `serve` accepts on `subscriptions/listen`: the list changes asked for (a
/// resource's own updates are not offered there).
pub(crate) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::builder();
    if requested.tools_list_changed == Some(true) {
        accepted = accepted.tools_list_changed();
    }
    if requested.resources_list_changed == Some(true) {
        accepted = accepted.resources_list_changed();
    }
    if requested.prompts_list_changed == Some(true) {
        accepted = accepted.prompts_list_changed();
    }
    accepted.build()
}

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

    /// Tells the listeners of `session` (all of them for `None`) that `list` changed, those
    /// that asked to hear of it; answers how many were told.
    pub(crate) async fn list_changed(&self, list: Change, session: Option<&SessionId>) -> usize {
        let sinks: Vec<SubscriptionSink> = self
            .lock()
            .values()
            .filter(|(id, _)| session.is_none_or(|s| s == id))
            .filter(|(_, sink)| {
                let accepted = sink.accepted();
                match list {
                    Change::Tools => accepted.tools_list_changed == Some(true),
                    Change::Resources => accepted.resources_list_changed == Some(true),
                    Change::Prompts => accepted.prompts_list_changed == Some(true),
                }
            })
            .map(|(_, sink)| sink.clone())
            .collect();
        let sends = sinks.iter().map(|sink| {
            tokio::time::timeout(SEND_WAIT, async move {
                match list {
                    Change::Tools => sink.notify_tool_list_changed().await,
                    Change::Resources => sink.notify_resource_list_changed().await,
                    Change::Prompts => sink.notify_prompt_list_changed().await,
                }
            })
        });
        futures::future::join_all(sends)
            .await
            .into_iter()
            .filter(|sent| matches!(sent, Ok(Ok(()))))
            .count()
    }
}
