//! The core of the guard: a [`Layer`] does its part of a call and hands the rest to [`Next`].

use std::sync::Arc;

use super::endpoint::Endpoint;
use crate::call::{CallResult, Invocation};
use crate::tool::BoxFuture;

/// One stage of the pipeline. A layer does its work and calls `next.run(inv)` (or does not, to
/// short-circuit with a reply or an error of its own).
///
/// ```
/// use toolgate::guard::{CallResult, Invocation, Layer, Next};
/// use toolgate::tool::BoxFuture;
///
/// /// Logs every call that reaches the tool.
/// struct Log;
///
/// impl Layer for Log {
///     fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
///         Box::pin(async move {
///             eprintln!("calling {} with {}", inv.tool_name(), inv.args());
///             next.run(inv).await
///         })
///     }
/// }
/// ```
pub trait Layer: Send + Sync + 'static {
    /// Runs this layer's part of the call; `next` is the rest of the chain.
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult>;
}

/// The rest of the chain after a layer.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    rest: &'a [Arc<dyn Layer>],
    endpoint: &'a Endpoint,
}

impl<'a> Next<'a> {
    /// The whole chain: `layers`, outermost first, then the endpoint.
    pub(crate) fn new(layers: &'a [Arc<dyn Layer>], endpoint: &'a Endpoint) -> Self {
        Next {
            rest: layers,
            endpoint,
        }
    }

    /// Runs the rest of the chain on `inv`.
    pub fn run<'b>(self, inv: &'b mut Invocation) -> BoxFuture<'b, CallResult>
    where
        'a: 'b,
    {
        match self.rest.split_first() {
            Some((layer, rest)) => layer.call(
                inv,
                Next {
                    rest,
                    endpoint: self.endpoint,
                },
            ),
            None => self.endpoint.call(inv),
        }
    }
}
