//! `http`: a toolgate plugin that lets an agent make HTTP GET and POST requests to the hosts the
//! policy grants, and nowhere else.
//!
//! # Configuration
//!
//! ```yaml
//! plugins:
//!   - name: http
//!     grants: {net: ["api.example.com", "127.0.0.1:8080"]}
//!     config:
//!       timeout_ms: 10000            # optional, default 10000
//!       max_response_bytes: 1048576  # optional, default 1 MiB
//! ```
//!
//! `grants.net` lists the hosts a request may go to: `host` (any port) or `host:port`
//! (`[::1]:8080` for IPv6). A name matches only itself, without regard to case: no wildcards, and
//! `example.com` does not grant `api.example.com`. The engine hands the entry's `grants:` to the
//! plugin in its configuration, under `grants` (the whole shape is `{"fs_read", "fs_write",
//! "env", "net", "subprocess"}`, see the `toolgate-plugin-grants` crate); this plugin uses `net`
//! only.
//!
//! Its manifest asks for `net: ["*"]`, "any host the policy grants": an engine refuses to load
//! it when the entry grants no host at all (it could do nothing), and loads it with one or more.
//! A host that loads it without grants (its configuration without `grants`) gets a plugin that
//! refuses every request.
//!
//! # Tools
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `http.get` | `{url, headers?}` | the status line, the response's `content-type` and the body as text |
//! | `http.post` | `{url, body, content_type?, headers?}` | the same; `content_type` defaults to `application/json` |
//!
//! A response with a status of 400 or more is an error result that holds the status and the
//! body. A redirect is not followed: the result is the 3xx status with its `location`, and the
//! model may call again with that URL (which must be granted too).
//!
//! # Bounds
//!
//! - **Time**: each request, from resolving the name to the last byte of the body, must end
//!   within `timeout_ms`, or the call fails with `timeout:`.
//! - **Size**: a body longer than `max_response_bytes` is not read past that bound; the call
//!   fails with `too_large:`. Response headers are bounded at 64 KiB by the HTTP client.
//!
//! # Errors
//!
//! Every failure is an error result whose message starts with its kind: `bad_url:`,
//! `not_granted:`, `tls_unavailable:`, `timeout:`, `too_large:`, `connection_failed:`,
//! `status:`, `bad_header:` or `request_failed:` (see [`HttpError`]).
//!
//! # What is and is not enforced
//!
//! The grant is checked on the host written in the URL, before any connection, and again on
//! every request (redirects are not followed, so no response can lead the plugin elsewhere).
//! Proxies from the environment (`http_proxy`, ...) are ignored: the plugin connects directly.
//! The model cannot set `Host` (the server sees the host of the URL, the one the grant was
//! checked on, so a granted address cannot be asked for another virtual host), nor the headers
//! that frame the message or the connection (`Content-Length`, `Transfer-Encoding`,
//! `Connection`, `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`, `Upgrade`): each fails with
//! `bad_header:`. A port that is not a number from 1 to 65535 (`:8080x`, `:99999`) fails with
//! `bad_url:` instead of becoming the default port.
//! A granted name is resolved by the system's resolver, so a name whose DNS answer changes
//! (DNS rebinding) reaches whatever address it resolves to; grant IP addresses where that
//! matters.
//!
//! # TLS
//!
//! By default the plugin speaks plain `http://` only and carries no TLS code; an `https://` URL
//! fails with `tls_unavailable:`. Build it with the `tls` feature (`cargo build --release -p
//! toolgate-plugin-http --features tls`) for `https://` through rustls with the Mozilla root
//! certificates.

#![warn(missing_docs)]

mod request;

use serde::Deserialize;
use toolgate_plugin_api::{
    ANY_GRANTED, CallContext, Capabilities, Tool, ToolError, ToolOutput, json,
};
use toolgate_plugin_grants::Grants;

pub use request::HttpError;

/// The time bound of a request when the configuration gives none: 10 seconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// The size bound of a response body when the configuration gives none: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// The plugin's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    grants: Grants,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "default_max_response_bytes")]
    max_response_bytes: u64,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_max_response_bytes() -> u64 {
    DEFAULT_MAX_RESPONSE_BYTES
}

fn init(config: Option<Config>) -> Result<request::Client, String> {
    let config = config.unwrap_or(Config {
        grants: Grants::default(),
        timeout_ms: DEFAULT_TIMEOUT_MS,
        max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
    });
    if config.timeout_ms == 0 {
        return Err("`timeout_ms` must be at least 1".to_string());
    }
    Ok(request::Client::new(
        config.grants,
        std::time::Duration::from_millis(config.timeout_ms),
        config.max_response_bytes,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    url: String,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostArgs {
    url: String,
    body: String,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

fn get(ctx: &CallContext<request::Client>, args: GetArgs) -> Result<ToolOutput, ToolError> {
    let response = ctx
        .state()
        .send(request::Method::Get, &args.url, &args.headers)?;
    Ok(ToolOutput::text(response.to_text()))
}

fn post(ctx: &CallContext<request::Client>, args: PostArgs) -> Result<ToolOutput, ToolError> {
    let content_type = args.content_type.as_deref().unwrap_or("application/json");
    let method = request::Method::Post {
        body: args.body.as_bytes(),
        content_type,
    };
    let response = ctx.state().send(method, &args.url, &args.headers)?;
    Ok(ToolOutput::text(response.to_text()))
}

fn headers_schema() -> toolgate_plugin_api::serde_json::Value {
    json!({
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Request headers, name to value."
    })
}

/// What it asks the host for: the network, on whichever hosts the policy grants.
fn capabilities() -> Capabilities {
    Capabilities {
        net: vec![ANY_GRANTED.to_string()],
        ..Capabilities::default()
    }
}

toolgate_plugin_api::export_plugin! {
    name: "http",
    version: env!("CARGO_PKG_VERSION"),
    capabilities: capabilities(),
    init: init,
    tools: [
        Tool::new("http.get", get)
            .description(
                "HTTP GET a URL on a host the policy grants. Returns the status, the content \
                 type and the body as text. Redirects are returned, not followed.",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "An absolute http:// URL."},
                    "headers": headers_schema()
                },
                "required": ["url"],
                "additionalProperties": false
            })),
        Tool::new("http.post", post)
            .description(
                "HTTP POST a text body to a URL on a host the policy grants. Returns the \
                 status, the content type and the body as text.",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "An absolute http:// URL."},
                    "body": {"type": "string", "description": "The request body."},
                    "content_type": {"type": "string",
                                     "description": "The body's media type. Default application/json."},
                    "headers": headers_schema()
                },
                "required": ["url", "body"],
                "additionalProperties": false
            })),
    ],
}
