//! `resources/subscribe` per client connection, and `notifications/resources/updated` from the
//! upstream servers to the clients that subscribed (A4).
//!
//! A client's subscription is kept with its connection and ends with it: an unsubscribe, or the
//! connection closing, gives it back, and toolgate unsubscribes upstream once no client holds
//! the URI ([`Upstreams::unsubscribe`]). An update from a server goes to every client that
//! subscribed to that URI on that server, and only to them.
//!
//! Bounded: a client holds at most [`MAX_PER_CLIENT`] subscriptions; updates wait in one queue
//! of at most [`MAX_PENDING`] distinct URIs, where an update for a URI already waiting is folded
//! into it (an update says only "read it again"); a client gets each update within
//! [`SEND_WAIT`] or misses it, so a client that reads nothing holds up no other.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer};
use tokio::sync::Notify;

use crate::upstream::Upstreams;

/// The most subscriptions one client connection holds.
pub(crate) const MAX_PER_CLIENT: usize = 256;
/// The most distinct URIs whose update waits to be sent.
pub(crate) const MAX_PENDING: usize = 1024;
/// How long sending one update to one client may take.
pub(crate) const SEND_WAIT: Duration = Duration::from_secs(1);

/// One subscribed resource: the upstream set it was made on (its id), the server's index in
/// it, and the URI as the client sent it.
type Key = (u64, usize, String);

/// Every client's subscriptions.
#[derive(Default)]
pub(crate) struct Subscriptions {
    state: Mutex<State>,
    /// Updates waiting to be sent, each URI once.
    pending: Mutex<VecDeque<Key>>,
    wake: Arc<Notify>,
}

#[derive(Default)]
struct State {
    /// Client connection -> what it subscribed to.
    by_client: HashMap<u64, HashSet<Key>>,
    /// Subscribed resource -> the clients that hold it.
    by_key: HashMap<Key, HashSet<u64>>,
    /// Client connection -> where to send its updates.
    peers: HashMap<u64, Peer<RoleServer>>,
    /// Each upstream set whose updates come here, by id: to unsubscribe on it later.
    sets: HashMap<u64, Upstreams>,
}

/// Why a subscription was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The client holds [`MAX_PER_CLIENT`] already.
    TooMany,
}

impl Subscriptions {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `client` (reached by `peer`) subscribed to `uri` on the server `server` of
    /// `upstreams`. Answers whether it is new for this client; the caller subscribes upstream
    /// only then.
    pub(crate) fn add(
        self: &Arc<Self>,
        client: u64,
        peer: &Peer<RoleServer>,
        upstreams: &Upstreams,
        server: usize,
        uri: &str,
    ) -> Result<bool, Refused> {
        let key = (upstreams.id(), server, uri.to_owned());
        let hook = {
            let mut state = self.state();
            let held = state.by_client.entry(client).or_default();
            if held.contains(&key) {
                return Ok(false);
            }
            if held.len() >= MAX_PER_CLIENT {
                return Err(Refused::TooMany);
            }
            held.insert(key.clone());
            state.by_key.entry(key).or_default().insert(client);
            state.peers.insert(client, peer.clone());
            let new_set = !state.sets.contains_key(&upstreams.id());
            if new_set {
                state.sets.insert(upstreams.id(), upstreams.clone());
            }
            new_set
        };
        if hook {
            self.hook(upstreams);
        }
        Ok(true)
    }

    /// Records that `client` unsubscribed from `uri` on `upstreams`; answers the server it
    /// held it on, if it did.
    pub(crate) fn remove(&self, client: u64, upstreams: &Upstreams, uri: &str) -> Option<usize> {
        let mut state = self.state();
        let held = state.by_client.get_mut(&client)?;
        let key = held
            .iter()
            .find(|(set, _, held_uri)| *set == upstreams.id() && held_uri == uri)?
            .clone();
        held.remove(&key);
        if let Some(clients) = state.by_key.get_mut(&key) {
            clients.remove(&client);
            if clients.is_empty() {
                state.by_key.remove(&key);
            }
        }
        Some(key.1)
    }

    /// The client connection is gone: gives back every subscription it held (toolgate
    /// unsubscribes upstream where it was the last).
    pub(crate) fn drop_client(&self, client: u64) {
        let (held, sets) = {
            let mut state = self.state();
            state.peers.remove(&client);
            let held = state.by_client.remove(&client).unwrap_or_default();
            for key in &held {
                if let Some(clients) = state.by_key.get_mut(key) {
                    clients.remove(&client);
                    if clients.is_empty() {
                        state.by_key.remove(key);
                    }
                }
            }
            (held, state.sets.clone())
        };
        if held.is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        tokio::spawn(async move {
            for (set, server, uri) in held {
                if let Some(upstreams) = sets.get(&set) {
                    upstreams.unsubscribe(server, &uri).await;
                }
            }
        });
    }

    /// Sends the updates of `upstreams`' servers here, and starts the sender the first time.
    fn hook(self: &Arc<Self>, upstreams: &Upstreams) {
        let id = upstreams.id();
        let queue: Weak<Self> = Arc::downgrade(self);
        upstreams.on_resource_updated(move |server, uri| {
            if let Some(queue) = queue.upgrade() {
                queue.push((id, server, uri.to_owned()));
            }
        });
        let first = self.state().sets.len() == 1;
        if first {
            tokio::spawn(send_updates(Arc::downgrade(self), self.wake.clone()));
        }
    }

    /// Queues an update, folded into one for the same URI already waiting; past
    /// [`MAX_PENDING`] it is dropped.
    fn push(&self, key: Key) {
        let subscribed = self.state().by_key.contains_key(&key);
        if !subscribed {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.contains(&key) {
            return;
        }
        if pending.len() >= MAX_PENDING {
            tracing::debug!(
                uri = key.2,
                "a resource update was dropped: {MAX_PENDING} wait already"
            );
            return;
        }
        pending.push_back(key);
        drop(pending);
        self.wake.notify_one();
    }

    /// The next waiting update and the clients to send it to.
    fn next(&self) -> Option<(String, Vec<Peer<RoleServer>>)> {
        loop {
            let key = self
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()?;
            let state = self.state();
            let peers: Vec<Peer<RoleServer>> = state
                .by_key
                .get(&key)
                .into_iter()
                .flatten()
                .filter_map(|client| state.peers.get(client).cloned())
                .filter(|peer| !peer.is_transport_closed())
                .collect();
            if !peers.is_empty() {
                return Some((key.2, peers));
            }
        }
    }
}

/// Sends waiting updates until the subscriptions are gone.
async fn send_updates(subscriptions: Weak<Subscriptions>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        let Some(subscriptions) = subscriptions.upgrade() else {
            return;
        };
        while let Some((uri, peers)) = subscriptions.next() {
            let sends = peers.iter().map(|peer| {
                tokio::time::timeout(
                    SEND_WAIT,
                    peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(
                        uri.clone(),
                    )),
                )
            });
            for sent in futures::future::join_all(sends).await {
                if !matches!(sent, Ok(Ok(()))) {
                    tracing::debug!(uri, "a client did not take a resource update");
                }
            }
        }
    }
}
