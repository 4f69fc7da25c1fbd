//! The connected clients, to tell each of them when a list changed for everyone (a policy
//! reload, an upstream server's resources or prompts), and to find the one client a stray log
//! message may go to.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::ServerCapabilities;
use rmcp::service::{Peer, RoleServer, ServiceError};

use super::clients::ClientLink;
use super::listeners::{Change, Listeners};
use crate::upstream::ListKind;

/// How long one client may take to accept a list-changed notification.
const NOTIFY_WAIT: Duration = Duration::from_secs(1);

/// Every client connection that finished its handshake and has not gone away.
#[derive(Default)]
pub(crate) struct Peers {
    next: AtomicU64,
    peers: Mutex<HashMap<u64, Arc<ClientLink>>>,
    /// The clients on 2026-07-28, which hear of changes on `subscriptions/listen` requests:
    /// told whatever the connections are told.
    pub(crate) listeners: Listeners,
}

impl Peers {
    /// Remembers a connection to `peer`; its key is for [`remove`](Self::remove). Must run
    /// inside the runtime.
    pub(crate) fn add(&self, peer: Peer<RoleServer>) -> Arc<ClientLink> {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let link = ClientLink::new(key, peer);
        if let Ok(mut peers) = self.peers.lock() {
            peers.insert(key, Arc::clone(&link));
        }
        link
    }

    pub(crate) fn remove(&self, key: u64) {
        if let Ok(mut peers) = self.peers.lock() {
            peers.remove(&key);
        }
    }

    /// The open connections.
    fn open(&self) -> Vec<Arc<ClientLink>> {
        match self.peers.lock() {
            Ok(mut peers) => {
                peers.retain(|_, p| !p.peer().is_transport_closed());
                peers.values().cloned().collect()
            }
            Err(_) => Vec::new(),
        }
    }

    /// The one open connection, when there is exactly one.
    pub(crate) fn only(&self) -> Option<Arc<ClientLink>> {
        let mut open = self.open();
        (open.len() == 1).then(|| open.remove(0))
    }

    /// Sends `notifications/tools/list_changed` to every open connection; answers how many.
    pub(crate) async fn tool_list_changed(&self) -> usize {
        self.notify_all(|p| async move { p.notify_tool_list_changed().await })
            .await
            + self.listeners.list_changed(Change::Tools, None).await
    }

    /// Sends the list-changed notification of `list` to every open connection.
    pub(crate) async fn list_changed(&self, list: ListKind) -> usize {
        self.listeners.list_changed(Change::from(list), None).await
            + match list {
                ListKind::Resources => {
                    self.notify_all(|p| async move { p.notify_resource_list_changed().await })
                        .await
                }
                ListKind::Prompts => {
                    self.notify_all(|p| async move { p.notify_prompt_list_changed().await })
                        .await
                }
            }
    }

    /// After a reload: every list `capabilities` offers may have changed. Answers how many
    /// connections were told about tools.
    pub(crate) async fn all_lists_changed(&self, capabilities: &ServerCapabilities) -> usize {
        let told = self.tool_list_changed().await;
        if capabilities.resources.is_some() {
            self.list_changed(ListKind::Resources).await;
        }
        if capabilities.prompts.is_some() {
            self.list_changed(ListKind::Prompts).await;
        }
        told
    }

    async fn notify_all<F, Fut>(&self, notify: F) -> usize
    where
        F: Fn(Peer<RoleServer>) -> Fut,
        Fut: Future<Output = Result<(), ServiceError>>,
    {
        // A client that reads nothing must not hold up the others: each send gets a second.
        let sends = self
            .open()
            .into_iter()
            .map(|link| tokio::time::timeout(NOTIFY_WAIT, notify(link.peer().clone())));
        futures::future::join_all(sends)
            .await
            .into_iter()
            .filter(|sent| matches!(sent, Ok(Ok(()))))
            .count()
    }
}
