//! The fs plugin's own `deny` globs, matched on the resolved root-relative path, so that no
//! spelling of a denied path gets through; and a trailing slash on a file.

mod common;

use std::fs;

use common::{call_on, error, library, text};
use serde_json::json;
use tempfile::TempDir;
use toolgate_plugin_api::{LoadError, LoadedPlugin};

/// A root holding a key, an environment file at the top and in `sub/`, a `secrets` folder,
/// and ordinary files; the plugin denies `*.pem`, `.env` and `secrets`.
struct Tree {
    // Kept for its Drop: removes everything.
    _top: TempDir,
    plugin: LoadedPlugin,
}

const DENY: [&str; 3] = ["*.pem", ".env", "secrets"];

fn tree_denying(deny: &[&str]) -> Tree {
    let top = tempfile::tempdir().expect("temp dir");
    let root = top.path();
    fs::create_dir_all(root.join("sub")).expect("mkdir");
    fs::create_dir_all(root.join("docs")).expect("mkdir");
    fs::create_dir_all(root.join("secrets")).expect("mkdir");
    fs::create_dir_all(root.join("config")).expect("mkdir");
    fs::create_dir_all(root.join("other/config")).expect("mkdir");
    fs::write(root.join("key.pem"), "PRIVATE KEY\n").expect("write");
    fs::write(root.join(".env"), "TOKEN=top\n").expect("write");
    fs::write(root.join("sub/.env"), "TOKEN=sub\n").expect("write");
    fs::write(root.join("sub/notes.md"), "# notes\n").expect("write");
    fs::write(root.join("secrets/x"), "the secret\n").expect("write");
    fs::write(root.join("docs/readme.md"), "# docs\n").expect("write");
    fs::write(root.join("hello.txt"), "hello\n").expect("write");
    fs::write(root.join("config/a.key"), "a\n").expect("write");
    fs::write(root.join("other/config/a.key"), "b\n").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("key.pem"), root.join("innocent.txt")).expect("symlink");
    let plugin = common::load(
        &library("toolgate_plugin_fs"),
        &json!({"root": root, "deny": deny}),
    )
    .unwrap_or_else(|err| panic!("fs loads: {err}"));
    Tree { _top: top, plugin }
}

fn tree() -> Tree {
    tree_denying(&DENY)
}

/// `tool` on `path` fails with the deny error naming `glob`, and shows none of the file.
#[track_caller]
fn assert_denied(tree: &Tree, tool: &str, path: &str, glob: &str) {
    let message = error(call_on(&tree.plugin, tool, json!({"path": path})));
    assert!(
        message.starts_with("access denied: ")
            && message.ends_with(&format!("matches the fs plugin's deny pattern {glob:?}")),
        "{tool} {path:?}: {message}"
    );
}

#[test]
fn key_pem_with_a_trailing_slash_is_denied() {
    assert_denied(&tree(), "fs.read_file", "key.pem/", "*.pem");
}

#[test]
fn key_pem_spelt_dot_slash_key_pem_slash_dot_is_denied() {
    assert_denied(&tree(), "fs.read_file", "./key.pem/.", "*.pem");
}

#[test]
fn dot_env_at_the_root_is_denied() {
    assert_denied(&tree(), "fs.read_file", ".env", ".env");
}

#[test]
fn dot_env_in_a_subfolder_with_a_trailing_slash_is_denied() {
    assert_denied(&tree(), "fs.read_file", "sub/.env/", ".env");
}

#[test]
fn a_denied_folder_reached_through_dot_dot_is_denied() {
    assert_denied(&tree(), "fs.read_file", "docs/../secrets/x", "secrets");
}

#[test]
fn a_denied_folder_spelt_with_dot_slash_is_denied() {
    assert_denied(&tree(), "fs.read_file", "./secrets/x", "secrets");
}

#[test]
fn an_absolute_path_to_a_denied_file_is_denied() {
    let tree = tree();
    let root = tree._top.path().canonicalize().expect("canonical");
    let absolute = root.join("key.pem").display().to_string();
    assert_denied(&tree, "fs.read_file", &absolute, "*.pem");
}

#[cfg(unix)]
#[test]
fn a_symlink_inside_the_root_to_a_denied_file_is_denied() {
    let message = error(call_on(
        &tree().plugin,
        "fs.read_file",
        json!({"path": "innocent.txt"}),
    ));
    assert_eq!(
        message,
        "access denied: key.pem matches the fs plugin's deny pattern \"*.pem\""
    );
}

#[test]
fn a_denied_path_is_denied_whether_or_not_it_exists() {
    assert_denied(&tree(), "fs.read_file", "missing.pem", "*.pem");
}

#[test]
fn every_tool_honours_the_deny_list() {
    let tree = tree();
    assert_denied(&tree, "fs.stat", "key.pem", "*.pem");
    assert_denied(&tree, "fs.list_dir", "secrets", "secrets");
    let message = error(call_on(
        &tree.plugin,
        "fs.find",
        json!({"pattern": "*", "path": "secrets/"}),
    ));
    assert!(message.starts_with("access denied: secrets "), "{message}");
}

#[test]
fn list_dir_leaves_denied_entries_out() {
    let tree = tree();
    let listing = text(call_on(&tree.plugin, "fs.list_dir", json!({})));
    for hidden in ["key.pem", ".env", "secrets/"] {
        assert!(
            !listing.lines().any(|l| l.starts_with(hidden)),
            "{hidden} listed:\n{listing}"
        );
    }
    assert!(
        listing.lines().any(|l| l.starts_with("hello.txt")),
        "{listing}"
    );
    let sub = text(call_on(&tree.plugin, "fs.list_dir", json!({"path": "sub"})));
    assert_eq!(sub, "notes.md (8 bytes)");
}

#[test]
fn find_neither_lists_nor_searches_denied_entries() {
    let tree = tree();
    let found = text(call_on(&tree.plugin, "fs.find", json!({"pattern": "*"})));
    for hidden in ["key.pem", ".env", "sub/.env", "secrets", "secrets/x"] {
        assert!(
            !found.lines().any(|l| l == hidden),
            "{hidden} found:\n{found}"
        );
    }
    assert!(found.lines().any(|l| l == "sub/notes.md"), "{found}");
}

#[test]
fn a_glob_with_a_slash_matches_the_whole_path_from_the_root() {
    let tree = tree_denying(&["config/*.key"]);
    assert_denied(&tree, "fs.read_file", "config/a.key", "config/*.key");
    assert_denied(
        &tree,
        "fs.read_file",
        "other/../config/a.key",
        "config/*.key",
    );
    let out = text(call_on(
        &tree.plugin,
        "fs.read_file",
        json!({"path": "other/config/a.key"}),
    ));
    assert_eq!(out, "b\n");
}

#[test]
fn a_glob_matching_a_folder_denies_everything_under_it() {
    let tree = tree_denying(&["/docs"]);
    assert_denied(&tree, "fs.read_file", "docs/readme.md", "/docs");
    assert_denied(&tree, "fs.stat", "./docs/", "/docs");
}

#[test]
fn paths_the_deny_list_does_not_match_are_read_as_before() {
    let out = text(call_on(
        &tree().plugin,
        "fs.read_file",
        json!({"path": "./sub/../hello.txt"}),
    ));
    assert_eq!(out, "hello\n");
}

#[test]
fn a_bad_deny_glob_stops_the_plugin_naming_the_glob() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = match common::load(
        &library("toolgate_plugin_fs"),
        &json!({"root": dir.path(), "deny": ["ok.txt", "[unclosed"]}),
    ) {
        Ok(_) => panic!("a bad glob must stop the plugin"),
        Err(err) => err,
    };
    let LoadError::InitFailed { message, .. } = &err else {
        panic!("expected an init failure, got {err:?}");
    };
    assert!(
        message.starts_with("deny pattern \"[unclosed\": "),
        "{message}"
    );
}

#[test]
fn a_file_named_with_a_trailing_slash_is_refused() {
    let message = error(call_on(
        &tree().plugin,
        "fs.read_file",
        json!({"path": "hello.txt/"}),
    ));
    assert_eq!(
        message,
        "hello.txt/ ends with a slash (or `/.`), which names a directory, but hello.txt is not \
         a directory; drop the trailing slash to name the file"
    );
}

#[test]
fn a_file_named_with_a_trailing_slash_dot_is_refused() {
    let message = error(call_on(
        &tree().plugin,
        "fs.stat",
        json!({"path": "./hello.txt/."}),
    ));
    assert!(
        message.starts_with("./hello.txt/. ends with a slash"),
        "{message}"
    );
}

#[test]
fn a_folder_named_with_a_trailing_slash_is_fine() {
    let listing = text(call_on(
        &tree().plugin,
        "fs.list_dir",
        json!({"path": "sub/"}),
    ));
    assert_eq!(listing, "notes.md (8 bytes)");
}
