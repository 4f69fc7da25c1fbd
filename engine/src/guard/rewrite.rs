//! The rewrite script (D2, D3).

use std::sync::Arc;

use tracing::Instrument;

use crate::access::CallKind;
use crate::call::{CallResult, Invocation};
use crate::guard::span::stage_span;
use crate::guard::{Layer, Next};
use crate::script::{CallView, ScriptSet};
use crate::tool::BoxFuture;

/// The argument rewrite script (D2, D3). It sees the real tool name and the renamed arguments;
/// its output replaces the arguments. A failure fails this call only.
pub(crate) struct RewriteLayer {
    pub(crate) scripts: Arc<ScriptSet>,
}

impl Layer for RewriteLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            // A1: the rewrite script rewrites tool calls only.
            if inv.is_known()
                && inv.kind == CallKind::Tool
                && let Some(args) = self
                    .scripts
                    .rewrite(CallView::of(inv), inv.deadline, &inv.cancel)
                    .instrument(stage_span("rewrite"))
                    .await
                    .map_err(|e| inv.past_deadline(e))?
            {
                inv.args = args;
            }
            next.run(inv).await
        })
    }
}
