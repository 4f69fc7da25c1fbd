//! The fs plugin through `toolgate call`: its own `deny` globs meet every spelling of a path (a
//! hard link included), `fs.read_file` refuses what is not a regular file without blocking, and
//! `fs.find` says where it stopped.

use std::path::Path;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate};

/// How deep `fs.find` descends (`toolgate_plugin_fs::MAX_FIND_DEPTH`; this crate does not link
/// the plugin).
const MAX_FIND_DEPTH: usize = 64;

/// Writes a policy loading the fs plugin with `config` in `dir` and calls `fs.read_file` on
/// `path` with `--json`, failing the test if the program has not ended within 20 s.
fn read_file(dir: &Path, config: &str, path: &str) -> Run {
    call(
        dir,
        config,
        "fs.read_file",
        &toolgate_e2e::serde_json::json!({ "path": path }),
    )
}

/// Writes a policy loading the fs plugin with `config` in `dir` and calls `tool` with
/// `arguments` and `--json`, failing the test if the program has not ended within 20 s.
fn call(dir: &Path, config: &str, tool: &str, arguments: &toolgate_e2e::serde_json::Value) -> Run {
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!("version: 1\nplugins:\n  - name: fs\n    config: {config}\n"),
    )
    .expect("write policy");
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--json",
        tool,
        &arguments.to_string(),
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

/// A root holding `key.pem` (denied by `*.pem`) and `notes.txt`, a hard link to it.
#[cfg(unix)]
fn root_with_a_hard_link_to_a_denied_file() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("root")).expect("mkdir");
    std::fs::write(dir.path().join("root/key.pem"), "PRIVATE KEY\n").expect("write");
    std::fs::hard_link(
        dir.path().join("root/key.pem"),
        dir.path().join("root/notes.txt"),
    )
    .expect("hard link");
    dir
}

#[cfg(unix)]
#[test]
fn a_hard_link_to_a_denied_file_is_not_read() {
    let dir = root_with_a_hard_link_to_a_denied_file();
    let run = read_file(dir.path(), r#"{root: root, deny: ["*.pem"]}"#, "notes.txt");
    assert_tool_error(
        &run,
        "access denied: notes.txt is a file with 2 hard links; while deny patterns are set",
    );
    assert!(!run.stdout.contains("PRIVATE KEY"), "{run:#?}");
}

#[cfg(unix)]
#[test]
fn a_hard_link_to_a_denied_file_is_left_out_of_listings() {
    let dir = root_with_a_hard_link_to_a_denied_file();
    std::fs::write(dir.path().join("root/readme.txt"), "hello\n").expect("write");
    let config = r#"{root: root, deny: ["*.pem"]}"#;
    let run = call(
        dir.path(),
        config,
        "fs.list_dir",
        &toolgate_e2e::serde_json::json!({}),
    );
    run.assert_code(0);
    assert_eq!(run.json()["content"], "readme.txt (6 bytes)", "{run:#?}");
}

#[cfg(unix)]
#[test]
fn without_deny_globs_a_hard_linked_file_is_read() {
    let dir = root_with_a_hard_link_to_a_denied_file();
    let run = read_file(dir.path(), "{root: root}", "notes.txt");
    run.assert_code(0);
    assert_eq!(run.json()["content"], "PRIVATE KEY\n", "{run:#?}");
}

#[test]
fn find_says_it_stopped_at_its_depth_bound_instead_of_no_match() {
    let dir = tempfile::tempdir().expect("temp dir");
    let depth = MAX_FIND_DEPTH + 6;
    let deep: std::path::PathBuf = std::iter::repeat_n("d", depth).collect();
    std::fs::create_dir_all(dir.path().join(&deep)).expect("mkdir -p");
    std::fs::write(dir.path().join(&deep).join("needle.txt"), "x").expect("write");
    let run = call(
        dir.path(),
        "{root: .}",
        "fs.find",
        &toolgate_e2e::serde_json::json!({"pattern": "needle.txt"}),
    );
    run.assert_code(0);
    let content = run.json()["content"].as_str().map(str::to_owned);
    let content = content.expect("text content");
    let first_unsearched: std::path::PathBuf =
        std::iter::repeat_n("d", MAX_FIND_DEPTH + 1).collect();
    assert!(
        content.starts_with("no names match needle.txt under .\n[stopped at depth 64: 1 directory deeper not searched, such as "),
        "{content}"
    );
    assert!(
        content.contains(&format!(
            "such as {}; search again",
            first_unsearched.display()
        )),
        "{content}"
    );
}
