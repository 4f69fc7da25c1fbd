//! `serve` over Streamable HTTP, safe by default.
//!
//! In front of `rmcp`'s Streamable HTTP service sits a small gate that answers before any MCP
//! message is read:
//! - only the MCP path is served (404 elsewhere), RFC 9728's metadata
//!   (`/.well-known/oauth-protected-resource`) when the policy has `auth:`, `/metrics` when the
//!   policy turns metrics on (behind the same credentials as MCP), and the console under `/ui`
//!   when the policy turns it on (`console`; it asks for the shared token, and is refused when
//!   the policy's `auth:` is on without one: it shows every principal's calls);
//! - off loopback, every request must carry `Authorization: Bearer <token>` (401 otherwise;
//!   the comparison takes the same time wherever the first difference is): the shared token,
//!   or an API key or JWT the policy's `auth:` accepts (`http_auth`); an MCP session is used
//!   by the principal that opened it only (403 otherwise);
//! - a new session beyond `max_sessions` gets 503 with a JSON-RPC error;
//! - a POST of a principal over the policy's `limits.requests` gets 429 with `Retry-After`
//!   (`http_limits`).
//!
//! - a POST body larger than `max_request_bytes` gets 413, a body that is not JSON a JSON-RPC
//!   parse error (-32700), and JSON that is not one JSON-RPC message an invalid-request error
//!   (-32600), all with HTTP 400 or 413 and a JSON-RPC error object.
//!
//! `rmcp` then checks `Host` (DNS rebinding: only the loopback names and the configured hosts)
//! and `Origin` (a browser page of any origin not configured gets 403).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::accept::{Limits, accept_loop};
use super::console::routes::{Console, is_console_path};
use super::error::ServeError;
use super::handler::{Gateway, SessionSource};
use super::http_auth::Gate;
use super::http_sessions::McpSessions;
use super::options::{HttpOptions, TokenSource};
use super::pre_init::before_initialize;
use super::shared::Shared;
use super::stateless::Principal;
use super::telemetry::{METRICS_PATH, metrics_response};

use super::http_auth::Body;
#[cfg(test)]
use super::http_auth::bearer_matches;

/// The gate in front of the MCP service.
struct Front {
    service: StreamableHttpService<Gateway, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    path: String,
    /// Who a request comes from (C3), and who owns each session (C7).
    gate: Gate,
    shared: Arc<Shared>,
    max_sessions: usize,
    max_request_bytes: usize,
    read_timeout: Option<Duration>,
    /// The metrics answered at `/metrics` (behind the token), when the policy turns them on.
    metrics: Option<Arc<toolgate_telemetry::metrics::Metrics>>,
    /// Held while a request that may add a session (an `initialize`, or a session this process
    /// does not hold, which rmcp brings back from the store) is checked against
    /// `max_sessions` and handed to rmcp, so that requests at the same time cannot pass the
    /// limit together.
    admission: tokio::sync::Mutex<()>,
    /// The console at `/ui` (answers 404 while the policy has it off).
    console: Console,
    /// Where sessions are kept for other instances, with their owners (C7), when the policy
    /// keeps results in a store.
    stored_sessions: Option<Arc<McpSessions>>,
}

/// Listens on `options.addr` and serves until `shutdown` fires.
pub(crate) async fn serve_http(
    shared: Arc<Shared>,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let token = options.token.as_ref().map(read_token).transpose()?;
    let loopback = options.addr.ip().is_loopback();
    let authenticated = shared.engines.current().auth.is_on();
    if !loopback && token.is_none() && !authenticated {
        return Err(ServeError::TokenRequired { addr: options.addr });
    }
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(options.addr);
    let front = Arc::new(front(shared, &options, token, addr, &shutdown));
    // The address goes to stderr as a line a supervisor (or a test) can read.
    eprintln!("toolgate serve: listening on http://{addr}{}", options.path);
    if front
        .console
        .shared
        .engines
        .current()
        .engine
        .policy()
        .serve
        .console
    {
        eprintln!("toolgate serve: console at http://{addr}/ui");
    }
    tracing::info!(%addr, path = %options.path, "serving MCP over Streamable HTTP");
    let limits = Limits {
        max_connections: options.max_connections,
        read_timeout: options.read_timeout,
    };
    let handle = move |request: Request<Incoming>| {
        let front = Arc::clone(&front);
        async move { front.handle(request).await }
    };
    accept_loop(listener, limits, handle, shutdown).await;
    Ok(())
}

fn front(
    shared: Arc<Shared>,
    options: &HttpOptions,
    token: Option<String>,
    addr: SocketAddr,
    shutdown: &CancellationToken,
) -> Front {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    hosts.extend(options.allowed_hosts.iter().cloned());
    if !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    let any_host = !addr.ip().is_loopback() && options.allowed_hosts.is_empty();
    let console = Console {
        shared: Arc::clone(&shared),
        hub: Arc::clone(&shared.console),
        hosts: (!any_host).then(|| hosts.clone()),
        origins: options.allowed_origins.clone(),
        shutdown: shutdown.child_token(),
    };
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(options.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_request_bytes)
        .with_cancellation_token(shutdown.child_token());
    config = if any_host {
        // Listening on all interfaces for clients that name it as they like; the bearer token,
        // required here, is what keeps strangers out.
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(hosts)
    };
    let stored = shared.engines.current();
    let metrics = stored
        .engine
        .policy()
        .telemetry
        .metrics_on()
        .then(toolgate_telemetry::metrics::Metrics::global);
    let stored_sessions = stored
        .sessions
        .results()
        .map(|results| Arc::new(McpSessions::beside(results, stored.sessions.ttl())));
    config.session_store = stored_sessions.clone().map(|s| s as _);
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = options.idle_timeout;
    let sessions = Arc::new(manager);
    let factory_shared = Arc::clone(&shared);
    let service = StreamableHttpService::new(
        move || {
            Ok(Gateway::new(
                Arc::clone(&factory_shared),
                SessionSource::HttpHeader,
            ))
        },
        Arc::clone(&sessions),
        config,
    );
    Front {
        service,
        sessions,
        path: options.path.clone(),
        gate: Gate::new(token, addr, &options.path, options.max_sessions),
        shared,
        max_sessions: options.max_sessions,
        max_request_bytes: options.max_request_bytes,
        read_timeout: options.read_timeout,
        metrics,
        admission: tokio::sync::Mutex::new(()),
        console,
        stored_sessions,
    }
}

impl Front {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        // The policy of this request: a reload that drops a key refuses it from now on.
        let auth = Arc::clone(&self.shared.engines.current().auth);
        if request.uri().path() != self.path && is_console_path(request.uri().path()) {
            let authorized = self.gate.is_operator(request.headers(), &auth);
            return self.console.handle(request, authorized).await;
        }
        let metrics = match &self.metrics {
            Some(metrics) if request.uri().path() == METRICS_PATH => Some(metrics),
            _ => None,
        };
        if request.uri().path() != self.path && metrics.is_none() {
            if request.method() == http::Method::GET
                && let Some(metadata) = self.gate.metadata(request.uri().path(), &auth)
            {
                return metadata;
            }
            return plain(
                StatusCode::NOT_FOUND,
                "Not Found: the MCP endpoint is elsewhere",
            );
        }
        let admitted = match self.gate.admit(request.headers(), &auth).await {
            Ok(admitted) => admitted,
            Err(response) => return response,
        };
        let session_id = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let may_use = match &session_id {
            Some(id) => match self.may_use(id, &admitted.principal).await {
                Ok(may) => may,
                Err(response) => return response,
            },
            None => true,
        };
        if !may_use {
            tracing::info!(
                principal = admitted.principal.name(),
                "a request for another principal's session was refused"
            );
            return json_rpc_error(
                StatusCode::FORBIDDEN,
                Value::Null,
                -32001,
                "this session belongs to another principal: open a session of your own",
            );
        }
        if let Some(metrics) = metrics {
            return metrics_response(metrics);
        }
        // L8: a principal over its request limit is answered before any MCP message is read.
        if request.method() == http::Method::POST {
            let current = self.shared.engines.current();
            if let Err(refusal) = current.engine.admit_request(&admitted.caller).await {
                return super::http_limits::refused(&refusal, self.metrics.as_deref());
            }
        }
        let is_delete = request.method() == http::Method::DELETE;
        let (mut request, initialize) = match request.method() {
            &http::Method::POST => match self.checked_body(request).await {
                Ok(checked) => checked,
                Err(response) => return response,
            },
            _ => (request.map(|_| Full::new(Bytes::new())), false),
        };
        // Who sent it: a request without an MCP session (2026-07-28) is keyed by it.
        request.extensions_mut().insert(admitted.principal.clone());
        request
            .extensions_mut()
            .insert(Arc::clone(&admitted.caller));
        let _admitted = match self.may_add_session(&request, initialize).await {
            true => {
                let admitted = self.admission.lock().await;
                if self.sessions.sessions.read().await.len() >= self.max_sessions {
                    return json_rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        Value::Null,
                        -32000,
                        &format!(
                            "too many sessions: this server holds at most {}; close one or try later",
                            self.max_sessions
                        ),
                    );
                }
                Some(admitted)
            }
            false => None,
        };
        let mut response = self.service.handle(request).await;
        if is_delete && response.status() == StatusCode::ACCEPTED {
            // The session is closed; say so the way clients expect (the official Python client
            // reports a 202 as a failed termination).
            *response.status_mut() = StatusCode::NO_CONTENT;
            if let Some(id) = &session_id {
                self.gate.closed(id);
            }
        }
        if initialize
            && session_id.is_none()
            && let Some(id) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            // C7: the session belongs to the principal that opened it.
            {
                let open = self.sessions.sessions.read().await;
                self.gate
                    .opened(id, &admitted.principal, |id| open.contains_key(id));
            }
            // Stored before the client learns the session's id: any instance it goes to next
            // knows the owner.
            if let Some(store) = &self.stored_sessions
                && let Err(e) = store.set_owner(id, admitted.principal.name()).await
            {
                tracing::warn!(session = id, "cannot store the session's owner: {e}");
                return json_rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Value::Null,
                    -32000,
                    &format!(
                        "the session store does not answer, so the session cannot be shared \
                         with other instances: {e}; try again"
                    ),
                );
            }
        }
        response
    }

    /// Whether `principal` may use the MCP session `id` (C7): against the owner this process
    /// knows, else the owner stored with the session's record (a session another instance
    /// opened), else it may (and owns it here from now on). A store that cannot be read is a
    /// 503: the request is not let through on a guess.
    async fn may_use(&self, id: &str, principal: &Principal) -> Result<bool, Response<Body>> {
        if let Some(owns) = self.gate.owned_by(id, principal) {
            return Ok(owns);
        }
        if let Some(store) = &self.stored_sessions {
            match store.owner(id).await {
                Ok(Some(owner)) => {
                    self.gate.adopt(id, &owner);
                    return Ok(owner == principal.name());
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(session = id, "cannot read the session's owner: {e}");
                    return Err(json_rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        Value::Null,
                        -32000,
                        &format!("the session store cannot be read: {e}; try again"),
                    ));
                }
            }
        }
        Ok(self.gate.may_use(id, principal))
    }

    /// Whether rmcp may open a session for `request`: an `initialize` without a session id
    /// (a request of 2026-07-28 has none and opens none), or any request but a DELETE whose
    /// session this process does not hold (rmcp brings it back from the session store when
    /// it is there).
    async fn may_add_session<B>(&self, request: &Request<B>, initialize: bool) -> bool {
        match request.headers().get("mcp-session-id") {
            None => initialize,
            Some(_) if request.method() == http::Method::DELETE => false,
            Some(id) => match id.to_str() {
                Ok(id) => !self.sessions.sessions.read().await.contains_key(id),
                Err(_) => false,
            },
        }
    }

    /// Reads a POST body (at most `max_request_bytes`) and answers what is not one JSON-RPC
    /// message with a JSON-RPC error: -32700 for text that is not JSON, -32600 for JSON that is
    /// not a request, notification or response (a batch, a missing `jsonrpc`, ...). Answers
    /// the request and whether it is an `initialize`.
    async fn checked_body(
        &self,
        request: Request<Incoming>,
    ) -> Result<(Request<Full<Bytes>>, bool), Response<Body>> {
        let (parts, body) = request.into_parts();
        let collect = Limited::new(body, self.max_request_bytes).collect();
        let collected = match self.read_timeout {
            Some(limit) => match tokio::time::timeout(limit, collect).await {
                Ok(collected) => collected,
                Err(_) => {
                    return Err(json_rpc_error(
                        StatusCode::REQUEST_TIMEOUT,
                        Value::Null,
                        -32600,
                        &format!(
                            "the request body did not arrive within {} s",
                            limit.as_secs_f64()
                        ),
                    ));
                }
            },
            None => collect.await,
        };
        let bytes = match collected {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<LengthLimitError>() => {
                return Err(json_rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Value::Null,
                    -32600,
                    &format!(
                        "the request is larger than this server accepts ({} bytes)",
                        self.max_request_bytes
                    ),
                ));
            }
            Err(e) => {
                return Err(json_rpc_error(
                    StatusCode::BAD_REQUEST,
                    Value::Null,
                    -32700,
                    &format!("the request body could not be read: {e}"),
                ));
            }
        };
        let message = match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
            Ok(message) => message,
            Err(e) => return Err(not_one_message(&bytes, &e)),
        };
        // Before `initialize` (no session yet), a request gets the error that says so.
        if !parts.headers.contains_key("mcp-session-id")
            && let Some((id, error)) = before_initialize(&message)
        {
            return Err(json_rpc_error(
                StatusCode::BAD_REQUEST,
                serde_json::to_value(id).unwrap_or(Value::Null),
                i64::from(error.code.0),
                &error.message,
            ));
        }
        let initialize = matches!(
            message,
            ClientJsonRpcMessage::Request(ref request)
                if matches!(request.request, ClientRequest::InitializeRequest(_))
        );
        Ok((Request::from_parts(parts, Full::new(bytes)), initialize))
    }
}

/// The answer to a body that is JSON, or not, but not one JSON-RPC message.
fn not_one_message(bytes: &[u8], e: &serde_json::Error) -> Response<Body> {
    match serde_json::from_slice::<Value>(bytes) {
        Err(syntax) => json_rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32700,
            &format!("parse error: the body is not JSON: {syntax}"),
        ),
        Ok(value) => json_rpc_error(
            StatusCode::BAD_REQUEST,
            value.get("id").cloned().unwrap_or(Value::Null),
            -32600,
            &format!("invalid request: not one JSON-RPC 2.0 message: {e}"),
        ),
    }
}

fn read_token(source: &TokenSource) -> Result<String, ServeError> {
    match source {
        TokenSource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ServeError::TokenFile {
                path: path.clone(),
                source,
            })?;
            let token = text.lines().next().unwrap_or("").trim().to_owned();
            if token.is_empty() {
                return Err(ServeError::TokenFile {
                    path: path.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is empty"),
                });
            }
            Ok(token)
        }
        TokenSource::Env(name) => std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| ServeError::TokenEnv { name: name.clone() }),
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

fn json_rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_str(authorization).unwrap(),
        );
        headers
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        assert!(bearer_matches(&headers("Bearer abc123"), "abc123"));
        assert!(!bearer_matches(&headers("Bearer abc124"), "abc123"));
        assert!(!bearer_matches(&headers("Bearer abc1234"), "abc123"));
        assert!(!bearer_matches(&headers("Basic abc123"), "abc123"));
        assert!(!bearer_matches(&http::HeaderMap::new(), "abc123"));
    }

    #[test]
    fn the_scheme_is_read_without_regard_to_case() {
        for value in ["bearer abc123", "BEARER abc123", "bEaReR  abc123"] {
            assert!(bearer_matches(&headers(value), "abc123"), "{value}");
        }
        for value in ["bearerabc123", "bearer", "bearer ", "bear abc123"] {
            assert!(!bearer_matches(&headers(value), "abc123"), "{value}");
        }
    }

    #[test]
    fn a_token_file_gives_its_first_line_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "  s3cret \nsecond line\n").unwrap();
        assert_eq!(read_token(&TokenSource::File(path)).unwrap(), "s3cret");
    }

    #[test]
    fn an_empty_token_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "\n").unwrap();
        let err = read_token(&TokenSource::File(path)).unwrap_err();
        assert!(matches!(err, ServeError::TokenFile { .. }), "{err}");
    }

    #[test]
    fn an_unset_token_variable_is_an_error() {
        let err =
            read_token(&TokenSource::Env("TOOLGATE_TEST_NO_SUCH_VARIABLE".into())).unwrap_err();
        assert!(matches!(err, ServeError::TokenEnv { .. }), "{err}");
    }
}
