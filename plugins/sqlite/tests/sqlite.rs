//! The sqlite plugin loaded through the C ABI, as the engine loads it, on real database files
//! made by the test.

mod common;

use std::time::Duration;

use common::{call, count, database, error, json, plugin};
use serde_json::json;
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, PluginOutcome};

/// A temporary folder holding `shop.db` (5 items), and the plugin with that folder granted.
fn shop() -> (tempfile::TempDir, std::path::PathBuf, LoadedPlugin) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "shop.db", 5);
    let plugin = plugin(json!({"grants": {"fs_read": [dir.path()]}}));
    (dir, db, plugin)
}

#[test]
fn sqlite_offers_one_query_tool() {
    let (_dir, _db, plugin) = shop();
    let names: Vec<&str> = plugin.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sqlite.query"]);
}

#[test]
fn a_select_returns_its_columns_and_rows_as_json() {
    let (_dir, db, plugin) = shop();
    let out = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT id, name, price FROM items WHERE id <= 2 ORDER BY id"}),
    ));
    assert_eq!(
        out,
        json!({"columns": ["id", "name", "price"],
               "rows": [[1, "item 1", 1.5], [2, "item 2", 3.0]],
               "truncated": false})
    );
}

#[test]
fn params_bind_the_placeholders_in_order() {
    let (_dir, db, plugin) = shop();
    let out = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT name FROM items WHERE id = ? OR name = ? ORDER BY id",
               "params": [2, "item 4"]}),
    ));
    assert_eq!(out["rows"], json!([["item 2"], ["item 4"]]));
}

#[test]
fn a_blob_comes_back_as_base64_and_null_as_null() {
    let (_dir, db, plugin) = shop();
    let out = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT data FROM items WHERE id IN (1, 2) ORDER BY id"}),
    ));
    assert_eq!(out["rows"], json!([[{"blob_base64": "/wA="}], [null]]));
}

#[test]
fn rows_past_the_configured_bound_are_cut_and_marked_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "big.db", 10);
    let plugin = plugin(json!({"grants": {"fs_read": [dir.path()]}, "max_rows": 3}));
    let out = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT id FROM items ORDER BY id"}),
    ));
    assert_eq!(out["rows"], json!([[1], [2], [3]]));
    assert_eq!(out["truncated"], true);
}

#[test]
fn exactly_max_rows_rows_are_not_marked_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "three.db", 3);
    let plugin = plugin(json!({"grants": {"fs_read": [dir.path()]}, "max_rows": 3}));
    let out = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT id FROM items"}),
    ));
    assert_eq!(out["rows"].as_array().map(Vec::len), Some(3));
    assert_eq!(out["truncated"], false);
}

#[test]
fn the_max_rows_argument_can_lower_the_bound_but_not_raise_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "big.db", 10);
    let plugin = plugin(json!({"grants": {"fs_read": [dir.path()]}, "max_rows": 4}));
    let lower = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT id FROM items", "max_rows": 2}),
    ));
    assert_eq!(lower["rows"].as_array().map(Vec::len), Some(2));
    let higher = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT id FROM items", "max_rows": 100}),
    ));
    assert_eq!(higher["rows"].as_array().map(Vec::len), Some(4));
}

#[test]
fn a_statement_that_writes_is_refused_and_the_database_is_unchanged() {
    let (_dir, db, plugin) = shop();
    for sql in [
        "INSERT INTO items(name) VALUES ('x')",
        "DELETE FROM items",
        "UPDATE items SET name = 'x'",
        "CREATE TABLE t(x)",
        "DROP TABLE items",
        "PRAGMA user_version = 7",
    ] {
        let message = error(call(&plugin, json!({"database": db, "sql": sql})));
        assert!(message.starts_with("not_read_only: "), "{sql}: {message}");
    }
    assert_eq!(count(&db), 5);
}

#[test]
fn vacuum_into_a_new_file_is_refused_and_writes_nothing() {
    let (dir, db, plugin) = shop();
    let copy = dir.path().join("copy.db");
    let sql = format!("VACUUM INTO '{}'", copy.display());
    let message = error(call(&plugin, json!({"database": db, "sql": sql})));
    assert!(message.starts_with("not_read_only: "), "{message}");
    assert!(!copy.exists());
}

#[test]
fn attaching_another_database_is_refused() {
    let (dir, db, plugin) = shop();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let other = database(elsewhere.path(), "secret.db", 1);
    let sql = format!("ATTACH DATABASE '{}' AS other", other.display());
    let message = error(call(&plugin, json!({"database": db, "sql": sql})));
    assert!(message.starts_with("sql_error: "), "{message}");
    assert!(message.contains("too many attached databases"), "{message}");
    drop(dir);
}

#[test]
fn a_second_statement_after_a_semicolon_is_refused() {
    let (_dir, db, plugin) = shop();
    let message = error(call(
        &plugin,
        json!({"database": db, "sql": "SELECT 1; DELETE FROM items"}),
    ));
    assert!(message.starts_with("sql_error: "), "{message}");
    assert_eq!(count(&db), 5);
}

#[test]
fn a_database_outside_the_granted_folder_is_not_granted() {
    let (_dir, _db, plugin) = shop();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let other = database(elsewhere.path(), "other.db", 1);
    let message = error(call(&plugin, json!({"database": other, "sql": "SELECT 1"})));
    assert!(message.starts_with("not_granted: "), "{message}");
}

#[test]
#[cfg(unix)]
fn a_link_in_the_granted_folder_to_a_file_outside_it_is_not_granted() {
    let (dir, _db, plugin) = shop();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let other = database(elsewhere.path(), "other.db", 1);
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&other, &link).expect("symlink");
    let message = error(call(&plugin, json!({"database": link, "sql": "SELECT 1"})));
    assert!(message.starts_with("not_granted: "), "{message}");
}

#[test]
fn a_path_that_climbs_out_of_the_granted_folder_is_not_granted() {
    let parent = tempfile::tempdir().expect("tempdir");
    let granted = parent.path().join("granted");
    std::fs::create_dir(&granted).expect("mkdir");
    database(parent.path(), "outside.db", 1);
    let plugin = plugin(json!({"grants": {"fs_read": [granted]}}));
    let climbing = granted.join("..").join("outside.db");
    let message = error(call(
        &plugin,
        json!({"database": climbing, "sql": "SELECT 1"}),
    ));
    assert!(message.starts_with("not_granted: "), "{message}");
}

#[test]
fn a_single_granted_file_can_be_queried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "one.db", 2);
    let plugin = plugin(json!({"grants": {"fs_read": [db]}}));
    let out = json(call(
        &plugin,
        json!({"database": db, "sql": "SELECT count(*) AS n FROM items"}),
    ));
    assert_eq!(out["rows"], json!([[2]]));
}

#[test]
fn without_grants_every_database_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "shop.db", 1);
    let plugin = plugin(json!(null));
    let message = error(call(&plugin, json!({"database": db, "sql": "SELECT 1"})));
    assert!(
        message.contains("(granted for reading: nothing)"),
        "{message}"
    );
}

#[test]
fn a_missing_database_is_not_found_and_not_created() {
    let (dir, _db, plugin) = shop();
    let missing = dir.path().join("missing.db");
    let message = error(call(
        &plugin,
        json!({"database": missing, "sql": "SELECT 1"}),
    ));
    assert!(message.starts_with("not_found: "), "{message}");
    assert!(!missing.exists());
}

#[test]
fn a_file_that_is_not_a_database_is_an_sql_error() {
    let (dir, _db, plugin) = shop();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some text, long enough to hold a header........................................................................")
        .expect("write");
    let message = error(call(
        &plugin,
        json!({"database": text, "sql": "SELECT * FROM items"}),
    ));
    assert!(message.starts_with("sql_error: "), "{message}");
}

#[test]
fn a_query_past_the_time_bound_is_interrupted_with_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = database(dir.path(), "shop.db", 1);
    let plugin = plugin(json!({"grants": {"fs_read": [dir.path()]}, "timeout_ms": 300}));
    // A query that never ends by itself: uninterrupted, the call would not return.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = call(
            &plugin,
            json!({"database": db,
                   "sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}),
        );
        let _ = tx.send(outcome);
    });
    let outcome = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the query is interrupted at its bound");
    assert_eq!(
        error(outcome),
        "timeout: the query ran longer than 300 ms and was interrupted"
    );
}

#[test]
fn a_cancelled_call_stops_between_rows() {
    let (_dir, db, plugin) = shop();
    let cancel = CancelFlag::new();
    cancel.cancel();
    let outcome = plugin.call(
        "sqlite.query",
        &json!({"database": db, "sql": "SELECT id FROM items"}).to_string(),
        &cancel,
        &mut |_| {},
    );
    assert_eq!(outcome, PluginOutcome::Error("cancelled".to_string()));
}

#[test]
fn a_parameter_that_is_an_object_is_a_bad_param() {
    let (_dir, db, plugin) = shop();
    let message = error(call(
        &plugin,
        json!({"database": db, "sql": "SELECT ?", "params": [{"a": 1}]}),
    ));
    assert_eq!(
        message,
        "bad_param: parameter 1 is {\"a\":1}; only strings, numbers, booleans and null can be bound"
    );
}

#[test]
fn a_relative_database_is_found_in_a_granted_folder_whatever_the_working_directory() {
    let (_dir, _db, plugin) = shop();
    // The test's working directory holds no shop.db: the granted folder does.
    assert!(!std::path::Path::new("shop.db").exists());
    let out = json(call(
        &plugin,
        json!({"database": "shop.db", "sql": "SELECT count(*) FROM items"}),
    ));
    assert_eq!(out["rows"], json!([[5]]));
}

#[test]
fn a_relative_database_no_granted_folder_holds_is_not_found_naming_the_folders() {
    let (dir, _db, plugin) = shop();
    let message = error(call(
        &plugin,
        json!({"database": "other.db", "sql": "SELECT 1"}),
    ));
    assert!(message.starts_with("not_found: other.db:"), "{message}");
    assert!(
        message.contains("looked up in the granted folders")
            && message.contains(&dir.path().display().to_string()),
        "{message}"
    );
}

#[test]
fn a_relative_database_cannot_climb_out_of_its_granted_folder() {
    let outer = tempfile::tempdir().expect("tempdir");
    database(outer.path(), "secret.db", 1);
    let granted = outer.path().join("granted");
    std::fs::create_dir(&granted).expect("mkdir");
    let plugin = plugin(json!({"grants": {"fs_read": [granted]}}));
    let message = error(call(
        &plugin,
        json!({"database": "../secret.db", "sql": "SELECT 1"}),
    ));
    assert!(message.starts_with("not_granted:"), "{message}");
}
