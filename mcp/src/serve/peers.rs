//! The connected clients, to tell each of them when the tool list changed for everyone (a
//! policy reload).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::service::{Peer, RoleServer};

/// Every client connection that finished its handshake and has not gone away.
#[derive(Debug, Default)]
pub(crate) struct Peers {
    next: AtomicU64,
    peers: Mutex<HashMap<u64, Peer<RoleServer>>>,
}

impl Peers {
    /// Remembers `peer`; the number is for [`remove`](Self::remove).
    pub(crate) fn add(&self, peer: Peer<RoleServer>) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut peers) = self.peers.lock() {
            peers.insert(key, peer);
        }
        key
    }

    pub(crate) fn remove(&self, key: u64) {
        if let Ok(mut peers) = self.peers.lock() {
            peers.remove(&key);
        }
    }

    /// Sends `notifications/tools/list_changed` to every open connection; answers how many.
    pub(crate) async fn tool_list_changed(&self) -> usize {
        let peers: Vec<Peer<RoleServer>> = match self.peers.lock() {
            Ok(mut peers) => {
                peers.retain(|_, p| !p.is_transport_closed());
                peers.values().cloned().collect()
            }
            Err(_) => return 0,
        };
        // A client that reads nothing must not hold up the reload: each send gets a second.
        let sends = peers.iter().map(|p| {
            tokio::time::timeout(
                std::time::Duration::from_secs(1),
                p.notify_tool_list_changed(),
            )
        });
        futures::future::join_all(sends)
            .await
            .into_iter()
            .filter(|sent| matches!(sent, Ok(Ok(()))))
            .count()
    }
}
