//! Plugins for toolgate: the C ABI between the engine and a tool library, the Rust SDK to write
//! such a library, and (with the `host` feature) the loader that the engine uses.
//!
//! A toolgate plugin is a shared library (`.so`, `.dylib`, `.dll`) that gives an LLM agent a
//! set of tools. The policy file names the library and its configuration; the engine loads it
//! once, checks it, and calls its tools under the same guard as every other tool (timeouts,
//! limits, hooks).
//!
//! The boundary is a small, versioned, plain C ABI that carries JSON ([`abi`]), so a plugin
//! built by one Rust compiler loads in a host built by another, and a plugin can even be
//! written in C (toolgate's `plugins/c-abi` has the header and one). You rarely touch it: the
//! SDK writes it for you.
//!
//! # The plugin author's guide
//!
//! Six steps: start a crate, write a tool function, build, hash, grant, load; and test. The
//! example is a plugin called `greeter`, in a crate called `toolgate-plugin-greeter`.
//!
//! ## 1. Start a crate
//!
//! Copy toolgate's `plugins/template` (a working plugin with one tool and its tests), with
//! [cargo-generate](https://github.com/cargo-generate/cargo-generate):
//!
//! ```text
//! cargo generate --git <toolgate repository> plugins/template --name toolgate-plugin-greeter
//! ```
//!
//! or by hand: a library crate whose `Cargo.toml` says
//!
//! ```toml
//! [package]
//! name = "toolgate-plugin-greeter"
//! version = "0.1.0"
//! edition = "2024"
//!
//! [lib]
//! crate-type = ["cdylib", "rlib"]   # cdylib: what toolgate loads; rlib: unit tests call the tools
//!
//! [dependencies]
//! toolgate-plugin-api = "0.1"
//! serde = { version = "1", features = ["derive"] }
//!
//! [dev-dependencies]
//! toolgate-plugin-api = { version = "0.1", features = ["host"] }   # LoadedPlugin, for step 7
//! ```
//!
//! Name the package `toolgate-plugin-<name>`: the library is then `toolgate_plugin_<name>`,
//! the name a policy's `name: <name>` looks for.
//!
//! ## 2. Write a tool function
//!
//! One ordinary function per tool. A tool takes a [`CallContext`] and its arguments,
//! deserialized by serde from the model's JSON, and returns a [`ToolOutput`] or a
//! [`ToolError`]. An optional `init` turns the policy's `config:` into the state every call
//! reads. Then list the tools in [`export_plugin!`]:
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
//! Tool names are 1 to 128 bytes of `[A-Za-z0-9_.-]`; prefix them with the plugin's name
//! (`greeter.greet`, like `fs.read_file`) when the plugin may sit beside others. A policy with
//! `name_profile: openai` shows the model `greeter_greet`.
//!
//! ## 3. Build
//!
//! ```text
//! cargo build --release
//! ```
//!
//! The library is `target/release/libtoolgate_plugin_greeter.so` on Linux: the package name with
//! `-` turned into `_`, spelt the platform's way by [`library_file_name`]
//! (`libtoolgate_plugin_greeter.dylib` on macOS, `toolgate_plugin_greeter.dll` on Windows).
//! Keep the default `panic = "unwind"` (see the rules below).
//!
//! ## 4. Hash
//!
//! ```text
//! toolgate plugin hash target/release/libtoolgate_plugin_greeter.so
//! ```
//!
//! prints the `sha256:` line to paste into the plugin's entry in the policy. With it, the engine
//! refuses a library whose contents differ (a rebuilt or replaced file) and names both hashes;
//! hash again after every build you mean to deploy.
//!
//! ## 5. Grant
//!
//! A plugin runs with the rights of the program that loads it, so the policy says what it may
//! touch. The plugin declares what it needs in its manifest (`capabilities:` in
//! [`export_plugin!`], a [`Capabilities`]); fixed roots or hosts by name, or [`ANY_GRANTED`]
//! (`"*"`) for "whatever the operator grants of this kind" (an HTTP client: `net: ["*"]`). A
//! policy whose `grants:` do not cover that refuses the plugin before its `init` runs. The
//! grants reach the plugin as the key `grants` of its configuration, in this shape (every key
//! optional):
//!
//! ```json
//! {"fs_read": ["/srv/data"], "fs_write": [], "env": ["HOME"],
//!  "net": ["api.example.com", "127.0.0.1:8080"], "subprocess": false}
//! ```
//!
//! A configuration without `grants` grants nothing, and a plugin must then refuse whatever
//! needs a grant. Read it in your `Config` (`#[serde(default)] grants: Grants`) and check every
//! request against it before acting, as toolgate's `http` plugin (`net`, host and port) and
//! `sqlite` plugin (`fs_read`, on the canonical path) do. These checks are the plugin's own:
//! in process, nothing stops a plugin that ignores its grants.
//!
//! ## 6. Load
//!
//! Name the library in a policy, by path (relative to the policy file) or, once it is installed
//! in a folder of `TOOLGATE_PLUGIN_PATH` or beside the `toolgate` program, by name:
//!
//! ```yaml
//! version: 1
//! plugins:
//!   - path: target/release/libtoolgate_plugin_greeter.so   # or: name: greeter
//!     sha256: "<the line printed in step 4>"
//!     grants: {}          # this plugin needs nothing
//!     config:
//!       greeting: "Hello"
//! ```
//!
//! Then `toolgate validate policy.yaml` loads it and lists its tools (or says why it does not
//! load), and `toolgate call --policy policy.yaml greet '{"name": "Ada"}'` runs one call
//! through the whole guard.
//!
//! ## 7. Test
//!
//! Unit-test each tool function as plain Rust with [`CallContext::detached`] (the `rlib`
//! crate type makes that possible), and test the built library as toolgate loads it, through
//! the ABI, with `LoadedPlugin` (feature `host`, a dev-dependency). `cargo test` builds the
//! library before the tests; it sits one folder above the test executable:
//!
//! ```ignore
//! // tests/plugin.rs (the template has this test)
//! use toolgate_plugin_api::{library_file_name, CancelFlag, LoadedPlugin, Part, PluginOutcome};
//!
//! #[test]
//! fn greet_through_the_abi_greets() {
//!     let exe = std::env::current_exe().unwrap();
//!     let lib = exe.parent().unwrap().parent().unwrap()
//!         .join(library_file_name("toolgate_plugin_greeter"));
//!     // SAFETY: our own library, built with the SDK.
//!     let plugin = unsafe { LoadedPlugin::load(&lib, &serde_json::json!({"greeting": "Hi"})) }
//!         .unwrap();
//!     let outcome = plugin.call("greet", r#"{"name": "Ada"}"#, &CancelFlag::new(), &mut |_| {});
//!     assert_eq!(outcome, PluginOutcome::Ok(vec![Part::Text("Hi, Ada!".into())]));
//! }
//! ```
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

pub mod builtin;
mod filekind;
mod manifest;
#[cfg(feature = "sdk")]
mod panic;
mod part;

pub use builtin::Builtin;
pub use filekind::non_regular_kind;
pub use manifest::{ANY_GRANTED, Capabilities, Manifest, ToolManifest};
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
pub mod bounds;
#[cfg(feature = "host")]
mod config_paths;
#[cfg(feature = "host")]
mod decode;
#[cfg(feature = "host")]
mod host;
#[cfg(feature = "host")]
mod libfile;
#[cfg(feature = "host")]
mod load_error;
#[cfg(feature = "host")]
pub mod worker;

#[cfg(feature = "host")]
pub use config_paths::{ConfigPathError, resolve_config_paths};
#[cfg(feature = "host")]
pub use host::{CancelFlag, LoadedPlugin, OpenedPlugin, PluginOutcome, PluginToolSpec};
#[cfg(feature = "host")]
pub use load_error::{LibraryProblem, LoadError, ManifestProblem, OpenError, TableProblem};

/// The SDK's internals that [`export_plugin!`] expands to. Not a public API.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub mod __private {
    pub use crate::builtin::builtin;
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
