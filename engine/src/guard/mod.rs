//! The per-call pipeline.
//!
//! Every call, built-in tools and unknown names included, passes through one chain of
//! [`Layer`]s, outermost first, and ends at the endpoint (the tool, or the unknown-tool answer):
//!
//! ```text
//! after hook ─ reduce ─ group ─ timeout ─ result cap ─ arguments ─ visibility ─ rewrite ─ rules ─ before ─ (your layers) ─ endpoint
//! ```
//!
//! * **after hook** (G6, G7) sees the final outcome; its failure is an `error` event.
//! * **reduce** (R1, R2, R9; when reduction is on) offloads large results to the store.
//! * **group** serialises calls that share a `sequential_group`; its wait is queue time, so it
//!   sits outside the timeout, and a member holds the lock until it really returns.
//! * **timeout** (G2) starts once the call runs (after any wait for a concurrency slot or group
//!   lock, reported as `queued`), covers everything inside, cancels the call's token and drops
//!   the tool's future at the deadline.
//! * **result cap** (G3-G5) reads streams and caps text by Unicode characters.
//! * **arguments** (D2) parses the JSON arguments and renames argument aliases.
//! * **visibility** (S4) refuses catalog tools that were not found yet.
//! * **rewrite** (D2, D3) runs the rewrite script; its output is what the tool receives.
//! * **rules** (G1) checks the declarative allow/deny rules on those final arguments (path
//!   arguments in normalised form), so a rewrite cannot turn a denied call into an allowed one.
//!   Unknown names pass on to the unknown-tool answer; built-ins meet only rules naming them.
//! * **before** (G1) runs the before script, also on the final arguments.
//! * **your layers** ([`crate::EngineBuilder::layer`]) run last, just before the tool.
//!
//! Each layer is a file of this folder; `builder.rs` is the one place that owns their order and
//! states what each needs from the layers outside it. The runner (`run.rs`) wraps the chain with
//! the `tracing` span, the start and end events (E1), the duration and the panic capture (G6).
//!
//! A feature that needs to see a call is a layer here, not an `if` in the dispatcher.

mod after_hook;
mod arguments;
mod before;
mod builder;
mod endpoint;
mod group;
mod layer;
mod reduce;
mod result_cap;
mod rewrite;
mod rules;
mod run;
mod timeout;
mod visibility;

pub use crate::call::{CallResult, Invocation, Reply, TRUNCATION_MARKER};
pub use builder::CHECK_ORDER;
pub use layer::{Layer, Next};

pub(crate) use arguments::ArgAliases;
pub(crate) use builder::{GuardParts, Reduction};
pub(crate) use endpoint::Endpoint;
pub(crate) use run::Guard;
pub(crate) use visibility::VisibilityLayer;
