//! The assembled pipeline: runs a call through the chain inside its `tracing` span, with the
//! start and end events (E1), the duration and the panic capture (G6).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures::FutureExt;
use tracing::Instrument;

use super::endpoint::Endpoint;
use super::layer::{Layer, Next};
use crate::call::{Invocation, Outcome, panic_message};
use crate::error::CallError;
use crate::events::{Event, EventKind, Events, OutcomeSummary};

/// Emits the `end` event of a call whose future is dropped before it ends (its client
/// cancelled, its connection closed, a `select!` took another branch), as `cancelled`: every
/// `start` has its `end`, so a listener that counts calls in flight (the metrics) or writes
/// one line a call (the audit log) loses none.
struct EndIfDropped<'a> {
    events: &'a Events,
    /// The call's `start` event, which becomes its `end` (one copy of the call's strings a
    /// call, not one an event); `None` once the `end` was emitted the usual way.
    start: Option<Arc<Event>>,
    started: Instant,
}

impl Drop for EndIfDropped<'_> {
    fn drop(&mut self) {
        if let Some(start) = self.start.take() {
            let mut event = Arc::unwrap_or_clone(start);
            event.kind = EventKind::End {
                outcome: Arc::new(OutcomeSummary::abandoned(self.started.elapsed())),
            };
            self.events.emit(&event);
        }
    }
}

/// The assembled pipeline; built by [`super::builder::GuardParts::build`], which owns the
/// order of the layers.
pub(crate) struct Guard {
    layers: Vec<Arc<dyn Layer>>,
    endpoint: Endpoint,
    events: Events,
}

impl Guard {
    /// The chain `layers` (outermost first), then `endpoint`.
    pub(super) fn new(layers: Vec<Arc<dyn Layer>>, endpoint: Endpoint, events: Events) -> Self {
        Guard {
            layers,
            endpoint,
            events,
        }
    }

    /// Runs one call through the whole chain. Never panics: a panic anywhere inside becomes a
    /// `tool_execution_panic` outcome (policy scripts report `tool_policy_panic` themselves).
    pub(crate) async fn run(&self, mut inv: Invocation) -> Outcome {
        let span = super::span::call_span(&inv);
        let recorded = span.clone();
        async move {
            let mut unended = None;
            if self.events.active() {
                let start = Arc::new(Event::new(EventKind::Start, &inv));
                self.events.emit(&start);
                let events = self.events.clone();
                let base = Arc::clone(&start);
                unended = Some(EndIfDropped {
                    events: &self.events,
                    start: Some(start),
                    started: Instant::now(),
                });
                let inner = inv.progress.take();
                inv.progress = Some(Arc::new(move |msg: &str| {
                    let mut e = (*base).clone();
                    e.kind = EventKind::Update {
                        message: msg.to_string(),
                    };
                    events.emit(&e);
                    if let Some(p) = &inner {
                        p(msg);
                    }
                }));
            }
            let next = Next::new(&self.layers, &self.endpoint);
            let result = AssertUnwindSafe(next.run(&mut inv)).catch_unwind().await;
            let result = match result {
                Ok(r) => r,
                Err(panic) => Err(CallError::ToolExecutionPanic {
                    tool: inv.tool_name.clone(),
                    message: panic_message(&*panic),
                }),
            };
            let outcome = inv.outcome(result);
            super::span::record_outcome(&recorded, &outcome);
            if let Some(err) = &outcome.error {
                tracing::debug!(kind = err.kind(), "tool call failed: {err}");
            }
            if let Some(start) = unended.and_then(|mut unended| unended.start.take()) {
                // The progress reporter shares the start event: dropped first, the event is
                // reused as the end without a copy.
                drop(inv.progress.take());
                let mut end = Arc::unwrap_or_clone(start);
                end.kind = EventKind::End {
                    outcome: Arc::new(OutcomeSummary::from(&outcome)),
                };
                self.events.emit(&end);
            }
            outcome
        }
        .instrument(span)
        .await
    }

    /// Records a call that does not run (D7): its outcome carries `err` and an `end` event is
    /// emitted like for any other call.
    pub(crate) fn skip(&self, inv: Invocation, err: CallError) -> Outcome {
        let outcome = inv.outcome(Err(err));
        if self.events.active() {
            self.events.emit(&Event::end(&inv, &outcome));
        }
        outcome
    }
}
