//! One client connection as the way back from upstream servers: its peer, the log level it
//! asked for (`logging/setLevel`), a bounded queue of log messages on their way to it, and
//! whether it can take a request to the client (the capabilities it declared).

// Sampling, roots and logging are deprecated by SEP-2577 (the 2026-07-28 revision asks for
// input in results instead), but they are how every revision with sessions works, and this
// passes them on.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{
    ElicitRequestParams, LoggingLevel, LoggingMessageNotificationParam, ServerRequest,
};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;

/// Most log messages waiting for one client; more are dropped (and counted in toolgate's log).
pub(crate) const LOG_QUEUE: usize = 256;

/// One client connection.
pub(crate) struct ClientLink {
    key: u64,
    peer: Peer<RoleServer>,
    /// The least severe level the client wants; `None` (it never said): every level.
    level: Mutex<Option<LoggingLevel>>,
    logs: mpsc::Sender<LoggingMessageNotificationParam>,
    dropped: Mutex<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain values, valid after any panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How severe a level is, from 0 (`debug`) to 7 (`emergency`).
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl ClientLink {
    /// The connection `key` to `peer`, with the task that sends it its log messages (it ends
    /// when the link is dropped or the client is gone). Must run inside the runtime.
    pub(crate) fn new(key: u64, peer: Peer<RoleServer>) -> Arc<ClientLink> {
        let (logs, mut queue) = mpsc::channel::<LoggingMessageNotificationParam>(LOG_QUEUE);
        let sender = peer.clone();
        tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                if sender.notify_logging_message(message).await.is_err() {
                    return;
                }
            }
        });
        Arc::new(ClientLink {
            key,
            peer,
            level: Mutex::new(None),
            logs,
            dropped: Mutex::new(0),
        })
    }

    pub(crate) fn key(&self) -> u64 {
        self.key
    }

    pub(crate) fn peer(&self) -> &Peer<RoleServer> {
        &self.peer
    }

    /// `logging/setLevel`: from now on only messages at `level` or more severe.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        *lock(&self.level) = Some(level);
    }

    /// Queues `message` for the client unless its level is below the client's, or the queue
    /// is full (then it is dropped and counted). Never waits.
    pub(crate) fn log(&self, message: LoggingMessageNotificationParam) {
        if let Some(least) = *lock(&self.level)
            && severity(message.level) < severity(least)
        {
            return;
        }
        if self.logs.try_send(message).is_err() {
            let mut dropped = lock(&self.dropped);
            *dropped += 1;
            if dropped.is_power_of_two() {
                tracing::warn!(
                    client = self.key,
                    dropped = *dropped,
                    "log messages for a client that does not read them dropped ({LOG_QUEUE} wait at most)"
                );
            }
        }
    }

    /// Why the client cannot take `request`, if it cannot: it did not declare the capability
    /// (or, for elicitation, the mode).
    pub(crate) fn cannot_take(&self, request: &ServerRequest) -> Option<String> {
        let info = self.peer.peer_info();
        let capabilities = info.as_ref().map(|i| &i.capabilities);
        let (method, declared) = match request {
            ServerRequest::CreateMessageRequest(_) => (
                "sampling",
                capabilities.is_some_and(|c| c.sampling.is_some()),
            ),
            ServerRequest::ListRootsRequest(_) => {
                ("roots", capabilities.is_some_and(|c| c.roots.is_some()))
            }
            ServerRequest::ElicitRequest(elicit) => {
                let modes = capabilities.and_then(|c| c.elicitation.as_ref());
                match &elicit.params {
                    ElicitRequestParams::UrlElicitationParams { .. } => (
                        "elicitation (URL mode)",
                        modes.is_some_and(|m| m.url.is_some()),
                    ),
                    // A client that names no mode takes forms (2025-06-18).
                    _ => (
                        "elicitation (form mode)",
                        modes.is_some_and(|m| m.form.is_some() || m.url.is_none()),
                    ),
                }
            }
            _ => ("this", false),
        };
        (!declared).then(|| {
            format!("the client that made the call did not declare the {method} capability, so toolgate cannot ask it")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_debug_to_emergency() {
        let all = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        let ranks: Vec<u8> = all.into_iter().map(severity).collect();
        assert_eq!(ranks, (0..8).collect::<Vec<u8>>());
    }
}
