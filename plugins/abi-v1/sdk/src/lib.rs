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
//!   agent) and reports it as a panic with its message;
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
//! `LoadedPlugin::call`, which returns a `PluginOutcome`. See the `host` module.

#![deny(missing_docs)]

pub mod abi;

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
pub mod host;

#[cfg(feature = "host")]
pub use host::{CancelFlag, LoadError, LoadedPlugin, PluginOutcome, PluginToolSpec};

/// The SDK's internals that [`export_plugin!`] expands to. Not a public API.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub mod __private {
    pub use crate::sdk::{ErasedPlugin, PluginProvider, vtable};
}

use serde::{Deserialize, Serialize};

/// One part of a tool's result.
///
/// On the wire (inside the ABI) a list of parts is a JSON array of
/// `{"type": "text", "text": "..."}` and
/// `{"type": "image", "mime_type": "image/png", "data": "<base64>"}` objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text for the model.
    Text(String),
    /// An image: its MIME type (such as `image/png`) and its bytes in standard base64 with
    /// padding.
    Image {
        /// The MIME type, such as `image/png`.
        mime_type: String,
        /// The image bytes, base64-encoded (standard alphabet, padded).
        data_base64: String,
    },
}

/// The wire form of a [`Part`], borrowed for writing.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePartRef<'a> {
    Text { text: &'a str },
    Image { mime_type: &'a str, data: &'a str },
}

/// The wire form of a [`Part`], owned for reading.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart {
    Text { text: String },
    Image { mime_type: String, data: String },
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Text(text) => WirePartRef::Text { text }.serialize(serializer),
            Part::Image {
                mime_type,
                data_base64,
            } => WirePartRef::Image {
                mime_type,
                data: data_base64,
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Part, D::Error> {
        Ok(match WirePart::deserialize(deserializer)? {
            WirePart::Text { text } => Part::Text(text),
            WirePart::Image { mime_type, data } => Part::Image {
                mime_type,
                data_base64: data,
            },
        })
    }
}

/// What a plugin says about itself: the JSON that [`abi::PluginVTable::manifest`] returns.
///
/// ```json
/// {"name": "fs", "version": "0.1.0",
///  "tools": [{"name": "fs.stat", "description": "...", "parameters": {"type": "object"}}]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's name, such as `fs`.
    pub name: String,
    /// The plugin's own version, such as `0.1.0`.
    pub version: String,
    /// The tools it offers.
    pub tools: Vec<ToolManifest>,
}

/// One tool in a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object"})
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

/// The message of a caught panic: its `&str` or `String` payload, or a note that it had none.
#[cfg(any(feature = "sdk", feature = "host"))]
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a payload that is not a string".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_part_has_the_documented_wire_shape() {
        let json = serde_json::to_value(Part::Text("hi".into())).unwrap();
        assert_eq!(json, serde_json::json!({"type": "text", "text": "hi"}));
    }

    #[test]
    fn image_part_has_the_documented_wire_shape() {
        let part = Part::Image {
            mime_type: "image/png".into(),
            data_base64: "AAAA".into(),
        };
        let json = serde_json::to_value(&part).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "image", "mime_type": "image/png", "data": "AAAA"})
        );
        assert_eq!(serde_json::from_value::<Part>(json).unwrap(), part);
    }

    #[test]
    fn tool_manifest_without_parameters_gets_an_empty_object_schema() {
        let tool: ToolManifest = serde_json::from_str(r#"{"name": "t"}"#).unwrap();
        assert_eq!(tool.parameters, serde_json::json!({"type": "object"}));
        assert_eq!(tool.description, "");
    }

    #[cfg(any(feature = "sdk", feature = "host"))]
    #[test]
    fn panic_message_reads_str_and_string_payloads() {
        let a: Box<dyn std::any::Any + Send> = Box::new("static");
        let b: Box<dyn std::any::Any + Send> = Box::new(String::from("owned"));
        let c: Box<dyn std::any::Any + Send> = Box::new(42_u8);
        assert_eq!(panic_message(&*a), "static");
        assert_eq!(panic_message(&*b), "owned");
        assert_eq!(
            panic_message(&*c),
            "panic with a payload that is not a string"
        );
    }
}
