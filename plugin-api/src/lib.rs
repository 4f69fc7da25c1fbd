//! Plugins for toolgate: the C ABI between the engine and a tool library, the Rust SDK to write
//! such a library, and (with the `host` feature) the loader that the engine uses.
//!
//! A toolgate plugin is a shared library (`.so`, `.dylib`, `.dll`) that gives an LLM agent a
//! set of tools. The policy file names the library and its configuration; the engine loads it
//! once, checks it, and calls its tools under the same guard as every other tool (timeouts,
//! limits, hooks).
//!
//! The boundary is a small, versioned, plain C ABI that carries JSON ([`abi`]), so a plugin
//! built by one Rust compiler loads in a host built by another. You rarely touch it: the SDK
//! writes it for you.
//!
//! # Writing a plugin
//!
//! Make a library crate with `crate-type = ["cdylib"]` (add `"rlib"` too if you want to unit
//! test it as Rust), depend on this crate and on `serde`, and write one ordinary function per
//! tool. A tool takes a [`CallContext`] and its arguments, deserialized by serde from the
//! model's JSON, and returns a [`ToolOutput`] or a [`ToolError`]. Then list the tools in
//! [`export_plugin!`]:
//!
//! ```
//! use std::path::PathBuf;
//!
//! use serde::Deserialize;
//! use toolgate_plugin_api::{json, CallContext, Tool, ToolError, ToolOutput};
//!
//! /// The configuration the policy gives the plugin: `config: {greeting: "Hi"}`.
//! #[derive(Deserialize)]
//! struct Config {
//!     greeting: String,
//! }
//!
//! /// What `init` builds once and every call can read through `ctx.state()`.
//! struct State {
//!     greeting: String,
//! }
//!
//! fn init(config: Config) -> Result<State, String> {
//!     if config.greeting.trim().is_empty() {
//!         return Err("`greeting` must not be blank".to_string());
//!     }
//!     Ok(State { greeting: config.greeting })
//! }
//!
//! #[derive(Deserialize)]
//! struct GreetArgs {
//!     name: String,
//! }
//!
//! /// Greets someone. Bad arguments (say `{"nom": "Ada"}`) never reach this function: the
//! /// model gets "invalid arguments for tool `greet`: missing field `name` ...".
//! fn greet(ctx: &CallContext<State>, args: GreetArgs) -> Result<ToolOutput, ToolError> {
//!     ctx.progress("looking up the greeting");
//!     ctx.check_cancelled()?;
//!     Ok(ToolOutput::text(format!("{}, {}!", ctx.state().greeting, args.name)))
//! }
//!
//! toolgate_plugin_api::export_plugin! {
//!     name: "greeter",
//!     version: env!("CARGO_PKG_VERSION"),
//!     init: init,
//!     tools: [
//!         Tool::new("greet", greet)
//!             .description("Greet a person by name.")
//!             .parameters(json!({
//!                 "type": "object",
//!                 "properties": {"name": {"type": "string", "description": "Who to greet."}},
//!                 "required": ["name"],
//!                 "additionalProperties": false
//!             })),
//!     ],
//! }
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --release`, and point the policy at
//! `target/release/libgreeter.so` (see [`library_file_name`] for each platform's spelling).
//!
//! What the SDK does for you:
//! - exports `toolgate_plugin_entry` and the ABI table, with the version check built in;
//! - deserializes the configuration for `init` and the arguments for each tool, turning a
//!   mismatch into a clear message that names the plugin or the tool;
//! - catches every panic inside the plugin (a panic crossing the C boundary would abort the
//!   agent) and reports it as a panic with its message, without also printing it to stderr
//!   (set `TOOLGATE_PLUGIN_PANIC_OUTPUT=1` to print it as usual);
//! - answers an unknown tool name with the list of the tools that exist.
//!
//! ## Rules for plugin authors
//!
//! - **Tools must be thread-safe.** The host calls tools from many threads at once on the same
//!   instance, so the state `init` returns must be `Send + Sync` (the SDK enforces it).
//! - **Poll for cancellation in long work.** When a call's deadline passes the host sets the
//!   flag behind [`CallContext::is_cancelled`] and stops waiting; a tool that ignores it keeps a
//!   thread busy until it finishes on its own.
//! - **Do not build with `panic = "abort"`**, or panics cannot be caught and take the agent down.
//! - The library is never unloaded: statics live for the life of the process.
//!
//! # Loading a plugin (feature `host`)
//!
//! The engine loads libraries with `LoadedPlugin::load` and calls tools with
//! `LoadedPlugin::call`, which returns a `PluginOutcome`. Loading runs the library's own code, so
//! `LoadedPlugin::load` is an `unsafe fn`: see its `# Safety` section.

#![deny(missing_docs)]

pub mod abi;

mod filekind;
mod manifest;
#[cfg(feature = "sdk")]
mod panic;
mod part;

pub use filekind::non_regular_kind;
pub use manifest::{Capabilities, Manifest, ToolManifest};
pub use part::Part;

#[cfg(feature = "sdk")]
mod sdk;

#[cfg(feature = "sdk")]
pub use sdk::{CallContext, NoArgs, Plugin, Tool, ToolError, ToolOutput, encode_base64};

/// The `serde_json` this crate uses, so a plugin can name `serde_json::Value` without a
/// dependency of its own.
#[cfg(feature = "sdk")]
pub use serde_json;

/// Builds a JSON Schema (or any JSON value) from a JSON literal; `serde_json::json!`.
#[cfg(feature = "sdk")]
pub use serde_json::json;

#[cfg(feature = "host")]
mod host;
#[cfg(feature = "host")]
mod libfile;
#[cfg(feature = "host")]
mod load_error;
#[cfg(feature = "host")]
pub mod worker;

#[cfg(feature = "host")]
pub use host::{CancelFlag, LoadedPlugin, PluginOutcome, PluginToolSpec};
#[cfg(feature = "host")]
pub use load_error::{LibraryProblem, LoadError, ManifestProblem, OpenError, TableProblem};

/// The SDK's internals that [`export_plugin!`] expands to. Not a public API.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub mod __private {
    pub use crate::sdk::{ErasedPlugin, PluginProvider, vtable};
}

/// The file name a library called `lib_name` gets on this platform: `DLL_PREFIX`, the name,
/// `DLL_SUFFIX`.
///
/// ```
/// let file = toolgate_plugin_api::library_file_name("toolgate_plugin_testkit");
/// # #[cfg(target_os = "linux")]
/// assert_eq!(file, "libtoolgate_plugin_testkit.so");
/// ```
pub fn library_file_name(lib_name: &str) -> String {
    format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        lib_name,
        std::env::consts::DLL_SUFFIX
    )
}
