//! The call's timeout (G2).

use crate::call::{CallResult, Invocation};
use crate::error::CallError;
use crate::guard::{Layer, Next};
use crate::tool::BoxFuture;

/// The call's deadline (G2): it started with the guard and covers every layer inside. At the
/// deadline the call's cancellation token fires and the inner future is dropped, so a result
/// that arrives later is discarded.
pub(crate) struct TimeoutLayer;

impl Layer for TimeoutLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let (Some(deadline), Some(after)) = (inv.deadline, inv.settings.timeout) else {
                return next.run(inv).await;
            };
            let result = tokio::time::timeout_at(deadline.into(), next.run(&mut *inv)).await;
            match result {
                Ok(r) => r,
                Err(_) => {
                    inv.cancel.cancel();
                    Err(CallError::Timeout { after })
                }
            }
        })
    }
}
