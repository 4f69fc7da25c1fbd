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
//!
//! Progress an upstream MCP server sends for a call comes with numbers of its own (`progress`,
//! `total`, `message`): those go to the client as the server sent them, under the client's
//! token ([`ProgressRoutes::exact`]), and the call's `update` events, which say the same in
//! text, are not sent on top.

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
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Latest {
    pub(crate) count: u64,
    pub(crate) message: String,
    /// The newest progress of an upstream server, as it sent it; once there is one, text
    /// updates of the call are not counted.
    pub(crate) exact: Option<Exact>,
}

/// Progress as an upstream server sent it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Exact {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
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
                tx.send_if_modified(|latest| {
                    if latest.exact.is_some() {
                        return false;
                    }
                    latest.count += 1;
                    latest.message.clone_from(message);
                    true
                });
            }
        }
    }

    /// The progress of `call_id` as an upstream server sent it (its token aside), when the
    /// call's client asked for progress.
    pub(crate) fn exact(&self, call_id: &str, progress: &ProgressNotificationParam) {
        if let Ok(map) = self.routes.lock()
            && let Some(tx) = map.get(call_id)
        {
            tx.send_modify(|latest| {
                latest.exact = Some(Exact {
                    progress: progress.progress,
                    total: progress.total,
                    message: progress.message.clone(),
                });
            });
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
        let note = match latest.exact {
            Some(exact) => {
                let mut note = ProgressNotificationParam::new(token.clone(), exact.progress);
                note.total = exact.total;
                note.message = exact.message;
                note
            }
            None => ProgressNotificationParam::new(token.clone(), latest.count as f64)
                .with_message(latest.message),
        };
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
            caller: toolgate::Caller::local(),
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
                message: "step 10000".to_owned(),
                exact: None,
            }
        );
        routes.unregister("c1");
        assert!(rx.has_changed().is_err(), "the route ends with the call");
    }

    #[test]
    fn an_upstreams_numbers_are_kept_and_its_text_updates_not_counted() {
        let routes = Arc::new(ProgressRoutes::default());
        let listener = routes.listener();
        let mut rx = routes.register("c1");
        let mut sent = ProgressNotificationParam::new(
            ProgressToken(rmcp::model::NumberOrString::Number(7)),
            0.25,
        );
        sent.total = Some(4.0);
        sent.message = Some("a quarter".to_owned());
        routes.exact("c1", &sent);
        rx.borrow_and_update();
        // The same progress in words, as the call's update event says it.
        listener(&update("c1", "0.25/4: a quarter"));
        assert!(
            !rx.has_changed().unwrap(),
            "the text update is not sent on top"
        );
        let latest = rx.borrow().clone();
        assert_eq!(
            latest.exact,
            Some(Exact {
                progress: 0.25,
                total: Some(4.0),
                message: Some("a quarter".to_owned()),
            })
        );
    }
}
