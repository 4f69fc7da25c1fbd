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
    /// The MCP connection failed (stdio).
    #[error("the MCP connection failed: {0}")]
    Transport(String),
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
