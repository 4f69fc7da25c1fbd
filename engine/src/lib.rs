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

mod dispatch;
pub mod engine;
pub mod error;
pub mod events;
pub mod guard;
pub mod history;
pub mod plugin;
pub mod reduction;
pub mod registry;
mod rules;
pub mod script;
pub mod search;
pub mod session;
pub mod settings;
pub mod tool;

pub use engine::{Engine, EngineBuilder};
pub use error::{BuildError, CallError, TurnError};
pub use guard::{Content, Outcome};
pub use session::Session;
pub use toolgate_policy::{self as policy, Policy};
pub use toolgate_store as store;
