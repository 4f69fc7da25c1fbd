//! The built plugin library, loaded through the C ABI as toolgate loads it. `cargo test` builds
//! the library first (it is this package's own `cdylib`).

use std::path::{Path, PathBuf};

use serde_json::json;

// The plugin's name, from the crate's own source: this test does not depend on the crate's name.
#[path = "../src/name.rs"]
mod name;
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, Part, PluginOutcome, library_file_name};

/// The library cargo built for this package (`libtoolgate_plugin_template.so` on Linux for the
/// package `toolgate-plugin-template`), in the profile folder above the test executable
/// (`target/debug/deps/..`).
fn library() -> PathBuf {
    let file = library_file_name(&env!("CARGO_PKG_NAME").replace('-', "_"));
    let exe = std::env::current_exe().expect("the test executable has a path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    [profile.join(&file), profile.join("deps").join(&file)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{file} is not built in {}", profile.display()))
}

fn load(config: serde_json::Value) -> LoadedPlugin {
    // SAFETY: this package's own library, built with the SDK.
    unsafe { LoadedPlugin::load(&library(), &config) }.unwrap_or_else(|e| panic!("loads: {e}"))
}

#[test]
fn the_library_offers_the_word_count_tool() {
    let plugin = load(json!(null));
    assert_eq!(plugin.name(), name::PLUGIN_NAME);
    let names: Vec<&str> = plugin.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, [format!("{}.word_count", plugin.name())]);
}

#[test]
fn word_count_through_the_abi_returns_the_count() {
    let plugin = load(json!({"max_chars": 100}));
    let tool = format!("{}.word_count", plugin.name());
    let outcome = plugin.call(
        &tool,
        r#"{"text": "a b c d"}"#,
        &CancelFlag::new(),
        &mut |_| {},
    );
    assert_eq!(
        outcome,
        PluginOutcome::Ok(vec![Part::Text("4 words".into())])
    );
}

#[test]
fn arguments_of_the_wrong_shape_are_invalid_arguments() {
    let plugin = load(json!(null));
    let tool = format!("{}.word_count", plugin.name());
    let outcome = plugin.call(&tool, "{}", &CancelFlag::new(), &mut |_| {});
    assert!(
        matches!(&outcome, PluginOutcome::InvalidArguments(m) if m.contains("missing field `text`")),
        "{outcome:?}"
    );
}

#[test]
fn a_misspelt_config_key_stops_the_plugin_at_load() {
    // SAFETY: this package's own library, built with the SDK.
    let err =
        unsafe { LoadedPlugin::load(&library(), &json!({"max_char": 5})) }.expect_err("refused");
    assert!(
        err.to_string().contains("unknown field `max_char`"),
        "{err}"
    );
}
