//! Progress from running tools to the MCP client that asked for it.
//!
//! Tools report progress through their context; the engine turns it into `update` events. One
//! listener per engine hands the events of the calls whose client sent a `progressToken` to that
//! call's channel; the call forwards them as `notifications/progress`, in order, before its
//! result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use toolgate::events::{Event, EventKind};

/// The calls that want progress, by call id.
#[derive(Debug, Default)]
pub(crate) struct ProgressRoutes {
    routes: Mutex<HashMap<String, UnboundedSender<String>>>,
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
                let _ = tx.send(message.clone());
            }
        }
    }

    /// Starts routing the progress of `call_id`; the receiver ends after
    /// [`unregister`](Self::unregister).
    pub(crate) fn register(&self, call_id: &str) -> UnboundedReceiver<String> {
        let (tx, rx) = unbounded_channel();
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
