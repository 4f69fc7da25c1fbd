//! The live console: a page at `/ui` of `serve --http` that shows the calls as they happen,
//! a call's detail, the policy with `explain`, the tools and upstream servers with their
//! health, and search. On when the policy says `serve.console: true` (read at each request,
//! so a reload turns it on or off). Docs: docs/console.md.
//!
//! - `hub`: the ring of recent calls and the broadcast of their changes, fed by the engine's
//!   events.
//! - `routes`: the gate (Host, Origin, bearer token) and the routes; `stream` the server-sent
//!   events; `views` the JSON each view reads.
//! - `assets/`: the page, its script and its style, embedded in the binary (`include_str!`).
//!
//! The page is static and public (it holds no data); everything it shows comes from
//! `/ui/api/...`, which asks for the same bearer token as MCP. The page takes the token once
//! (typed in, or from the `#token=` fragment of its address, which never reaches a server)
//! and keeps it in `sessionStorage`; it sends it in the `Authorization` header, the event
//! stream included (read with `fetch`, not `EventSource`, which cannot send headers), so the
//! token is never in a URL, a cookie or a log.

pub(crate) mod hub;
pub(crate) mod routes;
mod stream;
mod views;
