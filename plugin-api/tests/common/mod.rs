//! Finding the plugin libraries the workspace builds, and loading them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use toolgate_plugin_api::{CancelFlag, LoadedPlugin, PluginOutcome, library_file_name};

/// The directory cargo puts this profile's libraries in: the test executable lives in
/// `target/<profile>/deps/`, the libraries one level up.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/")
        .to_path_buf()
}

/// The path of a library built by this workspace, such as `toolgate_plugin_testkit`. Fails the
/// test with instructions when it has not been built.
pub fn library(lib_name: &str) -> PathBuf {
    let file = library_file_name(lib_name);
    let dir = profile_dir();
    for candidate in [dir.join(&file), dir.join("deps").join(&file)] {
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "the plugin library {file} is not in {dir}: these tests load the libraries the \
         workspace builds, so run `cargo build --workspace` first (same profile and target \
         directory as the tests)",
        dir = dir.display()
    );
}

/// The testkit plugin, loaded once for the whole test binary.
pub fn testkit() -> &'static LoadedPlugin {
    static TESTKIT: OnceLock<LoadedPlugin> = OnceLock::new();
    TESTKIT.get_or_init(|| {
        LoadedPlugin::load(
            &library("toolgate_plugin_testkit"),
            &serde_json::Value::Null,
        )
        .unwrap_or_else(|err| panic!("testkit loads: {err}"))
    })
}

/// Calls a testkit tool with a fresh flag and no progress listener.
pub fn call(tool: &str, arguments: &str) -> PluginOutcome {
    testkit().call(tool, arguments, &CancelFlag::new(), &mut |_| {})
}

/// Calls a tool of `plugin` with a fresh flag and no progress listener.
pub fn call_on(plugin: &LoadedPlugin, tool: &str, arguments: serde_json::Value) -> PluginOutcome {
    plugin.call(
        tool,
        &arguments.to_string(),
        &CancelFlag::new(),
        &mut |_| {},
    )
}

/// The text of an outcome that must be a single text part.
pub fn text(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Ok(parts) => match parts.as_slice() {
            [toolgate_plugin_api::Part::Text(text)] => text.clone(),
            other => panic!("expected one text part, got {other:?}"),
        },
        other => panic!("expected success, got {other:?}"),
    }
}

/// The message of an outcome that must be an error.
pub fn error(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Error(message) => message,
        other => panic!("expected an error, got {other:?}"),
    }
}
