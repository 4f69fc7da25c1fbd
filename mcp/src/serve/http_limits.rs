//! `limits.requests` at the HTTP front (L8): a POST to the MCP endpoint from a principal over
//! its request limit is answered here, before any MCP message is read, with
//!
//! - `429 Too Many Requests` (or `503 Service Unavailable` when the limits' store failed and
//!   the policy says `on_store_error: closed`),
//! - `Retry-After`: the whole seconds after which the request would pass (at least 1),
//! - a JSON-RPC error as the body (`id` null: the request was not read), code
//!   [`RATE_LIMITED`], whose message is the reason and whose `data` says who was limited, by
//!   which limit, and where it is in the policy. MCP clients surface a JSON-RPC error body of
//!   a non-2xx answer as the error of the request they sent (the official SDKs do), so the
//!   caller reads the reason, not a bare status.
//!
//! Only POSTs count: each carries one JSON-RPC message (a call, a list, a notification). The
//! GET that opens a session's notification stream and the DELETE that closes a session do not.
//! A refused request's body is never read, so its answer says `Connection: close`: the client
//! opens a new connection for its next request (an abusive one pays that too).

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use toolgate::RequestRefused;
use toolgate_telemetry::metrics::Metrics;

use super::http_auth::Body;

/// The JSON-RPC error code of a request refused by `limits.requests` (in the range JSON-RPC
/// leaves to servers; 29 for HTTP's 429).
pub(crate) const RATE_LIMITED: i64 = -32029;

/// The answer to a request `limits.requests` refused; counted in
/// `toolgate_rate_limit_rejections_total{kind="http_request"}` when metrics are on.
pub(crate) fn refused(refusal: &RequestRefused, metrics: Option<&Metrics>) -> Response<Body> {
    let retry_after = refusal.retry_after();
    let retry_after_ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
    let (status, data) = match refusal {
        RequestRefused::Limited {
            principal,
            count,
            period,
            burst,
            entry,
            at,
            ..
        } => {
            tracing::info!(principal = %principal, "an HTTP request was refused: {refusal}");
            if let Some(metrics) = metrics {
                metrics.rate_limited("http_request", "");
            }
            (
                StatusCode::TOO_MANY_REQUESTS,
                json!({
                    "error": "rate_limited",
                    "principal": principal,
                    "limit": format!("{count}/{period}"),
                    "burst": burst,
                    "policy": entry,
                    "at": at,
                    "retry_after_ms": retry_after_ms,
                }),
            )
        }
        RequestRefused::Unavailable { .. } => {
            tracing::warn!("an HTTP request was refused: {refusal}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({
                    "error": "limits_unavailable",
                    "retry_after_ms": retry_after_ms,
                }),
            )
        }
    };
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": RATE_LIMITED, "message": refusal.to_string(), "data": data},
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    // Whole seconds, rounded up: a client that waits that long is let through.
    let seconds = retry_after
        .as_secs()
        .saturating_add(u64::from(retry_after.subsec_nanos() > 0))
        .max(1);
    headers.insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    // The request's body was not read, so the connection cannot carry another request: say
    // so, or a client that keeps connections alive would send its next request into a
    // connection the server closes.
    headers.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn l8_a_refused_request_gets_429_retry_after_rounded_up_and_the_reason() {
        let refusal = RequestRefused::Limited {
            principal: "alice".into(),
            count: 5,
            period: "1m".into(),
            burst: 5,
            entry: "limits.requests[0]".into(),
            at: Some("team.yaml:9:7".into()),
            retry_after: Duration::from_millis(11_200),
        };
        let response = refused(&refusal, None);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "12");
        assert_eq!(response.headers()[header::CONNECTION], "close");
        let unavailable = RequestRefused::Unavailable {
            message: "Redis failed".into(),
            retry_after: Duration::from_secs(1),
        };
        let response = refused(&unavailable, None);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
