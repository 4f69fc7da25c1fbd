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
