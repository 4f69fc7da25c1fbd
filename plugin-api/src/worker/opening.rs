//! What the worker loads for `hello`: the library it names, or the plugin built into this
//! program ([`crate::builtin`]), and the configuration with its paths resolved.

use std::path::Path;

use crate::host::{LoadedPlugin, OpenedPlugin};

/// Opens the built-in called `builtin`, else the library at `library`; the error is the message
/// for the host.
///
/// # Safety
///
/// As [`LoadedPlugin::open`], for the library (a built-in needs no promise).
pub(super) unsafe fn open(library: &Path, builtin: Option<&str>) -> Result<OpenedPlugin, String> {
    let opened = match builtin {
        Some(name) => match crate::builtin::find(name) {
            Some(builtin) => LoadedPlugin::open_builtin(builtin),
            None => return Err(format!("this program has no built-in plugin {name:?}")),
        },
        // SAFETY: the caller's promise.
        None => unsafe { LoadedPlugin::open(library) },
    };
    opened.map_err(|err| chain(&err))
}

/// `config` with the relative paths at the manifest's `config_paths` resolved against
/// `base_dir` (the policy's folder), when the host sent one.
pub(super) fn configure(
    opened: &OpenedPlugin,
    mut config: serde_json::Value,
    base_dir: Option<&Path>,
) -> Result<serde_json::Value, String> {
    if let Some(base) = base_dir {
        crate::config_paths::resolve_config_paths(
            &opened.manifest().config_paths,
            &mut config,
            base,
        )
        .map_err(|err| format!("plugin {}: {err}", opened.manifest().name))?;
    }
    Ok(config)
}

/// An error and its causes, joined by `: ` (each error keeps its cause in `source()` and out
/// of its own message).
pub(super) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
