//! The before script (G1): the last check before the tool, on the final arguments.

use std::sync::Arc;

use tracing::Instrument;

use crate::call::{CallResult, Invocation};
use crate::error::{CallError, DeniedBy};
use crate::guard::span::stage_span;
use crate::guard::{Layer, Next};
use crate::script::{CallView, ScriptSet, Verdict};
use crate::tool::BoxFuture;

/// The before script (G1): may deny the call with a reason.
pub(crate) struct BeforeLayer {
    pub(crate) scripts: Arc<ScriptSet>,
}

impl Layer for BeforeLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let verdict = self
                .scripts
                .before(CallView::of(inv), inv.deadline, &inv.cancel)
                .instrument(stage_span("before"))
                .await
                .map_err(|e| inv.past_deadline(e))?;
            match verdict {
                Verdict::Allow => {
                    inv.decision.before_hook = Some("allow");
                    next.run(inv).await
                }
                Verdict::Deny(reason) => {
                    inv.decision.before_hook = Some("deny");
                    Err(CallError::Denied {
                        reason,
                        by: DeniedBy::Script,
                    })
                }
            }
        })
    }
}
