//! The W3C trace context in and out (O3): read from a request's `traceparent` and `tracestate`
//! (an HTTP header, or the MCP request's `_meta`), and written into the requests toolgate sends
//! to upstream servers, so one trace runs from the agent through toolgate into the tools.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Whether spans are exported; set once by [`crate::install`].
static TRACES_ON: AtomicBool = AtomicBool::new(false);

pub(crate) fn set_traces_on(on: bool) {
    TRACES_ON.store(on, Ordering::Relaxed);
}

/// Whether spans are exported: when not, there is no context to read or write, and callers
/// skip the work.
pub fn traces_on() -> bool {
    TRACES_ON.load(Ordering::Relaxed)
}

/// The context a `traceparent` (and `tracestate`) names; `None` when there is none or it is
/// not a valid W3C trace context.
pub fn remote_context(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Context> {
    let traceparent = traceparent?;
    let mut carrier = HashMap::with_capacity(2);
    carrier.insert("traceparent".to_owned(), traceparent.to_owned());
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.to_owned());
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// Makes the remote context of `traceparent` the parent of `span`, when traces are on and it
/// is valid. Call it before the span is first entered.
pub fn continue_trace(span: &Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    if !traces_on() || span.is_disabled() {
        return;
    }
    if let Some(cx) = remote_context(traceparent, tracestate) {
        // Fails only when the span was entered already or has no OpenTelemetry data.
        if let Err(e) = span.set_parent(cx) {
            tracing::debug!("the trace context of the request was not used: {e}");
        }
    }
}

/// The `traceparent` and `tracestate` of the current span, to send with a request to an
/// upstream server; `None` when traces are off or no span is current.
pub fn current_trace_headers() -> Option<(String, Option<String>)> {
    if !traces_on() {
        return None;
    }
    let cx = Span::current().context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::with_capacity(2);
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    let parent = carrier.remove("traceparent")?;
    Some((
        parent,
        carrier.remove("tracestate").filter(|s| !s.is_empty()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_names_its_trace_and_parent() {
        let cx = remote_context(
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            Some("vendor=1"),
        )
        .expect("valid");
        let span = cx.span();
        let ids = span.span_context();
        assert_eq!(
            ids.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(ids.span_id().to_string(), "b7ad6b7169203331");
        assert!(ids.is_remote());
    }

    #[test]
    fn a_malformed_traceparent_is_no_context() {
        assert!(remote_context(Some("00-zz-yy-01"), None).is_none());
        assert!(remote_context(None, Some("vendor=1")).is_none());
        // All-zero trace ids are invalid by the W3C rules.
        let zeros = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
        assert!(remote_context(Some(zeros), None).is_none());
    }
}
