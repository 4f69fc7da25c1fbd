//! Circuit breakers, one per upstream MCP server and per plugin (`circuit_breaker:`, L6).
//!
//! A breaker counts its source's failures in a row (the policy's error kinds, and a call cut
//! at its timeout). At `failures` it opens: the source's calls are refused at once with
//! `circuit_open`, saying when to retry, rather than each waiting for a failure of its own.
//! After `cool_down` it half-opens: the next call goes through as a trial (the others are
//! still refused); its success closes the breaker, its failure opens it again for another
//! cool-down. Each change is a `breaker` event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use toolgate_policy::BreakerSettings;

use crate::call::{CallResult, Invocation};
use crate::error::CallError;
use crate::events::{Event, EventKind, Events};
use crate::guard::{Layer, Next};
use crate::tool::BoxFuture;

/// The breaker of one source.
pub(crate) struct Breaker {
    source: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Failures in a row.
    failures: u32,
    /// While open: when it half-opens.
    open_until: Option<Instant>,
    /// Half-open and its trial call is running.
    trial: bool,
}

impl Breaker {
    pub(crate) fn new(source: String) -> Self {
        Breaker {
            source,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A few plain fields: valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The breaker layer: each tool of a plugin or an upstream server has its source's breaker.
pub(crate) struct BreakerLayer {
    pub(crate) settings: BreakerSettings,
    /// Real tool name -> its source's breaker.
    pub(crate) breakers: HashMap<String, Arc<Breaker>>,
    pub(crate) events: Events,
}

/// Counts the call's end into its breaker, also when the call is dropped at its timeout.
struct Watch<'a> {
    layer: &'a BreakerLayer,
    breaker: &'a Breaker,
    /// Whether this call is the half-open trial.
    trial: bool,
    /// The call, for the events (built only when someone listens).
    base: Option<Event>,
    done: bool,
}

impl Watch<'_> {
    fn end(&mut self, failed: bool) {
        self.done = true;
        let s = &self.layer.settings;
        let change = {
            let mut st = self.breaker.state();
            if self.trial {
                st.trial = false;
            }
            if failed {
                st.failures = st.failures.saturating_add(1);
                let reopen = self.trial || (st.open_until.is_none() && st.failures >= s.failures);
                if reopen {
                    st.open_until = Some(Instant::now() + s.cool_down);
                    Some(("open", st.failures))
                } else {
                    None
                }
            } else {
                let was = (st.failures, st.open_until.is_some());
                st.failures = 0;
                st.open_until = None;
                (self.trial || was.1).then_some(("closed", was.0))
            }
        };
        if let Some((state, failures)) = change {
            tracing::warn!(source = %self.breaker.source, state, failures, "circuit breaker");
            self.emit(state, failures);
        }
    }

    fn emit(&self, state: &'static str, failures: u32) {
        if let Some(base) = &self.base {
            let mut e = base.clone();
            e.kind = EventKind::Breaker {
                source: self.breaker.source.clone(),
                state,
                failures,
            };
            self.layer.events.emit(&e);
        }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        // Dropped before it ended: the call's timeout cut it, a failure of the source.
        if !self.done {
            self.end(true);
        }
    }
}

impl BreakerLayer {
    /// Lets the call through (`Ok(trial)`) or refuses it while the breaker is open.
    fn admit(&self, breaker: &Breaker) -> Result<bool, CallError> {
        let mut st = breaker.state();
        let Some(until) = st.open_until else {
            return Ok(false);
        };
        let now = Instant::now();
        if now < until || st.trial {
            let retry_after = if now < until {
                until - now
            } else {
                // A trial runs: its answer comes within the call's timeout.
                Duration::from_secs(1)
            };
            return Err(CallError::CircuitOpen {
                source_name: breaker.source.clone(),
                failures: st.failures,
                retry_after,
            });
        }
        st.trial = true;
        Ok(true)
    }
}

impl Layer for BreakerLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let Some(breaker) = self.breakers.get(&inv.tool_name) else {
                return next.run(inv).await;
            };
            let trial = self.admit(breaker)?;
            let mut watch = Watch {
                layer: self,
                breaker,
                trial,
                base: self
                    .events
                    .active()
                    .then(|| Event::new(EventKind::Start, inv)),
                done: false,
            };
            if trial {
                let failures = breaker.state().failures;
                watch.emit("half_open", failures);
            }
            let result = next.run(inv).await;
            let failed = match &result {
                Err(e) => e.kind() == "timeout" || self.settings.on.iter().any(|k| k == e.kind()),
                Ok(_) => false,
            };
            watch.end(failed);
            result
        })
    }
}
