//! The sqlite plugin through `toolgate call`: a query bounds the bytes it makes, not only its rows
//! and time. An empty file is an empty SQLite database, so no table is needed.

use std::path::Path;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate};

/// Calls `sqlite.query` with `sql` on an empty database in `dir`, with `config` lines under the
/// plugin's entry; fails the test if the program has not ended within 60 s.
fn query(dir: &Path, config: &str, sql: &str) -> Run {
    let database = dir.join("empty.db");
    std::fs::write(&database, b"").expect("write the database");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins:\n  - name: sqlite\n    grants: {{fs_read: [{}]}}\n{config}",
            toolgate_e2e::serde_json::Value::String(database.display().to_string())
        ),
    )
    .expect("write policy");
    let arguments = toolgate_e2e::serde_json::json!({ "database": database, "sql": sql });
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--json",
        "sqlite.query",
        &arguments.to_string(),
    ])
    .run_within(Duration::from_secs(60))
}

/// The call failed as a tool error whose message contains `expected`.
#[track_caller]
fn assert_tool_error(run: &Run, expected: &str) {
    run.assert_code(1);
    run.assert_no_panic();
    let outcome = run.json();
    assert_eq!(outcome["error_kind"], "tool_error", "{run:#?}");
    let content = outcome["content"].as_str().expect("text content");
    assert!(
        content.contains(expected),
        "expected {expected:?} in {content:?}"
    );
}

#[test]
fn a_query_that_makes_a_900_mb_string_is_refused_as_too_large_without_allocating_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = query(
        dir.path(),
        "",
        "SELECT replace(zeroblob(900000000), X'00', 'a')",
    );
    assert_tool_error(
        &run,
        "too_large: a string or blob in the query is longer than 1048576 bytes \
         (max_result_bytes)",
    );
}

#[test]
fn rows_whose_text_passes_max_result_bytes_are_refused_naming_the_row() {
    let dir = tempfile::tempdir().expect("temp dir");
    // 100 rows of 1,000 '0's: about 1,006 bytes of JSON each, so row 10 passes 10,000 bytes.
    let run = query(
        dir.path(),
        "    config: {max_result_bytes: 10000}\n",
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100) \
         SELECT hex(zeroblob(500)) FROM c",
    );
    assert_tool_error(
        &run,
        "too_large: the result is longer than 10000 bytes (max_result_bytes) at row 10",
    );
}

#[test]
fn a_result_within_max_result_bytes_comes_back_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = query(
        dir.path(),
        "    config: {max_result_bytes: 10000}\n",
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 9) \
         SELECT hex(zeroblob(500)) FROM c",
    );
    run.assert_code(0);
    let outcome = run.json();
    let content = outcome["content"].as_str().expect("text content");
    let result: toolgate_e2e::serde_json::Value =
        toolgate_e2e::serde_json::from_str(content).expect("the result is JSON");
    assert_eq!(result["rows"].as_array().map(Vec::len), Some(9), "{run:#?}");
    assert_eq!(result["truncated"], false);
    assert!(content.len() <= 10_000, "{} bytes", content.len());
}
