//! `toolgate results` over a store whose files were changed behind its back, and saving into
//! a store under a file-size limit: a damaged result is reported as corrupt (not as a store
//! that may be unreachable), nothing outside the store is read, and the host survives.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use toolgate_e2e::{Run, testkit_policy, toolgate_exe, toolgate_with_results};

/// A store in a temporary folder (`file://store` beside the policy) holding one result of
/// `big_output`, 60,000 bytes, saved without a session.
struct Store {
    dir: tempfile::TempDir,
    policy: PathBuf,
    id: String,
}

impl Store {
    fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            "version: 1\nplugins: [{name: testkit}]\nreduction: {store: \"file://store\"}\n",
        )
        .unwrap();
        let mut store = Store {
            dir,
            policy,
            id: String::new(),
        };
        let run = store.toolgate(&["call", "--json", "big_output", r#"{"bytes": 60000}"#]);
        run.assert_code(0);
        store.id = run.json()["result_id"]
            .as_str()
            .expect("the result was offloaded")
            .to_owned();
        store
    }

    /// `toolgate ARGS --policy POLICY`.
    fn toolgate(&self, args: &[&str]) -> Run {
        let mut all = args.to_vec();
        all.extend(["--policy", self.policy.to_str().unwrap()]);
        toolgate_with_results(self.dir.path(), &all)
    }

    fn record(&self) -> PathBuf {
        self.dir.path().join("store/meta").join(&self.id)
    }

    /// The result's one data file.
    fn data(&self) -> PathBuf {
        let dir = self.dir.path().join("store/data").join(&self.id);
        let files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }
}

/// The run failed with the store's exit code, saying the result is corrupt, not that the store
/// may be unreachable.
#[track_caller]
fn assert_corrupt(run: &Run, id: &str, detail: &str) {
    run.assert_code(6);
    assert!(
        run.stderr.contains(&format!(
            "the result store is inconsistent about \"{id}\": {detail}"
        )) && !run.stderr.contains("unreachable"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_result_whose_data_file_was_cut_short_is_corrupt_not_unreachable() {
    let store = Store::new();
    let data = std::fs::OpenOptions::new()
        .write(true)
        .open(store.data())
        .unwrap();
    data.set_len(50_000).unwrap();
    let run = store.toolgate(&["results", "read", &store.id]);
    // 60,000 bytes and 15 index entries of 8 bytes.
    assert_corrupt(
        &run,
        &store.id,
        "the data is 50000 bytes, and its record says 60120",
    );
}

#[test]
fn a_record_whose_sizes_lie_is_corrupt_not_unreachable() {
    let store = Store::new();
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(store.record()).unwrap()).unwrap();
    record["bytes"] = Value::from(61_000);
    std::fs::write(store.record(), record.to_string()).unwrap();
    let run = store.toolgate(&["results", "read", &store.id]);
    assert_corrupt(
        &run,
        &store.id,
        "the data is 60120 bytes, and its record says 61120",
    );
}

#[test]
fn a_record_that_leads_outside_the_store_is_neither_listed_nor_shown() {
    let store = Store::new();
    // The record moved out of the store, and a link to it left in its place.
    let outside = tempfile::tempdir().unwrap();
    let moved = outside.path().join(&store.id);
    std::fs::rename(store.record(), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, store.record()).unwrap();

    let list = store.toolgate(&["results", "list", "--json"]);
    list.assert_code(0);
    assert_eq!(list.json(), serde_json::json!([]), "{}", list.stdout);
    assert!(
        list.stderr.contains("leads outside the store's directory"),
        "{}",
        list.stderr
    );
    let show = store.toolgate(&["results", "show", &store.id]);
    assert_corrupt(
        &show,
        &store.id,
        &format!(
            "{} leads outside the store's directory, to {}",
            store.record().display(),
            moved.canonicalize().unwrap().display()
        ),
    );
    // Deleting it removes the link, not what it leads to.
    store
        .toolgate(&["results", "delete", &store.id])
        .assert_code(0);
    assert!(moved.is_file());
    assert!(std::fs::symlink_metadata(store.record()).is_err());
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_file_size_limit_fails_the_offload_without_killing_the_host_or_leaving_a_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\nplugins: [{name: testkit}]\nreduction: {store: \"file://store\"}\n",
    )
    .unwrap();
    // 40 blocks (at most 40 KiB) per file, and a 200,000-byte result to offload.
    let output = Command::new("bash")
        .args(["-c", "ulimit -f 40 && exec \"$@\"", "bash"])
        .arg(toolgate_exe())
        .args(["call", "--json", "--policy"])
        .arg(&policy)
        .args(["big_output", r#"{"bytes": 200000}"#])
        .current_dir(dir.path())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{:?}: {stderr}",
        output.status
    );
    let outcome: Value = serde_json::from_slice(&output.stdout).unwrap();
    // Not offloaded: the result is cut to the dispatch cap instead (R9).
    assert!(outcome["result_id"].is_null(), "{outcome}");
    assert!(
        stderr.contains("could not offload a large result") && stderr.contains("File too large"),
        "{stderr}"
    );
    let left = files_under(&dir.path().join("store"));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_age_too_large_to_count_is_refused_as_too_large() {
    let run = toolgate_with_results(
        Path::new("/nonexistent"),
        &[
            "results",
            "prune",
            "--older-than",
            "999999999999d",
            "--policy",
            &testkit_policy(),
        ],
    );
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("\"999999999999d\" is too large a duration")
            && !run.stderr.contains("is not an age"),
        "{}",
        run.stderr
    );
}
