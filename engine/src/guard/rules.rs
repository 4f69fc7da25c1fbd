//! The declarative allow/deny rules (G1), judged on the arguments the tool will receive. The
//! rules themselves, compiled from the policy, are in [`crate::rules`].

use toolgate_store::SessionId;

use crate::call::{CallResult, Invocation};
use crate::error::{CallError, DeniedBy};
use crate::guard::{Layer, Next};
use crate::rules::Refusal;
use crate::tool::BoxFuture;

/// The rules layer. It runs after the rewrite script, on the arguments the tool will receive.
pub(crate) struct RulesLayer;

impl Layer for RulesLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            // D4: an unknown name is answered by the unknown-tool path, never "denied".
            if inv.is_known() {
                inv.decision.rules = Some("allow");
                for group in inv.settings.rules.iter() {
                    let judged = group.decide(
                        &inv.tool_name,
                        &inv.args,
                        inv.session.as_ref().map(SessionId::as_str),
                        &inv.caller,
                        inv.deadline,
                    );
                    match judged {
                        Ok(allowed_by) => {
                            if allowed_by.is_some() {
                                inv.decision.rule = allowed_by;
                            }
                        }
                        Err((refusal, rule)) => {
                            inv.decision.rules = Some("deny");
                            inv.decision.rule = rule;
                            return Err(refused(inv, refusal));
                        }
                    }
                }
            }
            next.run(inv).await
        })
    }
}

/// The error for a refusal of the rules.
fn refused(inv: &Invocation, refusal: Refusal) -> CallError {
    match refusal {
        Refusal::Denied(reason) => CallError::Denied {
            reason,
            by: DeniedBy::Rule,
        },
        // The deadline passed: a timeout, like any other stage past it.
        Refusal::PastDeadline => inv.past_deadline(CallError::Denied {
            reason: "the call's deadline passed before its rules were judged".to_owned(),
            by: DeniedBy::Rule,
        }),
    }
}
