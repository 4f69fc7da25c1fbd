//! Progress from running tools to the MCP client that asked for it.
//!
//! Tools report progress through their context; the engine turns it into `update` events. One
//! listener per engine hands the events of the calls whose client sent a `progressToken` to that
//! call's route; the call forwards them as `notifications/progress` while it runs.
//!
//! A route holds one update, the newest, and how many came: a tool reports as fast as it likes,
//! a client reads as slowly as it likes, and what waits in between is one message per call.
//! A call sends at most one notification every [`PROGRESS_INTERVAL`]; updates that came
//! meanwhile, or while the client was still taking the one before, are folded into the next
//! notification (its `progress` counts every update, so it still grows by one per update the
//! tool made). So neither serve nor the pipe or socket to the client fills with notifications.
//! When the call ends, the newest update not yet sent goes out at once, then the result: at most
//! two notifications stand between a call's end and its result reaching the client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate::events::{Event, EventKind};

/// The least time between two progress notifications of one call, but for the last one.
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// The newest update of a call, and how many updates it has made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Latest {
    pub(crate) count: u64,
    pub(crate) message: String,
}

/// The calls that want progress, by call id.
#[derive(Debug, Default)]
pub(crate) struct ProgressRoutes {
    routes: Mutex<HashMap<String, watch::Sender<Latest>>>,
}

impl ProgressRoutes {
    /// The listener to register on every engine.
    pub(crate) fn listener(self: &Arc<Self>) -> impl Fn(&Event) + Send + Sync + 'static {
        let routes = Arc::clone(self);
        move |event: &Event| {
            if let EventKind::Update { message } = &event.kind
                && let Ok(map) = routes.routes.lock()
                && let Some(tx) = map.get(&event.call_id)
            {
                tx.send_modify(|latest| {
                    latest.count += 1;
                    latest.message.clone_from(message);
                });
            }
        }
    }

    /// Starts routing the progress of `call_id`; the receiver sees a change for each update
    /// (several at once when they came faster than it looked) and ends after
    /// [`unregister`](Self::unregister).
    pub(crate) fn register(&self, call_id: &str) -> watch::Receiver<Latest> {
        let (tx, rx) = watch::channel(Latest::default());
        if let Ok(mut map) = self.routes.lock() {
            map.insert(call_id.to_owned(), tx);
        }
        rx
    }

    pub(crate) fn unregister(&self, call_id: &str) {
        if let Ok(mut map) = self.routes.lock() {
            map.remove(call_id);
        }
    }
}

/// Sends the progress of one call to `peer` as `notifications/progress` with `token`, one at a
/// time and at most one every [`PROGRESS_INTERVAL`], until the route is
/// [unregistered](ProgressRoutes::unregister) and `ended` fires; then sends the newest update
/// not yet sent, if any, and returns.
pub(crate) async fn forward_progress(
    mut updates: watch::Receiver<Latest>,
    token: ProgressToken,
    peer: Peer<RoleServer>,
    ended: CancellationToken,
) {
    while updates.changed().await.is_ok() {
        let latest = updates.borrow_and_update().clone();
        let note = ProgressNotificationParam::new(token.clone(), latest.count as f64)
            .with_message(latest.message);
        if peer.notify_progress(note).await.is_err() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(PROGRESS_INTERVAL) => {}
            () = ended.cancelled() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(call_id: &str, message: &str) -> Event {
        Event {
            kind: EventKind::Update {
                message: message.to_owned(),
            },
            call_kind: toolgate::access::CallKind::Tool,
            call_id: call_id.to_owned(),
            session: None,
            model_name: "progress".to_owned(),
            tool_name: "progress".to_owned(),
            arguments: "{}".to_owned(),
        }
    }

    #[test]
    fn a_burst_of_updates_waits_as_one_with_its_count() {
        let routes = Arc::new(ProgressRoutes::default());
        let listener = routes.listener();
        let mut rx = routes.register("c1");
        for i in 1..=10_000 {
            listener(&update("c1", &format!("step {i}")));
        }
        listener(&update("other", "not this call"));
        assert!(rx.has_changed().unwrap());
        let latest = rx.borrow_and_update().clone();
        assert_eq!(
            latest,
            Latest {
                count: 10_000,
                message: "step 10000".to_owned()
            }
        );
        routes.unregister("c1");
        assert!(rx.has_changed().is_err(), "the route ends with the call");
    }
}
