//! `toolgate serve`: the policy's tools to any MCP client, over stdio or Streamable HTTP.

use toolgate_mcp::serve::{HttpOptions, ServeError, ServeOptions, TokenSource};

use crate::app::default_store_url;
use crate::args::ServeArgs;
use crate::error::{CliError, EXIT_OK};

/// Serves until the client goes away or a signal stops it. Session state goes beside the
/// results: the policy's store, else the results folder.
pub async fn serve(args: ServeArgs) -> Result<u8, CliError> {
    let http = args.http.map(|addr| {
        let mut http = HttpOptions::new(addr);
        http.token = match (args.token_file, args.token_env) {
            (Some(file), _) => Some(TokenSource::File(file)),
            (None, Some(var)) => Some(TokenSource::Env(var)),
            (None, None) => None,
        };
        http.allowed_origins = args.allow_origins;
        http.allowed_hosts = args.allow_hosts;
        http.max_request_bytes = args.max_request_bytes;
        http.max_sessions = args.max_sessions;
        http.max_connections = args.max_connections as usize;
        http.read_timeout = args.read_timeout.0;
        http.idle_timeout = args.idle_timeout.0;
        http
    });
    let policy = args.policy.display().to_string();
    let options = ServeOptions {
        policy: args.policy,
        default_store_url: Some(default_store_url()?),
        http,
        session: args.session,
        watch: !args.no_watch,
        max_request_bytes: args.max_request_bytes,
    };
    toolgate_mcp::serve::serve(options)
        .await
        .map_err(|e| match e {
            ServeError::Policy(e) => CliError::Policy(e),
            ServeError::Build(source) => CliError::Build {
                policy,
                source: Box::new(source),
            },
            ServeError::Store(e) => CliError::Store(e),
            ServeError::Session(e) => CliError::SessionId(e),
            e => CliError::Serve(Box::new(e)),
        })?;
    Ok(EXIT_OK)
}
