//! What `LoadedPlugin::load` says when a library cannot be used as a plugin.

mod common;

use std::path::Path;

use common::library;
use serde_json::json;
use toolgate_plugin_api::{LoadError, LoadedPlugin, abi::ABI_VERSION};

fn load_error(path: &Path, config: serde_json::Value) -> LoadError {
    match LoadedPlugin::load(path, &config) {
        Ok(plugin) => panic!("{} loaded as plugin {}", path.display(), plugin.name()),
        Err(err) => err,
    }
}

#[test]
fn a_missing_file_is_not_found_naming_the_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libnothing.so");
    let err = load_error(&path, json!(null));
    assert!(matches!(&err, LoadError::NotFound { path: p } if p == &path));
    assert_eq!(
        err.to_string(),
        format!("plugin library {} does not exist", path.display())
    );
}

#[test]
fn a_file_that_is_not_a_shared_library_cannot_be_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libtext.so");
    std::fs::write(&path, "just some text\n").expect("write");
    let err = load_error(&path, json!(null));
    assert!(
        matches!(&err, LoadError::Open { path: p, .. } if p == &path),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("cannot open plugin library {}: ", path.display())),
        "{err}"
    );
}

#[test]
fn a_library_without_the_entry_symbol_is_not_a_toolgate_plugin() {
    let path = library("toolgate_test_not_a_plugin");
    let err = load_error(&path, json!(null));
    assert!(matches!(
        err,
        LoadError::NotAPlugin {
            symbol: "toolgate_plugin_entry",
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        format!(
            "{} is not a toolgate plugin: it does not export toolgate_plugin_entry",
            path.display()
        )
    );
}

#[test]
fn a_plugin_built_for_another_abi_version_is_refused_naming_both_versions() {
    let path = library("toolgate_test_broken_abi");
    let err = load_error(&path, json!(null));
    assert!(matches!(
        err,
        LoadError::AbiMismatch {
            expected: ABI_VERSION,
            found: 999,
            ..
        }
    ));
    assert!(
        err.to_string().starts_with(&format!(
            "{} was built for toolgate plugin ABI 999, this toolgate speaks ABI 1",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn a_plugin_whose_init_fails_reports_the_plugins_message() {
    let path = library("toolgate_plugin_fs");
    let err = load_error(&path, json!(null));
    let LoadError::InitFailed {
        plugin, message, ..
    } = &err
    else {
        panic!("expected an init failure, got {err:?}");
    };
    assert_eq!(plugin, "fs");
    assert_eq!(
        message,
        "the fs plugin needs a `root` directory in its config, e.g. {\"root\": \"/srv/docs\"}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("plugin fs ({}) failed to start: ", path.display()))
    );
}

#[test]
fn a_config_of_the_wrong_shape_is_an_init_failure_saying_what_is_wrong() {
    let err = load_error(&library("toolgate_plugin_fs"), json!({"root": 5}));
    let LoadError::InitFailed { message, .. } = &err else {
        panic!("expected an init failure, got {err:?}");
    };
    assert!(
        message.starts_with("invalid configuration: invalid type: integer `5`"),
        "{message}"
    );
}

#[test]
fn a_config_with_an_unknown_key_is_an_init_failure_naming_the_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = load_error(
        &library("toolgate_plugin_fs"),
        json!({"root": dir.path(), "rot": 1}),
    );
    assert!(err.to_string().contains("unknown field `rot`"), "{err}");
}

#[test]
fn a_root_that_does_not_exist_is_an_init_failure() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing");
    let err = load_error(&library("toolgate_plugin_fs"), json!({"root": missing}));
    assert!(
        err.to_string().ends_with(&format!(
            "root directory {} does not exist",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn a_plugin_can_be_dropped_and_loaded_again() {
    let path = library("toolgate_plugin_testkit");
    for _ in 0..3 {
        let plugin = LoadedPlugin::load(&path, &json!(null)).expect("loads");
        assert_eq!(plugin.name(), "testkit");
        drop(plugin);
    }
}
