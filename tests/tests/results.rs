//! `toolgate results`: the operator lists, reads, deletes and prunes the results a policy's store
//! holds (R7, R8), across processes.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_e2e::{Run, testkit_policy, toolgate_with_results};
use toolgate_plugin_testkit::big_text;

/// A store in a temporary folder holding three results of `big_output`: one of session `A`
/// (60,000 bytes), one of session `B` (70,000), and one saved without a session (80,000),
/// saved in that order.
struct Store {
    dir: tempfile::TempDir,
    policy: PathBuf,
    a: String,
    b: String,
    unscoped: String,
}

impl Store {
    fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.yaml");
        // A relative file:// store is resolved against the policy's folder.
        std::fs::write(
            &policy,
            "version: 1\nplugins: [{name: testkit}]\nreduction: {store: \"file://store\"}\n",
        )
        .unwrap();
        let mut store = Store {
            dir,
            policy,
            a: String::new(),
            b: String::new(),
            unscoped: String::new(),
        };
        store.a = store.save(Some("A"), 60_000);
        store.b = store.save(Some("B"), 70_000);
        store.unscoped = store.save(None, 80_000);
        store
    }

    fn save(&self, session: Option<&str>, bytes: usize) -> String {
        let args = format!(r#"{{"bytes": {bytes}}}"#);
        let mut all = vec!["call", "--json"];
        if let Some(s) = session {
            all.extend(["--session", s]);
        }
        all.extend(["big_output", &args]);
        let run = self.toolgate(&all);
        run.assert_code(0);
        run.json()["result_id"]
            .as_str()
            .expect("the result was offloaded")
            .to_string()
    }

    /// `toolgate ARGS --policy POLICY`.
    fn toolgate(&self, args: &[&str]) -> Run {
        let mut all = args.to_vec();
        all.extend(["--policy", self.policy.to_str().unwrap()]);
        toolgate_with_results(self.dir.path(), &all)
    }

    fn list(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["results", "list", "--json"];
        all.extend_from_slice(args);
        let run = self.toolgate(&all);
        run.assert_code(0);
        run.json().as_array().unwrap().clone()
    }

    fn ids(&self, args: &[&str]) -> Vec<String> {
        self.list(args)
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    }

    fn store_dir(&self) -> &Path {
        self.dir.path()
    }
}

#[test]
fn r7_results_list_shows_every_result_newest_first() {
    let store = Store::new();
    let all = store.list(&[]);
    let ids: Vec<&str> = all.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [store.unscoped.as_str(), store.b.as_str(), store.a.as_str()]
    );
    let times: Vec<u64> = all
        .iter()
        .map(|m| m["created_at_ms"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    assert_eq!(all[2]["session"], "A");
    assert_eq!(all[2]["chars"], 60_000);
    assert_eq!(all[2]["bytes"], 60_000);
    assert_eq!(all[2]["tool"], "big_output");
    assert!(all[0]["session"].is_null());
}

#[test]
fn results_list_in_text_is_a_table_with_one_row_per_result() {
    let store = Store::new();
    let run = store.toolgate(&["results", "list"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert!(lines[0].starts_with("ID "), "{}", lines[0]);
    for (line, id) in lines[1..].iter().zip([&store.unscoped, &store.b, &store.a]) {
        assert!(line.starts_with(id.as_str()), "{line}");
        assert!(line.contains("big_output"), "{line}");
    }
}

#[test]
fn results_list_filters_by_session_unscoped_and_age() {
    let store = Store::new();
    assert_eq!(store.ids(&["--session", "A"]), [store.a.as_str()]);
    assert_eq!(store.ids(&["--unscoped"]), [store.unscoped.as_str()]);
    assert!(store.ids(&["--older-than", "1d"]).is_empty());
    let run = store.toolgate(&["results", "list", "--session", "A", "--unscoped"]);
    run.assert_code(2);
}

#[test]
fn results_show_prints_what_the_store_knows_about_a_result() {
    let store = Store::new();
    let run = store.toolgate(&["results", "show", &store.b, "--json"]);
    run.assert_code(0);
    let meta = run.json();
    assert_eq!(meta["id"], store.b.as_str());
    assert_eq!(meta["session"], "B");
    assert_eq!(meta["chars"], 70_000);
    assert_eq!(meta["content_type"], "text/plain; charset=utf-8");

    let text = store.toolgate(&["results", "show", &store.unscoped]);
    text.assert_code(0);
    assert!(text.stdout.contains("80000 characters"), "{}", text.stdout);
    assert!(
        text.stdout.contains("saved outside any session"),
        "{}",
        text.stdout
    );
}

#[test]
fn results_read_prints_the_characters_exactly_as_saved() {
    let store = Store::new();
    let whole = store.toolgate(&["results", "read", &store.a]);
    whole.assert_code(0);
    assert_eq!(whole.stdout, big_text(60_000), "no newline is added");

    let page = store.toolgate(&[
        "results", "read", &store.a, "--offset", "64", "--limit", "70",
    ]);
    page.assert_code(0);
    assert_eq!(page.stdout, &big_text(60_000)[64..134]);

    let tail = store.toolgate(&[
        "results", "read", &store.a, "--offset", "59990", "--limit", "999",
    ]);
    assert_eq!(tail.stdout, &big_text(60_000)[59_990..]);
}

#[test]
fn results_read_is_not_scoped_to_a_session() {
    let store = Store::new();
    for id in [&store.a, &store.b, &store.unscoped] {
        store
            .toolgate(&["results", "read", id, "--limit", "5"])
            .assert_code(0);
    }
    let help = store.toolgate(&["results", "read", "--help"]);
    assert!(
        help.stdout.contains("NOT scoped to a session"),
        "{}",
        help.stdout
    );
}

#[test]
fn results_read_past_the_end_is_an_input_error() {
    let store = Store::new();
    let run = store.toolgate(&["results", "read", &store.a, "--offset", "60001"]);
    run.assert_code(4);
    assert!(run.stderr.contains("past the end"), "{}", run.stderr);
    let at_end = store.toolgate(&["results", "read", &store.a, "--offset", "60000"]);
    at_end.assert_code(0);
    assert_eq!(at_end.stdout, "");
}

#[test]
fn r7_results_delete_removes_one_result_and_deleting_it_again_succeeds() {
    let store = Store::new();
    let run = store.toolgate(&["results", "delete", &store.a]);
    run.assert_code(0);
    assert_eq!(run.stdout, format!("deleted {}\n", store.a));
    assert_eq!(store.ids(&[]), [store.unscoped.as_str(), store.b.as_str()]);

    let again = store.toolgate(&["results", "delete", &store.a]);
    again.assert_code(0);
    assert!(
        again.stdout.contains("nothing to delete"),
        "{}",
        again.stdout
    );

    let gone = store.toolgate(&["results", "show", &store.a]);
    gone.assert_code(4);
    assert!(
        gone.stderr.contains("no stored tool result"),
        "{}",
        gone.stderr
    );
}

#[test]
fn r8_deleting_a_session_deletes_its_results_and_no_others() {
    let store = Store::new();
    let run = store.toolgate(&["results", "delete", "--session", "B"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains(&format!("deleted {}", store.b)),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("deleted 1 result(s) of session B"),
        "{}",
        run.stdout
    );
    assert_eq!(store.ids(&[]), [store.unscoped.as_str(), store.a.as_str()]);
}

#[test]
fn r8_prune_removes_results_older_than_the_cutoff_in_its_scope_only() {
    let store = Store::new();
    let young = store.toolgate(&["results", "prune", "--older-than", "1d"]);
    young.assert_code(0);
    assert!(
        young.stdout.contains("pruned 0 result(s)"),
        "{}",
        young.stdout
    );
    assert_eq!(store.ids(&[]).len(), 3, "nothing is a day old");

    let dry = store.toolgate(&[
        "results",
        "prune",
        "--older-than",
        "0s",
        "--unscoped",
        "--dry-run",
    ]);
    dry.assert_code(0);
    assert!(
        dry.stdout
            .contains(&format!("would delete {}", store.unscoped)),
        "{}",
        dry.stdout
    );
    assert_eq!(store.ids(&[]).len(), 3, "a dry run deletes nothing");

    let run = store.toolgate(&[
        "results",
        "prune",
        "--older-than",
        "0s",
        "--unscoped",
        "--json",
    ]);
    run.assert_code(0);
    let report = run.json();
    assert_eq!(report["removed"], serde_json::json!([store.unscoped]));
    assert_eq!(report["results"], 1);
    assert_eq!(
        store.ids(&[]),
        [store.b.as_str(), store.a.as_str()],
        "session results stay"
    );
}

#[test]
fn a_result_id_that_is_a_path_or_blank_is_an_input_error() {
    let store = Store::new();
    for command in ["show", "read", "delete"] {
        for bad in ["../x", "", "  ", "a/b", " padded"] {
            let run = store.toolgate(&["results", command, bad]);
            run.assert_code(4).assert_no_panic();
            assert!(
                run.stderr.starts_with("error: not a result id: "),
                "{command} {bad:?}: {}",
                run.stderr
            );
        }
    }
    assert!(
        store.store_dir().join("store").is_dir(),
        "the store is still there"
    );
    assert_eq!(store.ids(&[]).len(), 3);
}

#[test]
fn a_bad_older_than_or_session_is_a_usage_error() {
    let store = Store::new();
    for bad in ["soon", "7", "none", "-1d"] {
        let run = store.toolgate(&["results", "prune", "--older-than", bad]);
        run.assert_code(2);
        assert!(run.stderr.contains("--older-than"), "{}", run.stderr);
    }
    store
        .toolgate(&["results", "list", "--session", " "])
        .assert_code(2);
    store.toolgate(&["results", "prune"]).assert_code(2);
    store.toolgate(&["results", "delete"]).assert_code(2);
}

#[test]
fn results_need_a_policy_with_a_reduction_section() {
    let policy = testkit_policy();
    let results = tempfile::tempdir().unwrap();
    let run = toolgate_with_results(results.path(), &["results", "list", "--policy", &policy]);
    run.assert_code(3);
    assert!(
        run.stderr
            .contains("the policy has no reduction: section, so it has no result store"),
        "{}",
        run.stderr
    );
}

impl Store {
    /// Overwrites the record of `id` with the start of a record, as a torn write leaves it.
    fn corrupt(&self, id: &str) {
        let record = self.store_dir().join("store/meta").join(id);
        assert!(record.is_file(), "{}", record.display());
        std::fs::write(&record, r#"{"version":1,"#).unwrap();
    }
}

#[test]
fn a_corrupt_record_is_reported_and_skipped_by_results_list() {
    let store = Store::new();
    store.corrupt(&store.b);
    for args in [&["results", "list"][..], &["results", "list", "--json"][..]] {
        let run = store.toolgate(args);
        run.assert_code(0).assert_no_panic();
        assert!(!run.stdout.contains(&store.b), "{}", run.stdout);
        assert!(
            run.stderr
                .contains(&format!("warning: skipped result {}", store.b))
                && run
                    .stderr
                    .contains(&format!("`toolgate results delete {}` removes it", store.b)),
            "{}",
            run.stderr
        );
    }
    assert_eq!(store.ids(&[]), [store.unscoped.as_str(), store.a.as_str()]);
    assert_eq!(store.ids(&["--session", "A"]), [store.a.as_str()]);
}

#[test]
fn a_result_with_a_corrupt_record_is_removed_by_results_delete() {
    let store = Store::new();
    store.corrupt(&store.b);
    let show = store.toolgate(&["results", "show", &store.b]);
    show.assert_code(6);
    assert!(show.stderr.contains("results delete"), "{}", show.stderr);

    let run = store.toolgate(&["results", "delete", &store.b]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with(&format!(
            "deleted {} (its record could not be read",
            store.b
        )),
        "{}",
        run.stdout
    );
    let list = store.toolgate(&["results", "list"]);
    list.assert_code(0);
    assert_eq!(list.stderr, "", "nothing left to warn about");
    assert_eq!(store.ids(&[]), [store.unscoped.as_str(), store.a.as_str()]);
    assert!(!store.store_dir().join("store/meta").join(&store.b).exists());
}

#[test]
fn a_session_with_a_corrupt_record_is_removed_by_results_delete_session() {
    let store = Store::new();
    store.corrupt(&store.b);
    let run = store.toolgate(&["results", "delete", "--session", "B"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains(&format!(
            "deleted {} (its record could not be read)",
            store.b
        )) && run.stdout.contains("deleted 1 result(s) of session B"),
        "{}",
        run.stdout
    );
    assert_eq!(store.ids(&[]), [store.unscoped.as_str(), store.a.as_str()]);
}

#[test]
fn a_corrupt_record_older_than_the_cutoff_is_removed_by_results_prune() {
    let store = Store::new();
    store.corrupt(&store.b);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let run = store.toolgate(&[
        "results",
        "prune",
        "--older-than",
        "0s",
        "--session",
        "B",
        "--json",
    ]);
    run.assert_code(0);
    let report = run.json();
    assert_eq!(report["unreadable"], 1, "{report}");
    assert_eq!(report["results"], 0, "{report}");
    assert_eq!(store.ids(&[]), [store.unscoped.as_str(), store.a.as_str()]);
    let list = store.toolgate(&["results", "list"]);
    assert_eq!(list.stderr, "");
}

#[test]
fn control_characters_in_a_session_id_are_escaped_by_results_list() {
    let store = Store::new();
    let session = "evil\u{1b}[2J\u{1b}[31mred\nfake row\u{202e}";
    let id = store.save(Some(session), 60_000);
    let run = store.toolgate(&["results", "list"]);
    run.assert_code(0);
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{202e}'),
        "{:?}",
        run.stdout
    );
    assert_eq!(
        run.stdout.lines().count(),
        5,
        "one line per result: {:?}",
        run.stdout
    );
    let row = run.stdout.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(
        row.contains(r"evil\u{1b}[2J\u{1b}[31mred\nfake row\u{202e}"),
        "{row:?}"
    );
    // The same session id in JSON is the exact string.
    let json = store.list(&["--session", session]);
    assert_eq!(json[0]["session"], session);

    let show = store.toolgate(&["results", "show", &id]);
    assert!(!show.stdout.contains('\u{1b}'), "{:?}", show.stdout);
    let delete = store.toolgate(&["results", "delete", "--session", session]);
    delete.assert_code(0);
    assert!(!delete.stdout.contains('\u{1b}'), "{:?}", delete.stdout);
}

/// Kills `toolgate call` with SIGKILL while it writes a 64 MiB result to the store, then checks
/// that `results prune` finds and removes the partly written file.
#[test]
fn results_prune_removes_the_leftover_of_a_save_killed_mid_write() {
    let results = tempfile::tempdir().unwrap();
    let policy = toolgate_e2e::repo_path("policies/offload.yaml");
    let policy = policy.to_str().unwrap();
    let mut child = std::process::Command::new(toolgate_e2e::toolgate_exe())
        .args([
            "call",
            "--policy",
            policy,
            "--session",
            "s",
            "--timeout",
            "none",
        ])
        .args(["big_output", r#"{"bytes": 67108864}"#])
        .env_remove("RUST_LOG")
        .env("TOOLGATE_RESULTS_DIR", results.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Poll for the staged data file, and kill the writer as soon as it holds some bytes.
    let started = std::time::Instant::now();
    let staged = loop {
        if let Some(p) = files_under(results.path())
            .into_iter()
            .find(|p| p.to_string_lossy().contains('#') && p.metadata().is_ok_and(|m| m.len() > 0))
        {
            break p;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the save finished first"
        );
        assert!(started.elapsed().as_secs() < 60, "no staged file appeared");
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let size = staged
        .metadata()
        .expect("the killed save left its staged file")
        .len();
    assert!(size < 64 << 20, "killed mid-write at {size} bytes");

    std::thread::sleep(std::time::Duration::from_millis(20));
    let run = toolgate_with_results(
        results.path(),
        &[
            "results",
            "prune",
            "--older-than",
            "0s",
            "--policy",
            policy,
            "--json",
        ],
    );
    run.assert_code(0);
    let report = run.json();
    assert!(report["garbage"].as_u64().unwrap() >= 1, "{report}");
    assert!(!staged.exists(), "{} is still there", staged.display());
    let left = files_under(results.path());
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
