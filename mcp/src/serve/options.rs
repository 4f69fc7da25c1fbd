//! What `serve` is told: the policy, the transport, and the HTTP safety settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The policy file; it is watched for changes unless `watch` is off.
    pub policy: PathBuf,
    /// Where results and session state go when the policy names no store (the host's results
    /// folder, as a `file:///` URL); `None` keeps them in memory.
    pub default_store_url: Option<String>,
    /// Serve Streamable HTTP with these settings; `None` serves stdio.
    pub http: Option<HttpOptions>,
    /// Over stdio, the session id of the one connection (so a client that restarts finds what
    /// it found before); `None` draws a fresh one.
    pub session: Option<String>,
    /// Reload the policy when it or the files it names change. `SIGHUP` reloads either way.
    pub watch: bool,
    /// Over stdio, the longest request line, in bytes; a longer one is answered with a
    /// JSON-RPC error (-32600). Over HTTP, [`HttpOptions::max_request_bytes`] applies.
    pub max_request_bytes: usize,
}

/// The default largest request, over stdio and HTTP: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

impl ServeOptions {
    /// Serve `policy` over stdio, watching it, with results and sessions in memory.
    pub fn stdio(policy: impl Into<PathBuf>) -> Self {
        ServeOptions {
            policy: policy.into(),
            default_store_url: None,
            http: None,
            session: None,
            watch: true,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

/// Where the bearer token that HTTP clients must send comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// The first line of this file (surrounding whitespace dropped).
    File(PathBuf),
    /// This environment variable.
    Env(String),
}

/// Streamable HTTP settings. The defaults are the safe ones: loopback only, no cross-site
/// browser origin, 4 MiB requests, 256 sessions, 512 connections, 10 s to send a request's
/// headers and again its body, sessions closed after 5 minutes without a request.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to listen on. Anything but a loopback address needs a `token`.
    pub addr: SocketAddr,
    /// The URL path of the MCP endpoint.
    pub path: String,
    /// Clients must send `Authorization: Bearer <token>`; required off loopback.
    pub token: Option<TokenSource>,
    /// Browser origins allowed to call (`https://app.example.com:443`, `http://localhost:*`).
    /// A request that carries any other `Origin` is refused with 403 (DNS rebinding).
    pub allowed_origins: Vec<String>,
    /// `Host` header values accepted besides the loopback names (`localhost`, `127.0.0.1`,
    /// `::1`); needed when clients reach the server under another name.
    pub allowed_hosts: Vec<String>,
    /// Largest request body, in bytes; a larger one gets 413.
    pub max_request_bytes: usize,
    /// Most sessions open at once, counting those brought back from the session store; an
    /// `initialize`, or a request of a session this process has not seen, beyond that gets 503.
    pub max_sessions: usize,
    /// Most TCP connections open at once; more wait, unaccepted, until one closes.
    pub max_connections: usize,
    /// How long a client has to send a request's headers (from the connection's start, or
    /// from the end of its previous request), and then again its body; `None`: forever.
    pub read_timeout: Option<Duration>,
    /// A session without a request for this long is closed (its state in the store stays
    /// until `sessions.ttl`); `None`: never.
    pub idle_timeout: Option<Duration>,
}

impl HttpOptions {
    /// The safe defaults, listening on `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        HttpOptions {
            addr,
            path: "/mcp".to_owned(),
            token: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_sessions: 256,
            max_connections: 512,
            read_timeout: Some(Duration::from_secs(10)),
            idle_timeout: Some(Duration::from_secs(300)),
        }
    }
}
