//! # toolgate
//!
//! The engine between an LLM agent and its tools. A [`Policy`] (usually a YAML file, see
//! [`toolgate_policy`]) says how tool calls run; the [`Engine`] built from it runs every call
//! through one guarded pipeline: aliases, declarative rules, sandboxed Rhai hooks, timeouts,
//! result limits, panic isolation, events.
//!
//! ```no_run
//! use toolgate::{Engine, history::ToolCall, tool::{FnTool, ToolOutput}};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = toolgate_policy::load_file("policies/default.yaml".as_ref())?;
//! let engine = Engine::builder(policy)
//!     .tool(FnTool::new("greet", "Say hello.", json!({"type": "object"}),
//!         |_ctx, _args| async { Ok(ToolOutput::text("hello")) }))
//!     .build()?;
//! let session = engine.session(Some("user-42"))?;
//! let outcomes = engine
//!     .dispatch(&session, &[ToolCall::new("call_1", "greet", "{}")])
//!     .await?;
//! assert_eq!(outcomes[0].content.text(), "hello");
//! # Ok(()) }
//! ```
//!
//! Where each behaviour of the specification lives: names in [`registry`], one call in
//! [`guard`], one turn in [`dispatch`](Engine::dispatch), scripts in [`script`], events in
//! [`events`], sessions in [`session`], messages in [`history`].
//!
//! The modules depend on each other one way: `call` (the types of one call) on `error`, `tool`,
//! `settings`, `structured`, `caller` and `session` (who calls, in which session) only; the guard's layers on those;
//! `dispatch` on the guard; `engine` and
//! `builder` on everything; only `builder` imports `engine` (to assemble one), and `engine`
//! never imports `builder` back (`builder` defines [`Engine::builder`] in an `impl Engine` of its
//! own).

#![warn(missing_docs)]

pub mod access;
mod audit;
mod audit_batches;
mod audit_spool;
mod builder;
mod call;
mod caller;
mod clients;
mod dispatch;
mod engine;
pub mod error;
pub mod events;
pub mod guard;
pub mod history;
mod limits;
pub mod mask;
mod plugin;
pub mod plugin_host;
pub mod process;
mod reduction;
pub mod registry;
mod rules;
pub mod script;
pub mod search;
pub mod session;
mod settings;
mod structured;
pub mod tool;

pub use builder::EngineBuilder;
pub use call::{Content, Decision, Outcome};
pub use caller::{Caller, LOCAL_CALLER};
pub use engine::Engine;
pub use error::{BuildError, CallError, PLUGIN_PATH_ENV, TurnError};
pub use limits::RequestRefused;
pub use plugin::hash_file as plugin_hash;
pub use plugin::worker::restarts as plugin_worker_restarts;
pub use session::Session;
pub use settings::Explanation;
pub use structured::INVALID_STRUCTURED_CONTENT;

/// The policy crate: what a [`Policy`] holds and how to load one.
pub use toolgate_policy as policy;
pub use toolgate_policy::Policy;
/// The result store crate: the [`store::ResultStore`] trait (implement it with
/// [`macro@async_trait`]) and its ids.
pub use toolgate_store as store;

/// The attribute that implements async traits such as [`store::ResultStore`].
pub use async_trait::async_trait;
/// The token that cancels a turn ([`Engine::dispatch_with_cancel`]) or tells a tool to stop
/// ([`tool::ToolContext::cancel`]).
pub use tokio_util::sync::CancellationToken;
