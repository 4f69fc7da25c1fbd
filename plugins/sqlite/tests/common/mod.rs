//! The built sqlite plugin library, and real SQLite database files made for a test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, Part, PluginOutcome};

/// The directory cargo puts this profile's libraries in: the test executable lives in
/// `target/<profile>/deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/")
        .to_path_buf()
}

/// The built library of this crate (cargo builds it before the tests).
pub fn library() -> PathBuf {
    let file = toolgate_plugin_api::library_file_name("toolgate_plugin_sqlite");
    let dir = profile_dir();
    // The newer of the two: `cargo test` refreshes the one in deps/, and only `cargo build`
    // the copy beside it, which a test must not load stale.
    [dir.join(&file), dir.join("deps").join(&file)]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("{file} is not built in {}", dir.display()))
}

/// Makes `dir/name`, a database with a table `items(id INTEGER, name TEXT, price REAL, data
/// BLOB)` holding `rows` rows: id i, name `item i`, price i * 1.5, data NULL except row 1
/// (bytes 0xff 0x00).
pub fn database(dir: &Path, name: &str, rows: i64) -> PathBuf {
    let path = dir.join(name);
    let conn = rusqlite::Connection::open(&path).expect("create the database");
    conn.execute_batch(
        "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, price REAL, data BLOB);",
    )
    .expect("create the table");
    for i in 1..=rows {
        let data: Option<Vec<u8>> = (i == 1).then(|| vec![0xff, 0x00]);
        conn.execute(
            "INSERT INTO items(id, name, price, data) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![i, format!("item {i}"), i as f64 * 1.5, data],
        )
        .expect("insert");
    }
    path
}

/// How many rows `items` holds, read by a connection of the test's own.
pub fn count(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.query_row("SELECT count(*) FROM items", [], |row| row.get(0))
        .expect("count")
}

/// Loads this crate's plugin library with `config`.
pub fn plugin(config: Value) -> LoadedPlugin {
    // SAFETY: this workspace's own sqlite plugin, built with the SDK.
    unsafe { LoadedPlugin::load(&library(), &config) }.unwrap_or_else(|e| panic!("loads: {e}"))
}

pub fn call(plugin: &LoadedPlugin, args: Value) -> PluginOutcome {
    plugin.call(
        "sqlite.query",
        &args.to_string(),
        &CancelFlag::new(),
        &mut |_| {},
    )
}

/// The JSON of a successful query.
pub fn json(outcome: PluginOutcome) -> Value {
    match outcome {
        PluginOutcome::Ok(parts) => match parts.as_slice() {
            [Part::Text(text)] => serde_json::from_str(text).expect("the result is JSON"),
            other => panic!("expected one text part, got {other:?}"),
        },
        other => panic!("expected success, got {other:?}"),
    }
}

pub fn error(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Error(message) => message,
        other => panic!("expected an error, got {other:?}"),
    }
}
