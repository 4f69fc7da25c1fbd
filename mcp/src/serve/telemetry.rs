//! What `serve` adds to telemetry (issue 28): the server span of each request that runs a call
//! (O3), with the trace the client started; `/metrics` (O5).
//!
//! A request's trace context is its `_meta.traceparent` (and `tracestate`, SEP-414), else the
//! `traceparent` header of its HTTP request. The span is a `tracing` span of the target
//! `toolgate::serve`, named after the MCP semantic conventions (`tools/call <tool>`), the
//! parent of the engine's call span.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::service::{RequestContext, RoleServer};
use toolgate_telemetry::metrics::Metrics;
use toolgate_telemetry::propagation;
use tracing::Span;

use super::stateless::Principal;

/// The path metrics are read at, on the HTTP server and the admin address.
pub(crate) const METRICS_PATH: &str = "/metrics";

/// The server span of a request that runs a call: `method` (`tools/call`, `resources/read`,
/// `prompts/get`) on `target` (a tool, a URI, a prompt), continuing the client's trace.
pub(crate) fn request_span(
    method: &'static str,
    target: &str,
    context: &RequestContext<RoleServer>,
) -> Span {
    // Everything is known now and costs no allocation to find: the span gets it when it is
    // made (a `record` afterwards would look the span up once a field).
    let parts = context.extensions.get::<http::request::Parts>();
    let principal = parts
        .and_then(|parts| parts.extensions.get::<Principal>())
        .map_or("local", Principal::name);
    let session = parts
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok());
    let span = tracing::info_span!(
        target: "toolgate::serve",
        "mcp_request",
        otel.name = %format_args!("{method} {target}"),
        otel.kind = "server",
        mcp.method.name = method,
        mcp.session.id = session,
        jsonrpc.request.id = %context.id,
        toolgate.principal = principal,
        network.transport = if parts.is_some() { "tcp" } else { "pipe" },
    );
    if span.is_disabled() {
        return span;
    }
    let meta = &context.meta;
    let header = |name: &str| {
        parts
            .and_then(|p| p.headers.get(name))
            .and_then(|v| v.to_str().ok())
    };
    match meta.get_traceparent() {
        Some(parent) => propagation::continue_trace(&span, Some(parent), meta.get_tracestate()),
        None => propagation::continue_trace(&span, header("traceparent"), header("tracestate")),
    }
    span
}

/// The answer to `GET /metrics`: the metrics in the Prometheus text format.
pub(crate) fn metrics_response(
    metrics: &Arc<Metrics>,
) -> Response<BoxBody<Bytes, std::convert::Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(metrics.encode())).boxed());
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(toolgate_telemetry::metrics::CONTENT_TYPE),
    );
    response
}

/// Connections the admin address holds at once (Prometheus needs one).
const ADMIN_MAX_CONNECTIONS: usize = 16;
/// How long a client of the admin address has to send its request's headers.
const ADMIN_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `GET /metrics` on `addr` until `shutdown` fires (O5): how metrics are read while
/// `serve` speaks MCP over stdio. Anything but `/metrics` is 404. The bound address goes to
/// stderr as `toolgate serve: metrics on http://ADDR/metrics`.
pub(crate) async fn serve_admin(
    addr: std::net::SocketAddr,
    metrics: Arc<Metrics>,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), super::error::ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| super::error::ServeError::Bind { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("toolgate serve: metrics on http://{bound}{METRICS_PATH}");
    let limits = super::accept::Limits {
        max_connections: ADMIN_MAX_CONNECTIONS,
        read_timeout: Some(ADMIN_READ_TIMEOUT),
    };
    let handle = move |request: http::Request<hyper::body::Incoming>| {
        let metrics = Arc::clone(&metrics);
        async move {
            if request.uri().path() == METRICS_PATH {
                metrics_response(&metrics)
            } else {
                let mut response = Response::new(
                    Full::new(Bytes::from_static(b"Not Found: metrics are at /metrics")).boxed(),
                );
                *response.status_mut() = StatusCode::NOT_FOUND;
                response
            }
        }
    };
    tokio::spawn(super::accept::accept_loop(
        listener, limits, handle, shutdown,
    ));
    Ok(())
}
