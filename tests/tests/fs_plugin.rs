//! The fs plugin through `toolgate call`: its own `deny` globs meet every spelling of a path, and
//! `fs.read_file` refuses what is not a regular file without blocking.

use std::path::Path;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate};

/// Writes a policy loading the fs plugin with `config` in `dir` and calls `fs.read_file` on
/// `path` with `--json`, failing the test if the program has not ended within 20 s.
fn read_file(dir: &Path, config: &str, path: &str) -> Run {
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!("version: 1\nplugins:\n  - name: fs\n    config: {config}\n"),
    )
    .expect("write policy");
    let arguments = toolgate_e2e::serde_json::json!({ "path": path }).to_string();
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--json",
        "fs.read_file",
        &arguments,
    ])
    .current_dir(dir)
    .run_within(Duration::from_secs(20))
}

/// The call failed as a tool error whose message is `expected`.
#[track_caller]
fn assert_tool_error(run: &Run, expected: &str) {
    run.assert_code(1);
    let outcome = run.json();
    assert_eq!(outcome["error_kind"], "tool_error", "{run:#?}");
    let content = outcome["content"].as_str().expect("text content");
    assert!(
        content.contains(expected),
        "expected {expected:?} in {content:?}"
    );
}

#[test]
fn every_spelling_of_a_denied_path_is_denied_by_the_fs_plugins_deny_globs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::create_dir_all(root.join("secrets")).expect("mkdir");
    std::fs::write(root.join("key.pem"), "PRIVATE KEY\n").expect("write");
    std::fs::write(root.join(".env"), "TOKEN=1\n").expect("write");
    std::fs::write(root.join("sub/.env"), "TOKEN=2\n").expect("write");
    std::fs::write(root.join("secrets/x"), "the secret\n").expect("write");
    let config = r#"{root: root, deny: ["*.pem", ".env", "secrets"]}"#;
    for (path, glob) in [
        ("key.pem/", "*.pem"),
        ("./key.pem/.", "*.pem"),
        (".env", ".env"),
        ("sub/.env/", ".env"),
        ("docs/../secrets/x", "secrets"),
        ("./secrets/x", "secrets"),
    ] {
        let run = read_file(dir.path(), config, path);
        assert_tool_error(
            &run,
            &format!("matches the fs plugin's deny pattern {glob:?}"),
        );
        assert!(!run.stdout.contains("KEY") && !run.stdout.contains("TOKEN"));
        assert!(!run.stdout.contains("the secret"), "{path}: {}", run.stdout);
    }
}

#[test]
fn a_trailing_slash_on_a_file_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "hello\n").expect("write");
    let run = read_file(dir.path(), "{root: .}", "notes.txt/");
    assert_tool_error(
        &run,
        "notes.txt/ ends with a slash (or `/.`), which names a directory, but notes.txt is not \
         a directory",
    );
}

#[cfg(unix)]
#[test]
fn reading_a_fifo_is_refused_at_once_instead_of_blocking() {
    let dir = tempfile::tempdir().expect("temp dir");
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let run = read_file(dir.path(), "{root: .}", "pipe");
    assert_tool_error(
        &run,
        "pipe is a FIFO (named pipe); fs.read_file reads only regular files",
    );
}

#[cfg(unix)]
#[test]
fn reading_dev_zero_is_refused_as_a_device() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = read_file(dir.path(), "{root: /dev}", "zero");
    assert_tool_error(
        &run,
        "zero is a character device; fs.read_file reads only regular files",
    );
}
