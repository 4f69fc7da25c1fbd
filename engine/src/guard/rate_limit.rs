//! The rate limits and quotas of `limits.rates` (L1, L2, L4): a call that an entry refuses is
//! answered `rate_limited` with when it would pass.
//!
//! The layer sits after the rules and the before hook: a call they deny never reaches it, so
//! it uses up no quota (a model that keeps trying a denied call cannot starve its own allowed
//! ones). Retries run inside it: one call of the model is one call against the limits, however
//! many attempts it takes.

use crate::access::CallKind;
use crate::call::{CallResult, Invocation};
use crate::error::CallError;
use crate::events::{Event, EventKind, Events};
use crate::guard::{Layer, Next};
use crate::limits::{Check, RateLimits};
use crate::tool::BoxFuture;
use toolgate_policy::OnStoreError;

/// The principal a call is counted for: its caller's name (`local` for a caller no credential
/// proved: the CLI, stdio, HTTP without authentication).
pub(crate) fn principal(inv: &Invocation) -> &str {
    inv.caller.name()
}

/// The rate-limit layer.
pub(crate) struct RateLimitLayer {
    pub(crate) limits: RateLimits,
    pub(crate) events: Events,
}

impl Layer for RateLimitLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            // Only tools are limited; an unknown name is answered by the unknown-tool path.
            if inv.kind != CallKind::Tool || !inv.is_known() {
                return next.run(inv).await;
            }
            match self.limits.check(&inv.caller, &inv.tool_name).await {
                Check::Pass => {}
                Check::Limited { message, wait } => {
                    return Err(CallError::RateLimited {
                        message,
                        retry_after: wait,
                    });
                }
                Check::StoreFailed(failure) => {
                    let open = self.limits.on_store_error == OnStoreError::Open;
                    tracing::warn!(open, "limits store: {failure}");
                    if self.events.active() {
                        let message = format!(
                            "{failure}; the call {} (limits.redis.on_store_error: {})",
                            if open {
                                "goes on unlimited"
                            } else {
                                "is refused"
                            },
                            if open { "open" } else { "closed" }
                        );
                        self.events.emit(&Event::new(
                            EventKind::Error {
                                message,
                                kind: "limits_store_error",
                            },
                            inv,
                        ));
                    }
                    if !open {
                        return Err(CallError::LimitsUnavailable {
                            message: failure.0,
                            retry_after: self
                                .limits
                                .store_timeout
                                .max(std::time::Duration::from_secs(1)),
                        });
                    }
                }
            }
            next.run(inv).await
        })
    }
}
