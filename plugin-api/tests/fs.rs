//! The fs plugin through the C ABI: its tools, and that no path gets out of the root.

mod common;

use std::fs;
use std::path::Path;

use common::{call_on, error, library, text};
use serde_json::json;
use tempfile::TempDir;
use toolgate_plugin_api::LoadedPlugin;

/// A root directory with some files, and a sibling directory outside it holding a secret.
struct Tree {
    // Kept for its Drop: removes everything.
    _top: TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    plugin: LoadedPlugin,
}

fn tree() -> Tree {
    let top = tempfile::tempdir().expect("temp dir");
    let root = top.path().join("root");
    let outside = top.path().join("outside");
    fs::create_dir_all(root.join("sub/deeper")).expect("mkdir");
    fs::create_dir_all(&outside).expect("mkdir");
    fs::write(root.join("hello.txt"), "line one\nline two\nline three\n").expect("write");
    fs::write(root.join("sub/notes.md"), "# notes\n").expect("write");
    fs::write(root.join("sub/deeper/more.md"), "# more\n").expect("write");
    fs::write(root.join("latin1.txt"), b"caf\xe9\n").expect("write");
    fs::write(outside.join("secret.txt"), "the secret\n").expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(root.join("hello.txt"), root.join("link_inside")).expect("symlink");
        symlink(outside.join("secret.txt"), root.join("link_outside")).expect("symlink");
        symlink(&outside, root.join("dir_link_outside")).expect("symlink");
    }
    let plugin = common::load(&library("toolgate_plugin_fs"), &json!({"root": root}))
        .unwrap_or_else(|err| panic!("fs loads: {err}"));
    Tree {
        _top: top,
        root,
        outside,
        plugin,
    }
}

fn assert_escapes(tree: &Tree, tool: &str, arguments: serde_json::Value) {
    let message = error(call_on(&tree.plugin, tool, arguments.clone()));
    assert!(
        message.starts_with("path escapes the root"),
        "{tool} {arguments}: {message}"
    );
}

#[test]
fn fs_offers_read_file_list_dir_stat_and_find() {
    let tree = tree();
    let names: Vec<&str> = tree
        .plugin
        .tools()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["fs.read_file", "fs.list_dir", "fs.stat", "fs.find"]);
    assert_eq!(tree.plugin.name(), "fs");
}

#[test]
fn read_file_returns_the_whole_text() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "hello.txt"}),
    ));
    assert_eq!(out, "line one\nline two\nline three\n");
}

#[test]
fn read_file_pages_by_lines_and_says_where_to_continue() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "hello.txt", "offset": 2, "limit": 1}),
    ));
    assert_eq!(
        out,
        "line two\n[showing lines 2-2; more follow: continue with offset=3]"
    );
}

#[test]
fn read_file_from_an_offset_past_the_end_is_an_error() {
    let tree = tree();
    let message = error(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "hello.txt", "offset": 9}),
    ));
    assert_eq!(
        message,
        "offset 9 is past the end of hello.txt, which has 3 lines"
    );
}

#[test]
fn read_file_of_invalid_utf8_replaces_bytes_and_says_so() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "latin1.txt"}),
    ));
    assert_eq!(
        out,
        "caf\u{fffd}\n[note: the file is not valid UTF-8; invalid bytes are shown as U+FFFD]"
    );
}

#[test]
fn read_file_of_a_directory_points_to_list_dir() {
    let tree = tree();
    let message = error(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "sub"}),
    ));
    assert_eq!(
        message,
        "sub is a directory; use fs.list_dir to see what it holds"
    );
}

#[test]
fn read_file_of_a_missing_file_says_it_does_not_exist() {
    let tree = tree();
    let message = error(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "nope.txt"}),
    ));
    assert_eq!(message, "no such file or directory: nope.txt");
}

#[test]
fn list_dir_lists_the_root_sorted_with_kinds_marked() {
    let tree = tree();
    let out = text(call_on(&tree.plugin, "fs.list_dir", json!({})));
    let expected = if cfg!(unix) {
        "dir_link_outside@\nhello.txt (29 bytes)\nlatin1.txt (5 bytes)\nlink_inside@\nlink_outside@\nsub/"
    } else {
        "hello.txt (29 bytes)\nlatin1.txt (5 bytes)\nsub/"
    };
    assert_eq!(out, expected);
}

#[test]
fn stat_describes_a_file() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.stat",
        json!({"path": "sub/notes.md"}),
    ));
    let info: serde_json::Value = serde_json::from_str(&out).expect("stat returns JSON");
    assert_eq!(info["path"], "sub/notes.md");
    assert_eq!(info["type"], "file");
    assert_eq!(info["size"], 8);
    assert!(info["modified"].is_u64());
}

#[test]
fn find_matches_names_recursively_and_returns_root_relative_paths() {
    let tree = tree();
    let out = text(call_on(&tree.plugin, "fs.find", json!({"pattern": "*.md"})));
    assert_eq!(out, "sub/deeper/more.md\nsub/notes.md");
}

#[test]
fn find_does_not_follow_links_out_of_the_root() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.find",
        json!({"pattern": "secret*"}),
    ));
    assert_eq!(out, "no names match secret* under .");
}

#[test]
fn dot_dot_out_of_the_root_is_refused() {
    let tree = tree();
    assert_escapes(
        &tree,
        "fs.read_file",
        json!({"path": "../outside/secret.txt"}),
    );
    assert_escapes(
        &tree,
        "fs.read_file",
        json!({"path": "sub/../../outside/secret.txt"}),
    );
    assert_escapes(&tree, "fs.list_dir", json!({"path": ".."}));
    assert_escapes(
        &tree,
        "fs.stat",
        json!({"path": "../../../../../../../../etc/passwd"}),
    );
}

#[test]
fn dot_dot_that_stays_inside_the_root_is_fine() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "sub/../hello.txt"}),
    ));
    assert_eq!(out, "line one\nline two\nline three\n");
}

#[test]
fn an_absolute_path_outside_the_root_is_refused() {
    let tree = tree();
    let secret = tree.outside.join("secret.txt");
    assert_escapes(&tree, "fs.read_file", json!({"path": secret}));
    assert_escapes(&tree, "fs.list_dir", json!({"path": "/"}));
    assert_escapes(
        &tree,
        "fs.find",
        json!({"pattern": "*", "path": tree.outside}),
    );
}

#[test]
fn an_absolute_path_inside_the_root_is_fine() {
    let tree = tree();
    let root = fs::canonicalize(&tree.root).expect("canonical root");
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": root.join("hello.txt")}),
    ));
    assert_eq!(out, "line one\nline two\nline three\n");
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_file_outside_the_root_is_refused() {
    let tree = tree();
    assert_escapes(&tree, "fs.read_file", json!({"path": "link_outside"}));
    assert_escapes(&tree, "fs.stat", json!({"path": "link_outside"}));
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_directory_outside_the_root_is_refused() {
    let tree = tree();
    assert_escapes(
        &tree,
        "fs.read_file",
        json!({"path": "dir_link_outside/secret.txt"}),
    );
    assert_escapes(&tree, "fs.list_dir", json!({"path": "dir_link_outside"}));
    assert_escapes(
        &tree,
        "fs.find",
        json!({"pattern": "*", "path": "dir_link_outside"}),
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_that_stays_inside_the_root_is_followed() {
    let tree = tree();
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "link_inside"}),
    ));
    assert_eq!(out, "line one\nline two\nline three\n");
}

#[test]
fn two_instances_of_one_library_keep_their_own_roots() {
    let first = tree();
    let second_root = tempfile::tempdir().expect("temp dir");
    fs::write(second_root.path().join("only_here.txt"), "second\n").expect("write");
    let second = common::load(
        &library("toolgate_plugin_fs"),
        &json!({"root": second_root.path()}),
    )
    .expect("second instance loads");
    assert_eq!(
        text(call_on(
            &second,
            "fs.read_file",
            json!({"path": "only_here.txt"})
        )),
        "second\n"
    );
    let message = error(call_on(
        &first.plugin,
        "fs.read_file",
        json!({"path": "only_here.txt"}),
    ));
    assert_eq!(message, "no such file or directory: only_here.txt");
    assert!(Path::new(&first.root).join("hello.txt").is_file());
}
