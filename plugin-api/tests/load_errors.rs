//! What `LoadedPlugin::load` says when a library cannot be used as a plugin.

mod common;

use std::path::Path;

use common::{elf, library};
use serde_json::json;
use toolgate_plugin_api::{LoadError, abi::ABI_VERSION};

fn load_error(path: &Path, config: serde_json::Value) -> LoadError {
    match common::load(path, &config) {
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
fn a_text_file_is_not_a_shared_library() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libtext.so");
    std::fs::write(&path, "just some text\n").expect("write");
    let err = load_error(&path, json!(null));
    assert!(
        matches!(&err, LoadError::NotALibrary { path: p, .. } if p == &path),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "{} is not a shared library: it is not an",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn a_directory_is_refused_as_a_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libdir.so");
    std::fs::create_dir(&path).expect("mkdir");
    let err = load_error(&path, json!(null));
    assert_eq!(
        err.to_string(),
        format!(
            "{} is a directory, not a shared library file",
            path.display()
        )
    );
}

#[cfg(unix)]
#[test]
fn dev_zero_is_refused_as_a_device_without_being_read() {
    let err = load_error(Path::new("/dev/zero"), json!(null));
    assert_eq!(
        err.to_string(),
        "/dev/zero is a character device, not a shared library file"
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_opening_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libfifo.so");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    // Opening a FIFO for reading blocks until a writer comes; a regression would hang here, so
    // the load runs on its own thread and the test waits a bounded time.
    let (tx, rx) = std::sync::mpsc::channel();
    let thread_path = path.clone();
    std::thread::spawn(move || {
        let _ = tx.send(
            common::load(&thread_path, &json!(null))
                .map(|_| ())
                .map_err(|e| e.to_string()),
        );
    });
    let result = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("loading a FIFO returns at once instead of blocking");
    assert_eq!(
        result,
        Err(format!(
            "{} is a FIFO (named pipe), not a shared library file",
            path.display()
        ))
    );
}

#[test]
fn a_library_truncated_to_its_first_4_kib_is_refused_before_the_loader_maps_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libtruncated.so");
    let whole = std::fs::read(library("toolgate_plugin_fs")).expect("read the fs plugin");
    std::fs::write(&path, &whole[..4096]).expect("write");
    let err = load_error(&path, json!(null));
    assert!(matches!(err, LoadError::NotALibrary { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!(
            "{} is damaged or truncated (4096 bytes)",
            path.display()
        )),
        "{err}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_library_cut_inside_a_segment_is_refused_naming_the_bytes_it_lacks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libcut.so");
    let (cut, segment_end) = elf::cut_inside_largest_segment(&library("toolgate_plugin_fs"));
    std::fs::write(&path, &cut).expect("write");
    let err = load_error(&path, json!(null));
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "{} is truncated or damaged: a segment",
            path.display()
        )),
        "{message}"
    );
    assert!(
        message.ends_with(&format!(
            "..{segment_end} of the file, which has only {} bytes",
            cut.len()
        )),
        "{message}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_library_with_a_missing_dependency_passes_on_the_loaders_message() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libneeds.so");
    let patched = elf::with_missing_dependency(&library("toolgate_plugin_fs"));
    std::fs::write(&path, patched).expect("write");
    let err = load_error(&path, json!(null));
    assert!(matches!(err, LoadError::Open { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot open plugin library {}: {}: cannot open shared object file: No such file or \
             directory",
            path.display(),
            elf::MISSING_DEPENDENCY
        )
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_library_for_another_architecture_is_refused_naming_both() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libforeign.so");
    let (patched, foreign) = elf::for_another_machine(&library("toolgate_plugin_fs"));
    std::fs::write(&path, patched).expect("write");
    let err = load_error(&path, json!(null));
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "{} is built for another architecture ({foreign}); this program runs on ",
            path.display()
        )),
        "{message}"
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
        let plugin = common::load(&path, &json!(null)).expect("loads");
        assert_eq!(plugin.name(), "testkit");
        drop(plugin);
    }
}
