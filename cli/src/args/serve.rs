//! The arguments of `toolgate serve`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::{Timeout, parse_timeout};

/// The examples and explanations after `toolgate serve --help`.
pub const AFTER_HELP: &str = "\
Examples:
  toolgate serve --policy policies/examples/search.yaml          # stdio, for an MCP host
  toolgate serve --policy my.yaml --http 127.0.0.1:8765          # Streamable HTTP at /mcp
  toolgate serve --policy my.yaml --http 0.0.0.0:8765 --token-file /run/secrets/toolgate

Over stdio the connection is one session (--session names it); over HTTP each MCP session
(Mcp-Session-Id) is one. A session's found tools are kept beside the results (the policy's
reduction.store, else the results folder), so other serve instances on the same store, and
later runs, share them. HTTP listens on loopback unless told otherwise, and then requires a
bearer token; it refuses browser origins not allowed with --allow-origin. It holds at most
--max-connections connections and --max-sessions sessions (counting those brought back from the
store), gives a client --read-timeout to send a request's headers and again its body, and
closes a session idle for --idle-timeout. Over stdio, a request line over --max-request-bytes
is answered with a JSON-RPC error.

The policy file and the scripts and catalogs it names are watched: a valid edit applies to new
calls (calls in flight finish on the old policy) and clients are told their tool list changed;
an invalid edit is logged as file:line:col errors and the last good policy stays. Symbolic links
on the way to a watched file are watched too (a Kubernetes ConfigMap's ..data swap reloads).
SIGHUP reloads too.";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The policy file; required, as serve watches it: edits apply to new calls without a
    /// restart.
    #[arg(short, long, value_name = "POLICY")]
    pub policy: PathBuf,

    /// Serve Streamable HTTP on this address (for example 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,

    /// Read the bearer token HTTP clients must send from the first line of this file
    /// (required when --http is not a loopback address).
    #[arg(
        long,
        value_name = "FILE",
        requires = "http",
        conflicts_with = "token_env"
    )]
    pub token_file: Option<PathBuf>,

    /// Read the bearer token from this environment variable.
    #[arg(long, value_name = "VAR", requires = "http")]
    pub token_env: Option<String>,

    /// A browser origin allowed to call (https://app.example.com:443, http://localhost:*);
    /// repeat for more. Requests from any other origin are refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,

    /// A Host header value accepted besides the loopback names; repeat for more.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,

    /// Largest request, in bytes: an HTTP body (a larger one gets 413), a stdio line (a longer
    /// one gets a JSON-RPC error, -32600).
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_request_bytes: usize,

    /// Most HTTP sessions open at once, counting sessions brought back from the store; a
    /// new one past that gets 503.
    #[arg(long, value_name = "N", default_value_t = 256, requires = "http")]
    pub max_sessions: usize,

    /// Most HTTP connections open at once; more wait, not accepted, until one closes.
    #[arg(long, value_name = "N", default_value_t = 512, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// How long an HTTP client has to send a request's headers, and then its body; a slower
    /// one is disconnected (headers) or answered 408 (body). `none`: no limit.
    #[arg(long, value_name = "DURATION", default_value = "10s", requires = "http",
          value_parser = parse_timeout)]
    pub read_timeout: Timeout,

    /// An HTTP session without a request for this long is closed, and its place freed for a
    /// new one (what it found stays in the store until sessions.ttl). `none`: never.
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "http",
          value_parser = parse_timeout)]
    pub idle_timeout: Timeout,

    /// Over stdio, the session id of the connection (a client that comes back with the same id
    /// finds the tools it found before). Default: a fresh id.
    #[arg(long, value_name = "ID", conflicts_with = "http")]
    pub session: Option<String>,

    /// Do not watch the policy and the files it names for changes (SIGHUP still reloads).
    #[arg(long)]
    pub no_watch: bool,
}
