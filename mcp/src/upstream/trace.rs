//! The trace of a call, carried on into the upstream server (O3): a client span for each
//! request toolgate sends (`tools/call <tool>`, target `toolgate::upstream`), and its W3C
//! `traceparent` and `tracestate` in the request's `_meta` (SEP-414), so the server's own
//! spans join the trace the agent started.

use rmcp::model::RequestMetaObject;
use rmcp::service::PeerRequestOptions;
use tracing::Span;

/// The client span of a request `method` for `target` (a tool, a URI, a prompt) on `server`.
pub(crate) fn client_span(method: &'static str, server: &str, target: &str) -> Span {
    tracing::info_span!(
        target: "toolgate::upstream",
        "mcp_upstream",
        otel.name = %format_args!("{method} {target}"),
        otel.kind = "client",
        mcp.method.name = method,
        server.address = server,
        gen_ai.tool.name = target,
    )
}

/// The options of a request sent now: the current span's trace context in `_meta`, when
/// traces are on.
pub(crate) fn request_options() -> PeerRequestOptions {
    let mut options = PeerRequestOptions::no_options();
    if let Some((parent, state)) = toolgate_telemetry::propagation::current_trace_headers() {
        let mut meta = RequestMetaObject::default();
        meta.set_traceparent(parent);
        if let Some(state) = state {
            meta.set_tracestate(state);
        }
        options.meta = Some(meta);
    }
    options
}
