//! Tool-search gating (S4): a catalog tool cannot be called before the session has found it,
//! unless the policy allows direct calls. And per-principal visibility (C4): a tool, resource
//! or prompt the caller may not see cannot be called, read or got either.

use std::collections::HashMap;
use std::sync::Arc;

use crate::access::CallKind;
use crate::call::{CallResult, Invocation};
use crate::clients::ClientTable;
use crate::error::{CallError, DeniedBy};
use crate::guard::{Layer, Next};
use crate::session::Sessions;
use crate::tool::BoxFuture;

/// S4: refuses catalog tools the session has not found yet.
pub(crate) struct VisibilityLayer {
    /// Real name -> model-facing name of every catalog tool.
    pub(crate) catalog: HashMap<String, String>,
    /// Where each session keeps the tools it has found.
    pub(crate) sessions: Arc<Sessions>,
    /// What each principal may see (`clients:`), when the policy says.
    pub(crate) clients: Option<Arc<ClientTable>>,
}

impl Layer for VisibilityLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            if let Some(clients) = &self.clients
                && inv.is_known()
                && !inv.builtin
                && !clients.sees(&inv.caller, inv.kind, &inv.tool_name)
            {
                return Err(CallError::Denied {
                    reason: format!(
                        "{} is not available to {}: the policy's clients section does not list \
                         it for this principal or its groups",
                        inv.model_name,
                        inv.caller.name()
                    ),
                    by: DeniedBy::Client,
                });
            }
            let tool = inv.is_known() && inv.kind == CallKind::Tool;
            if let Some(model_name) = self.catalog.get(&inv.tool_name).filter(|_| tool) {
                let revealed = self
                    .sessions
                    .of(inv.session.as_ref())
                    .state()
                    .is_revealed(&inv.tool_name);
                if !revealed {
                    return Err(CallError::Denied {
                        reason: format!(
                            "{model_name} is not available yet: call tool_search first to find it (for example tool_search {{\"query\": \"select:{model_name}\"}})"
                        ),
                        by: DeniedBy::Search,
                    });
                }
            }
            next.run(inv).await
        })
    }
}
