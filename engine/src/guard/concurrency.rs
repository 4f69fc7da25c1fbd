//! Concurrency per principal and for the whole gateway, with fair queuing (`limits.concurrency`,
//! L3). The wait for a place is queue time: the call's timeout starts once it runs (G2).

use std::time::{Duration, Instant};

use crate::call::{CallResult, Invocation};
use crate::error::CallError;
use crate::guard::{Layer, Next};
use crate::limits::fair::{FairGate, Ticket};
use crate::tool::BoxFuture;

use super::rate_limit::principal;

/// The concurrency layer.
pub(crate) struct ConcurrencyLayer {
    pub(crate) gate: FairGate,
    pub(crate) max_wait: Duration,
}

/// What the model is told to wait when the queue is full or its wait ran out: the time a
/// place takes to come free is unknown, so a short, fixed hint.
const RETRY_HINT: Duration = Duration::from_secs(1);

impl Layer for ConcurrencyLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let asked = Instant::now();
            let ticket = self
                .gate
                .admit(principal(inv), inv.session.as_ref())
                .map_err(|full| CallError::RateLimited {
                    message: full.message,
                    retry_after: RETRY_HINT,
                })?;
            let permit = match ticket {
                Ticket::Now(permit) => permit,
                Ticket::Queued(queued) => {
                    let waited = tokio::select! {
                        turn = tokio::time::timeout(self.max_wait, queued.turn()) => turn,
                        () = inv.cancel.cancelled() => return Err(CallError::Cancelled),
                    };
                    match waited {
                        Ok(Some(permit)) => permit,
                        _ => {
                            let (per_principal, total) = self.gate.caps();
                            let caps = match (per_principal, total) {
                                (usize::MAX, t) => format!("{t} calls in all"),
                                (p, usize::MAX) => format!("{p} calls per principal"),
                                (p, t) => format!("{p} calls per principal and {t} in all"),
                            };
                            return Err(CallError::RateLimited {
                                message: format!(
                                    "no place to run within {} (limits.concurrency: {caps})",
                                    toolgate_policy::format_duration(Some(self.max_wait))
                                ),
                                retry_after: RETRY_HINT,
                            });
                        }
                    }
                }
            };
            inv.start_after_wait(asked.elapsed());
            let result = next.run(inv).await;
            drop(permit);
            result
        })
    }
}
