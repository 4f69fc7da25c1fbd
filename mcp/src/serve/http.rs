//! `serve` over Streamable HTTP, safe by default.
//!
//! In front of `rmcp`'s Streamable HTTP service sits a small gate that answers before any MCP
//! message is read:
//! - only the MCP path is served (404 elsewhere);
//! - off loopback, every request must carry `Authorization: Bearer <token>` (401 otherwise;
//!   the comparison takes the same time wherever the first difference is);
//! - a new session beyond `max_sessions` gets 503 with a JSON-RPC error.
//!
//! `rmcp` then checks `Host` (DNS rebinding: only the loopback names and the configured hosts)
//! and `Origin` (a browser page of any origin not configured gets 403), bounds the body (413),
//! and answers a body that is not JSON-RPC with a JSON-RPC error.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::error::ServeError;
use super::handler::{Gateway, SessionSource};
use super::http_sessions::McpSessions;
use super::options::{HttpOptions, TokenSource};
use super::shared::Shared;

type Body = BoxBody<Bytes, Infallible>;

/// The gate in front of the MCP service.
struct Front {
    service: StreamableHttpService<Gateway, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    path: String,
    token: Option<String>,
    max_sessions: usize,
}

/// Listens on `options.addr` and serves until `shutdown` fires.
pub(crate) async fn serve_http(
    shared: Arc<Shared>,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let token = options.token.as_ref().map(read_token).transpose()?;
    let loopback = options.addr.ip().is_loopback();
    if !loopback && token.is_none() {
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
    tracing::info!(%addr, path = %options.path, "serving MCP over Streamable HTTP");
    loop {
        let (stream, _) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept a connection");
                    continue;
                }
            },
        };
        let front = Arc::clone(&front);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let front = Arc::clone(&front);
                async move { Ok::<_, Infallible>(front.handle(request).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
        });
    }
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
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(options.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_request_bytes)
        .with_cancellation_token(shutdown.child_token());
    config = if !addr.ip().is_loopback() && options.allowed_hosts.is_empty() {
        // Listening on all interfaces for clients that name it as they like; the bearer token,
        // required here, is what keeps strangers out.
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(hosts)
    };
    let stored = shared.engines.current();
    config.session_store = stored
        .sessions
        .results()
        .map(|results| Arc::new(McpSessions::beside(results)) as _);
    let sessions = Arc::new(LocalSessionManager::default());
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
        token,
        max_sessions: options.max_sessions,
    }
}

impl Front {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != self.path {
            return plain(
                StatusCode::NOT_FOUND,
                "Not Found: the MCP endpoint is elsewhere",
            );
        }
        if let Some(token) = &self.token
            && !bearer_matches(&request, token)
        {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <token>",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        let opens_session = request.method() == http::Method::POST
            && !request.headers().contains_key("mcp-session-id");
        if opens_session && self.sessions.sessions.read().await.len() >= self.max_sessions {
            return json_rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                &format!(
                    "too many sessions: this server holds at most {}; close one or try later",
                    self.max_sessions
                ),
            );
        }
        self.service.handle(request).await
    }
}

/// Whether the request carries `Authorization: Bearer <token>`, compared in time that does not
/// depend on where the first difference is.
fn bearer_matches(request: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
    else {
        return false;
    };
    let want = token.as_bytes();
    if given.len() != want.len() {
        return false;
    }
    given
        .iter()
        .zip(want)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
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

fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
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
