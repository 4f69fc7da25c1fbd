//! Plugins linked into the host program instead of loaded from a library file: toolgate's
//! built-in `fs`, `http` and `sqlite`.
//!
//! Every plugin built with [`export_plugin!`](crate::export_plugin) also defines a hidden
//! `pub static TOOLGATE_BUILTIN: Builtin`: the same ABI table its library's
//! `toolgate_plugin_entry` returns. A host program that depends on the plugin crate (as an
//! `rlib`) lists those statics with [`install`] once, first thing in `main`; a policy's
//! `name: fs` then finds the built-in when no library file of that name is installed. The host
//! opens a built-in through the same checks as a library (ABI version, table size, manifest),
//! and calls it through the same table: only how the table was found differs.
//!
//! Linking several plugin crates into one program puts several definitions of the
//! `toolgate_plugin_entry` symbol in it (one per crate, unused there). The `toolgate` program
//! links with `--allow-multiple-definition` for that reason (`cli/build.rs`); a program of your
//! own that links more than one plugin crate does the same.

use std::sync::OnceLock;

use crate::abi::PluginVTable;

/// A plugin linked into this program: its name and its ABI table.
///
/// Made only by [`export_plugin!`](crate::export_plugin), whose table keeps the ABI's contract
/// by construction: that is why opening one is safe where loading a library is not.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    name: &'static str,
    table: &'static PluginVTable,
}

impl Builtin {
    /// The plugin's name, as `name:` in a policy writes it (`fs`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its ABI table.
    #[cfg_attr(not(feature = "host"), allow(dead_code))]
    pub(crate) fn table(&self) -> &'static PluginVTable {
        self.table
    }
}

/// What [`export_plugin!`](crate::export_plugin) expands to: a built-in from the SDK's table.
#[doc(hidden)]
pub const fn builtin(name: &'static str, table: &'static PluginVTable) -> Builtin {
    Builtin { name, table }
}

static INSTALLED: OnceLock<&'static [&'static Builtin]> = OnceLock::new();

/// The built-ins were installed already: [`install`] runs once a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the built-in plugins of this program were installed already")]
pub struct AlreadyInstalled;

/// Makes `plugins` the built-in plugins of this process, for every engine it builds and for
/// its plugin workers (`isolation: process`). Call it once, first thing in `main`.
///
/// # Errors
///
/// [`AlreadyInstalled`] on a second call; the first list stays.
pub fn install(plugins: &'static [&'static Builtin]) -> Result<(), AlreadyInstalled> {
    INSTALLED.set(plugins).map_err(|_| AlreadyInstalled)
}

/// The built-in plugins of this process (empty until [`install`]).
pub fn installed() -> &'static [&'static Builtin] {
    INSTALLED.get().copied().unwrap_or_default()
}

/// The built-in plugin called `name`, if this process has one.
pub fn find(name: &str) -> Option<&'static Builtin> {
    installed().iter().copied().find(|b| b.name == name)
}
