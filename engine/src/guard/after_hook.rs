//! The after hook (G6, G7): the `after` script sees the final outcome; its failure is an
//! `error` event, never a change to the result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;

use crate::call::{CallResult, Invocation, error_text, panic_message};
use crate::error::CallError;
use crate::events::{Event, EventKind, Events};
use crate::guard::span::stage_span;
use crate::guard::{Layer, Next};
use crate::script::{CallView, OutcomeView, ScriptSet};
use crate::tool::BoxFuture;

/// Runs the `after` script on the final outcome (G6, G7). Panics from inside the chain are
/// turned into `tool_execution_panic` here, so the hook sees them too.
pub(crate) struct AfterHookLayer {
    pub(crate) scripts: Arc<ScriptSet>,
    pub(crate) events: Events,
}

impl Layer for AfterHookLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let result = match AssertUnwindSafe(next.run(inv)).catch_unwind().await {
                Ok(r) => r,
                Err(panic) => Err(CallError::ToolExecutionPanic {
                    tool: inv.tool_name.clone(),
                    message: panic_message(&*panic),
                }),
            };
            let (chars, truncated) = match &result {
                Ok(r) => (r.chars, r.truncated),
                Err(e) => (error_text(e).chars().count() as u64, false),
            };
            let err = result.as_ref().err();
            let outcome = OutcomeView {
                duration_ms: inv.run_time().as_secs_f64() * 1000.0,
                queued_ms: inv.queue_time().as_secs_f64() * 1000.0,
                is_error: err.is_some(),
                error_kind: err.map(CallError::kind),
                error: err.map(|e| e.to_string()),
                chars,
                truncated,
            };
            if let Err(e) = self
                .scripts
                .after(CallView::of(inv), &outcome)
                .instrument(stage_span("after"))
                .await
            {
                tracing::warn!("after hook failed: {e}");
                if self.events.active() {
                    let mut ev = Event::new(EventKind::Start, inv);
                    ev.kind = EventKind::Error {
                        message: e.to_string(),
                        kind: e.kind(),
                    };
                    self.events.emit(&ev);
                }
            }
            result
        })
    }
}
