//! The per-call pipeline.
//!
//! Every call, built-in tools and unknown names included, passes through one chain of
//! [`Layer`]s, outermost first, and ends at the endpoint (the tool, or the unknown-tool answer).
//! `builder.rs` is the one place that owns the layers: which there are (one file each in this
//! folder, declared there), their order, what each needs from the layers outside it, and what
//! each is built from. Read its docs for the chain. The runner (`run.rs`) wraps the chain with
//! the `tracing` span, the start and end events (E1), the duration and the panic capture (G6).
//!
//! A feature that needs to see a call is a layer here, not an `if` in the dispatcher; the
//! layers a program adds ([`crate::EngineBuilder::layer`]) run last, just before the tool.

mod builder;
mod endpoint;
mod layer;
mod run;

pub use crate::call::{CallResult, Invocation, Reply, TRUNCATION_MARKER};
pub use builder::CHECK_ORDER;
pub use layer::{Layer, Next};

pub(crate) use builder::arguments::ArgAliases;
pub(crate) use builder::visibility::VisibilityLayer;
pub(crate) use builder::{Breaker, GuardParts, RedactLayer, Reduction};
pub(crate) use endpoint::Endpoint;
pub(crate) use run::Guard;
