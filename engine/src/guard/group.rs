//! Sequential groups: calls that share a `sequential_group` never run at the same time.

use std::collections::HashMap;
use std::sync::Arc;

use crate::call::{CallResult, Invocation};
use crate::error::CallError;
use crate::guard::{Layer, Next};
use crate::tool::{BoxFuture, Hold};

/// The lock of one `sequential_group`.
///
/// A member holds the lock until it really returns: a plugin call that ignores its cancellation
/// keeps the lock on its own thread after its timeout. While such an abandoned member still
/// runs, the other members fail at once with `overloaded` instead of queueing behind it.
#[derive(Default)]
struct GroupLock {
    lock: Arc<tokio::sync::Mutex<()>>,
    state: std::sync::Mutex<GroupState>,
    /// Wakes the waiters when the holder is abandoned.
    abandoned: tokio::sync::Notify,
}

impl std::fmt::Debug for GroupLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupLock")
            .field("abandoned", &self.is_abandoned())
            .finish()
    }
}

#[derive(Default)]
struct GroupState {
    /// Which hold has the lock (each hold gets a fresh number).
    held_by: Option<u64>,
    next: u64,
    /// The holder's call ended (timeout, cancellation) while it still runs.
    abandoned: bool,
}

impl GroupLock {
    fn state(&self) -> std::sync::MutexGuard<'_, GroupState> {
        // The state is a few plain fields, valid after any panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_abandoned(&self) -> bool {
        self.state().abandoned
    }

    /// Marks the hold `id` abandoned if it still has the lock.
    fn abandon(&self, id: u64) {
        let mut st = self.state();
        if st.held_by == Some(id) {
            st.abandoned = true;
            drop(st);
            self.abandoned.notify_waiters();
        }
    }
}

/// The lock of a group, held by one call. Dropping it releases the lock.
struct GroupHold {
    group: Arc<GroupLock>,
    id: u64,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl GroupHold {
    fn new(group: Arc<GroupLock>, guard: tokio::sync::OwnedMutexGuard<()>) -> Self {
        let id = {
            let mut st = group.state();
            st.next += 1;
            st.held_by = Some(st.next);
            st.abandoned = false;
            st.next
        };
        GroupHold {
            group,
            id,
            _guard: guard,
        }
    }
}

impl Drop for GroupHold {
    fn drop(&mut self) {
        // Cleared before the guard field releases the lock.
        let mut st = self.group.state();
        if st.held_by == Some(self.id) {
            st.held_by = None;
            st.abandoned = false;
        }
    }
}

/// Calls of the same `sequential_group` never run at the same time, not even a call that
/// ignored its timeout and still runs. The wait for the lock is queue time: the call's timeout
/// starts once it has the lock (G2), so this layer sits outside the timeout layer.
pub(crate) struct GroupLayer {
    /// The lock of each group, by name.
    groups: HashMap<String, Arc<GroupLock>>,
}

impl GroupLayer {
    /// The layer for the groups `names` (every `sequential_group` of the policy).
    pub(crate) fn new<'n>(names: impl IntoIterator<Item = &'n str>) -> Self {
        GroupLayer {
            groups: names
                .into_iter()
                .map(|n| (n.to_string(), Arc::default()))
                .collect(),
        }
    }

    async fn acquire(
        group: &Arc<GroupLock>,
        name: &str,
        inv: &Invocation,
    ) -> Result<GroupHold, CallError> {
        let overloaded = || CallError::Overloaded {
            tool: inv.tool_name.clone(),
            message: format!(
                "its sequential group {name:?} is still held by a call that passed its timeout \
                 and ignores cancellation; try again later"
            ),
        };
        loop {
            let notified = group.abandoned.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Ok(guard) = group.lock.clone().try_lock_owned() {
                return Ok(GroupHold::new(group.clone(), guard));
            }
            if group.is_abandoned() {
                return Err(overloaded());
            }
            tokio::select! {
                guard = group.lock.clone().lock_owned() => {
                    return Ok(GroupHold::new(group.clone(), guard));
                }
                () = &mut notified => continue,
                () = inv.cancel.cancelled() => return Err(CallError::Cancelled),
            }
        }
    }
}

impl Layer for GroupLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let Some((name, group)) = inv
                .settings
                .sequential_group
                .as_ref()
                .and_then(|name| self.groups.get_key_value(name))
            else {
                return next.run(inv).await;
            };
            let group = group.clone();
            let asked = std::time::Instant::now();
            let hold = GroupLayer::acquire(&group, name, inv).await?;
            let id = hold.id;
            inv.start_after_wait(asked.elapsed());
            let hold: Hold = Arc::new(hold);
            let alive = Arc::downgrade(&hold);
            inv.hold = Some(hold);
            let result = next.run(inv).await;
            // Released here unless the tool still holds it on its own thread.
            inv.hold = None;
            if alive.strong_count() > 0 {
                group.abandon(id);
            }
            result
        })
    }
}
