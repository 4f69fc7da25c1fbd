//! `search.index_file` that cannot be used, or that changes while the gateway runs: the
//! file is reported and the index built in memory, and the gateway keeps answering.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use toolgate_e2e::serde_json::{Value, json};
use toolgate_e2e::{StdioServe, Toolgate, repo_path, toolgate};

/// A policy in `dir` that searches the example catalog, with `index_file` as given.
fn search_policy(dir: &Path, index_file: &str) -> PathBuf {
    let policy = dir.join("p.yaml");
    let catalog = repo_path("policies/examples/catalog.jsonl");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nsearch:\n  catalogs: [\"{}\"]\n  index_file: \"{index_file}\"\n",
            catalog.display()
        ),
    )
    .unwrap();
    policy
}

fn validate_within_a_minute(policy: &Path) -> toolgate_e2e::Run {
    Toolgate::new(&["validate", policy.to_str().unwrap()]).run_within(Duration::from_secs(60))
}

#[test]
fn an_index_file_that_is_a_fifo_is_reported_and_the_index_built_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tools.idx");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let run = validate_within_a_minute(&search_policy(dir.path(), "tools.idx"));
    run.assert_code(0);
    assert!(
        run.stderr.contains(&format!(
            "index file {} is a named pipe (FIFO), not a regular file",
            fifo.display()
        )) && run.stderr.contains("building the index in memory"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_index_file_that_is_a_device_is_reported_and_the_index_built_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let run = validate_within_a_minute(&search_policy(dir.path(), "/dev/zero"));
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("index file /dev/zero is a character device, not a regular file"),
        "{}",
        run.stderr
    );
}

/// An index file written by an older build (format 6: the FNV checksum) is not misread: the
/// log says which version it has and which this build reads, and the index is built in memory.
#[test]
fn an_index_file_of_an_older_format_is_reported_and_the_index_built_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let policy = search_policy(dir.path(), "tools.idx");
    let policy = policy.to_str().unwrap();
    toolgate(&["index", "build", "--policy", policy]).assert_code(0);
    let index = dir.path().join("tools.idx");
    let mut bytes = std::fs::read(&index).unwrap();
    // The format version, right after the magic.
    assert_eq!(&bytes[..8], b"TGSEARCH");
    bytes[8..12].copy_from_slice(&6u32.to_le_bytes());
    std::fs::write(&index, &bytes).unwrap();
    let run = toolgate(&["search", "--policy", policy, "--json", "weather"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains(&format!(
            "index file {} is not a usable toolgate search index: format version 6, this build reads version 9: rebuild the index",
            index.display()
        )) && run.stderr.contains("building the index in memory"),
        "{}",
        run.stderr
    );
    let found = run.json()["results"][0]["name"].clone();
    assert_eq!(found, "weather_lookup", "{}", run.stdout);
}

/// `toolgate serve --policy POLICY` over stdio.
fn serve(policy: &Path) -> StdioServe {
    StdioServe::start(
        &[OsStr::new("--policy"), policy.as_os_str()],
        &[] as &[(&str, &str)],
    )
}

/// `tool_search` for `query`.
fn search(serve: &mut StdioServe, query: &str) -> Option<Value> {
    serve.call("tool_search", json!({"query": query}))
}

#[test]
fn an_index_file_truncated_in_place_while_serve_runs_does_not_stop_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = search_policy(dir.path(), "tools.idx");
    toolgate(&["index", "build", "--policy", policy.to_str().unwrap()]).assert_code(0);
    let index = dir.path().join("tools.idx");
    let mut serve = serve(&policy);
    let before = search(&mut serve, "weather").expect("serve answers");
    assert!(before["result"].is_object(), "{before}");

    // Truncated in place (not replaced by a rename): a map of it would fault past the new end.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(0)
        .unwrap();
    let after = search(&mut serve, "weather").unwrap_or_else(|| {
        let status = serve.wait().expect("serve can be waited for");
        panic!("serve stopped after the index file was truncated: {status}")
    });
    assert_eq!(after["result"], before["result"]);
}
