//! `toolgate serve`: the tools a policy lets a model see, offered to any MCP client.
//!
//! - Transports: stdio (one session per connection; pipes are read and written by the event
//!   loop) and Streamable HTTP (one session per `Mcp-Session-Id`), both through `rmcp`, on every
//!   protocol revision up to 2026-07-28. A request of 2026-07-28, which has no session, is
//!   keyed by its principal and `_meta["toolgate/session"]` (`stateless`); its client hears of
//!   changes on `subscriptions/listen` (`listeners`); over stdio `server/discover` is answered
//!   before the engine is built (`probe`). A request of a 2025 revision before `initialize` is
//!   told to send it first (`pre_init`). Lists come in pages (`paging`). See
//!   `docs/protocol.md`.
//! - A tool is listed with everything its source declares (title, annotations, icons, `_meta`,
//!   output schema), and a result keeps its content blocks of every kind, its structured
//!   content and its `_meta`, with toolgate's own `_meta.toolgate` beside the tool's keys
//!   (`content`, and `crate::shape` for the MCP shapes).
//! - `tools/list` is [`toolgate::Engine::visible_tools`] for the session; `tools/call` runs
//!   through the whole guard; a failed call is a tool result with `isError`, never a protocol
//!   error; progress from a tool becomes `notifications/progress`; a client's
//!   `notifications/cancelled` fires the call's cancellation token; a call that makes catalog
//!   tools visible (`tool_search`) is followed by `notifications/tools/list_changed`.
//! - Resources, resource templates, prompts and completion of the policy's upstream servers
//!   (`resources`): reads and gets run through the guard like tool calls, subscriptions are kept
//!   per connection and their updates forwarded (`subscriptions`). The capabilities are declared
//!   only when some upstream server declared them.
//! - What an upstream MCP server sends during a call goes back to the client that made it
//!   (`downstream`): its requests to the client (sampling, elicitation, roots) as the policy
//!   allows, its progress with its own numbers, its log messages (filtered by the client's
//!   `logging/setLevel`); its resource and prompt list changes go to every client.
//! - Session state (the tools a session found) lives in a [`toolgate_store::SessionStore`]
//!   beside the results, so several `serve` processes on one store share it
//!   ([`StoredSessions`]).
//! - HTTP is safe by default: loopback unless told otherwise, a bearer token required off
//!   loopback, `Origin` and `Host` checked, request size and session count bounded
//!   ([`HttpOptions`]).
//! - Telemetry (`telemetry`, issue 28): each request that runs a call is a server span whose
//!   parent is the client's trace context (`_meta.traceparent`, else the HTTP `traceparent`);
//!   `/metrics` answers the Prometheus metrics on the HTTP server and on the policy's
//!   `telemetry.admin_address`.
//! - Live reload: the policy file and the scripts and catalogs it names are watched; a valid
//!   edit swaps in a whole new engine for new calls (calls in flight finish on the old one) and
//!   tells every client `list_changed`; an invalid edit keeps the last good policy and logs the
//!   `file:line:col` errors. `SIGHUP` reloads too.
//! - A live console at `/ui` of the HTTP server when the policy turns it on
//!   (`serve.console`; `console`, docs/console.md).

mod accept;
mod auth;
mod clients;
mod console;
mod content;
mod downstream;
mod engines;
mod error;
mod handler;
mod http;
mod http_auth;
mod http_limits;
mod http_sessions;
mod jwt;
mod listeners;
mod options;
mod paging;
mod peers;
mod pre_init;
mod probe;
mod progress;
mod reload;
mod resources;
mod run;
mod session;
mod shared;
mod stateless;
mod stdio;
mod stdio_lines;
mod stdio_pipes;
mod subscriptions;
mod telemetry;

pub use auth::{API_KEY_PREFIX, new_api_key};
pub use error::ServeError;
pub use options::{DEFAULT_MAX_REQUEST_BYTES, HttpOptions, ServeOptions, TokenSource};
pub use run::serve;
pub use session::StoredSessions;
