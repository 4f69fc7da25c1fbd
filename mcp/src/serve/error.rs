//! The one error type of `serve`.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why `serve` could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The policy does not load (its `Display` lists every `file:line:col` problem).
    #[error(transparent)]
    Policy(#[from] toolgate_policy::PolicyError),
    /// The engine cannot be built from the policy.
    #[error(transparent)]
    Build(#[from] toolgate::BuildError),
    /// The store for results and session state cannot be opened.
    #[error("cannot open the store for session state")]
    Store(#[from] toolgate_store::StoreError),
    /// A session id that breaks the rules (`--session`).
    #[error("bad session id")]
    Session(#[from] toolgate_store::IdError),
    /// The policy's `auth:` cannot be used (no JWKS, a bad key entry); its message says
    /// which key.
    #[error("{message}")]
    Auth {
        /// What is wrong, naming the key.
        message: String,
    },
    /// `audit.sink: stdout` while serving over stdio, where stdout is the MCP channel.
    #[error(
        "audit.sink is stdout, but toolgate serve over stdio writes the MCP messages to stdout: \
         send the audit lines to stderr or a file (audit.sink: stderr | file)"
    )]
    AuditOnStdout,
    /// HTTP on a non-loopback address without a token.
    #[error(
        "{addr} is not a loopback address: give a bearer token (--token-file or --token-env) \
         so that only your clients can call the tools"
    )]
    TokenRequired {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The token file cannot be read, or holds no token.
    #[error("cannot read the bearer token from {}", path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The token's environment variable is unset or empty.
    #[error("the environment variable {name} holds no bearer token")]
    TokenEnv {
        /// The variable.
        name: String,
    },
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The client on stdio broke the MCP handshake: it sent something other than `initialize`,
    /// or the answer could not be written. (A client that closes stdin before initializing is
    /// not an error: `serve` ends with success, as it does when stdin closes later.)
    #[error("the MCP client on stdio broke the handshake")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The task serving the stdio connection panicked or was aborted.
    #[error("the MCP connection on stdio stopped abnormally")]
    Connection(#[source] tokio::task::JoinError),
    /// The policy files cannot be watched.
    #[error("cannot watch the policy files")]
    Watch(#[from] notify::Error),
    /// Something else of the operating system failed (signals, threads).
    #[error("{what}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
