//! The Rust SDK for plugin authors: tools as plain functions, one macro to export them.
//!
//! - `output.rs`: what a tool returns ([`ToolOutput`]) or fails with ([`ToolError`]);
//! - `context.rs`: what a call sees ([`CallContext`]);
//! - `plugin.rs`: a plugin as [`Tool`]s and an `init` ([`Plugin`]), with its state type erased;
//! - `ffi.rs`: the C functions and the ABI table the plugin exports, with panics caught;
//! - `export.rs`: [`export_plugin!`](crate::export_plugin), which writes the entry symbol.

mod base64;
mod context;
mod export;
mod ffi;
mod output;
mod plugin;

pub use base64::encode_base64;
pub use context::CallContext;
pub use ffi::{PluginProvider, vtable};
pub use output::{ToolError, ToolOutput};
pub use plugin::{ErasedPlugin, NoArgs, Plugin, Tool};
