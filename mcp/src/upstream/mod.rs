//! Tools of other MCP servers ("upstreams"), governed by a policy like every other tool.
//!
//! A policy lists them under `mcp_servers:` (see `docs/policy.md`): each has a name and either
//! a `command` (a child process speaking MCP on stdio) or a `url` (Streamable HTTP). Their
//! tools join the engine's registry as `<server>.<tool>` through
//! [`EngineBuilder::tools_from`](toolgate::EngineBuilder::tools_from), so the engine knows
//! nothing of MCP: names are checked, and aliases, rules, hooks, timeouts, caps, offload and
//! search apply as to any tool.
//!
//! Their resources, resource templates and prompts are listed too (`lists`), put in one table
//! across servers (`catalog`: URIs kept and routed by listing or template, prompts named
//! `<server>.<prompt>`, collisions left out), and read or got through targets the engine runs
//! under its guard (`access`, `shape`); subscriptions are counted per URI (`watch`). `toolgate
//! serve` offers them (see `docs/policy.md`, "Resources, prompts and completion").
//!
//! # Lifecycle
//!
//! 1. [`Upstreams::start`] starts every server at once (each within its `startup_timeout`).
//! 2. [`Upstreams::problems`] says which did not start; their tools are missing, everything
//!    else works. `toolgate validate` reports them as errors, other commands as warnings.
//! 3. [`Upstreams::register`] adds the tools to an [`EngineBuilder`](toolgate::EngineBuilder).
//! 4. Calls run through the engine's guard and reach the server by its live connection.
//! 5. [`Upstreams::shutdown`] stops them all.
//!
//! # Faults
//!
//! A server costs only its own calls. Its failures are error kinds of their own:
//! `upstream_unavailable` (not running, restarting, connection broken) and `upstream_error`
//! (a JSON-RPC error, or an answer that is not a tool result); arguments it refuses
//! (`-32602`) are `invalid_arguments`, an answer marked `isError` is `tool_error`. When the
//! guard stops waiting (timeout, cancelled turn) the server gets `notifications/cancelled` for
//! the request. A server that exits or whose connection breaks is started again: at once the
//! first time, then with pauses of 0.5 s, 1 s, 2 s, ... up to 30 s while it keeps failing.
//!
//! # Requests to the client
//!
//! A server's `sampling/createMessage`, `elicitation/create` and `roots/list` are refused unless
//! its `client_requests` allows them; toolgate declares to it only the capabilities allowed. A
//! host that serves clients (`toolgate serve`) passes allowed ones on to the client whose call
//! the server is working on (see `client_requests` and `inflight`); other hosts refuse them.
//!
//! # Pins
//!
//! A server whose entry names a pins file (`pins:`, written by `toolgate upstream pin`) offers
//! only the tools whose definitions are the ones pinned; a tool that changed, or appeared, is
//! held back until it is pinned again (see [`PinFile`] and [`Upstreams::definitions`]).
//!
//! # Tool list changes
//!
//! When a server sends `notifications/tools/list_changed` (or comes back with other tools) its
//! list is fetched again and [`Upstreams::on_change`] listeners are called. Engines are
//! immutable: a long-running host (`toolgate serve`) rebuilds the engine with
//! [`Upstreams::register`] and swaps it in.

mod access;
mod adapter;
mod callers;
mod catalog;
mod client_requests;
mod config;
mod connection;
mod error;
mod frame;
mod handler;
mod inflight;
mod listing;
mod lists;
mod offered;
mod ordered;
mod pins;
mod set;
mod shape;
mod stdio;
mod supervisor;
mod template;
mod trace;
mod turns;
mod watch;

pub(crate) use access::{Slot, nowhere};
pub(crate) use callers::{Caller, Downstream, ListKind};
pub use error::{UPSTREAM_ERROR, UPSTREAM_UNAVAILABLE, UpstreamError};
pub use pins::{
    Definitions, PINS_VERSION, Pin, PinFile, PinsError, ServerPins, changed_fields, pin_of,
};
pub use set::{Problem, Upstreams};
pub use watch::MAX_SUBSCRIBED;
