//! Session state kept in a store, so that every process that uses the store sees what a session
//! found: two `toolgate call --session s1` runs one after the other, or two `toolgate serve`
//! instances behind one load balancer.
//!
//! - [`SessionState`] is what a session keeps: the catalog tools it found with `tool_search`.
//! - [`SessionStore`] is the small trait hosts talk to; [`ObjectSessionStore`] implements it over
//!   any `object_store` backend, beside the results, with create-only writes so that concurrent
//!   writers never lose each other's finds.

mod object;
mod state;

pub use object::{MCP_SESSIONS, ObjectSessionStore};
pub use state::{SessionState, SessionStore};
