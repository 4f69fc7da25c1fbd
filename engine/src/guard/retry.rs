//! Retries of idempotent tools (`retries:`, L5): an attempt that fails with one of the
//! policy's error kinds is run again after an exponential backoff with jitter, as long as the
//! wait ends before the call's deadline. A tool is idempotent when `retries.idempotent` names
//! it, or when its `idempotentHint` annotation is true and `retries.not_idempotent` does not
//! name it; any other tool is run once, since running it twice may do its work twice.

use std::cell::Cell;
use std::time::Duration;

use toolgate_policy::RetrySettings;

use crate::call::{CallResult, Invocation};
use crate::error::CallError;
use crate::events::{Event, EventKind, Events};
use crate::guard::{Layer, Next};
use crate::tool::BoxFuture;

/// The retry layer.
pub(crate) struct RetryLayer {
    pub(crate) settings: RetrySettings,
    pub(crate) events: Events,
}

impl RetryLayer {
    /// Whether the call's tool may be run more than once.
    fn idempotent(&self, inv: &Invocation) -> bool {
        let name = inv.tool_name.as_str();
        if self
            .settings
            .not_idempotent
            .iter()
            .any(|g| g.is_match(name))
        {
            return false;
        }
        if self.settings.idempotent.iter().any(|g| g.is_match(name)) {
            return true;
        }
        inv.tool.as_ref().is_some_and(|tool| {
            tool.spec()
                .annotations
                .as_ref()
                .and_then(|a| a.get("idempotentHint"))
                .and_then(serde_json::Value::as_bool)
                == Some(true)
        })
    }

    /// The wait after the failed attempt `attempt` (1-based): `initial_backoff` doubled per
    /// attempt, capped at `max_backoff`, then drawn between half of it and all of it.
    fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .settings
            .initial_backoff
            .saturating_mul(1u32 << (attempt - 1).min(20));
        let cap = doubled.min(self.settings.max_backoff);
        cap / 2 + cap.mul_f64(jitter() / 2.0)
    }
}

thread_local! {
    static SEED: Cell<u64> = Cell::new({
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ (&t as *const u64 as u64) | 1
    });
}

/// A number in `[0, 1)` (xorshift: spreading retries needs no better randomness).
fn jitter() -> f64 {
    SEED.with(|seed| {
        let mut x = seed.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        seed.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

impl Layer for RetryLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            if self.settings.attempts <= 1 || !inv.is_known() || !self.idempotent(inv) {
                return next.run(inv).await;
            }
            let args = inv.args.clone();
            let mut attempt = 1;
            loop {
                let result = next.run(&mut *inv).await;
                let kind = match &result {
                    Err(e) if self.settings.on.iter().any(|k| k == e.kind()) => e.kind(),
                    _ => "",
                };
                if kind.is_empty() || attempt >= self.settings.attempts {
                    return result;
                }
                let backoff = self.backoff(attempt);
                // Bounded by the call's timeout: no attempt starts that could not end in time.
                // On tokio's clock, like the timeout layer (so paused time agrees).
                let now = tokio::time::Instant::now();
                if inv
                    .deadline
                    .is_some_and(|d| now + backoff >= tokio::time::Instant::from_std(d))
                {
                    return result;
                }
                tracing::info!(attempt, kind, ?backoff, "retrying an idempotent tool");
                if self.events.active() {
                    self.events.emit(&Event::new(
                        EventKind::Retry {
                            attempt,
                            error_kind: kind,
                            backoff_ms: backoff.as_secs_f64() * 1000.0,
                        },
                        inv,
                    ));
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = inv.cancel.cancelled() => return Err(CallError::Cancelled),
                }
                inv.args = args.clone();
                attempt += 1;
            }
        })
    }
}
