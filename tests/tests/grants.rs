//! Capabilities and grants: a plugin that asks for more than its policy grants does not load;
//! the grants reach it in its configuration; under `isolation: process` its environment holds
//! only the granted variables. The `granted` test plugin asks to read `/etc`, the variable
//! `TOOLGATE_TEST_SECRET` and the host `example.com:443`.

use std::path::PathBuf;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate, serde_json, toolgate_exe};

fn granted_library() -> PathBuf {
    toolgate_exe()
        .parent()
        .expect("the program is in a folder")
        .join(format!(
            "{}toolgate_test_granted{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
}

/// A policy that loads the `granted` plugin with `extra` lines under its entry (indented by 4).
fn policy(dir: &tempfile::TempDir, extra: &str) -> String {
    let path = dir.path().join("granted.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nplugins:\n  - path: {}\n{extra}",
            granted_library().display()
        ),
    )
    .expect("policy written");
    path.display().to_string()
}

const ALL_GRANTS: &str = "    config: {greeting: hi}\n    grants:\n      fs_read: [/etc]\n      env: [TOOLGATE_TEST_SECRET]\n      net: [example.com]\n";

fn call(policy: &str, tool: &str, args: &str) -> Run {
    Toolgate::new(&["call", "--policy", policy, tool, args])
        .env("TOOLGATE_TEST_SECRET", "s3cret")
        .env("TOOLGATE_TEST_OTHER", "visible")
        .run_within(Duration::from_secs(60))
}

#[test]
fn a_plugin_asking_for_more_than_its_grants_fails_to_load_listing_what_is_missing() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "    grants:\n      env: [TOOLGATE_TEST_SECRET]\n");
    let run = Toolgate::new(&["validate", &policy]).run_within(Duration::from_secs(60));
    run.assert_code(3);
    assert!(
        run.stderr
            .contains("missing: fs_read /etc, net example.com:443;"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("env TOOLGATE_TEST_SECRET"), "{run:#?}");
}

#[test]
fn a_plugin_without_grants_in_the_policy_is_refused_everything_it_asks_for() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, "");
    let run = Toolgate::new(&["validate", &policy]).run_within(Duration::from_secs(60));
    run.assert_code(3);
    assert!(
        run.stderr
            .contains("missing: fs_read /etc, env TOOLGATE_TEST_SECRET, net example.com:443;"),
        "{run:#?}"
    );
}

#[test]
fn the_grants_reach_the_plugin_in_its_config_under_grants() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, ALL_GRANTS);
    let run = call(&policy, "config", "{}");
    run.assert_code(0);
    let config: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("JSON");
    assert_eq!(
        config,
        serde_json::json!({
            "greeting": "hi",
            "grants": {
                "fs_read": ["/etc"],
                "fs_write": [],
                "env": ["TOOLGATE_TEST_SECRET"],
                "net": ["example.com"],
                "subprocess": false
            }
        })
    );
}

#[test]
fn an_isolated_plugin_sees_a_granted_variable() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, &format!("{ALL_GRANTS}    isolation: process\n"));
    let run = call(&policy, "env", r#"{"name": "TOOLGATE_TEST_SECRET"}"#);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "s3cret");
}

#[test]
fn an_isolated_plugin_does_not_see_a_variable_it_was_not_granted() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, &format!("{ALL_GRANTS}    isolation: process\n"));
    let run = call(&policy, "env", r#"{"name": "TOOLGATE_TEST_OTHER"}"#);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "(unset)");
}

#[test]
fn an_isolated_plugin_reads_under_its_granted_root() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, &format!("{ALL_GRANTS}    isolation: process\n"));
    let run = call(&policy, "read", r#"{"path": "/etc/passwd"}"#);
    run.assert_code(0);
    assert!(run.stdout.contains("root:"), "{run:#?}");
}

#[test]
fn an_isolated_plugin_cannot_read_outside_its_granted_roots() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, &format!("{ALL_GRANTS}    isolation: process\n"));
    // The policy file itself: readable by the user, but not under /etc.
    let args = serde_json::json!({ "path": policy }).to_string();
    let run = call(&policy, "read", &args);
    run.assert_code(1);
    assert!(run.stdout.contains("Permission denied"), "{run:#?}");
}

#[test]
fn an_in_process_plugin_is_only_told_its_file_grants() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(&dir, ALL_GRANTS);
    let args = serde_json::json!({ "path": policy }).to_string();
    let run = call(&policy, "read", &args);
    run.assert_code(0);
    assert!(run.stdout.contains("version: 1"), "{run:#?}");
}

/// `validate` of the granted plugin whose config names an init marker in `dir`, with `grants`
/// (the `grants:` block) and `extra` entry lines; whether its `init` wrote the marker.
fn init_ran(grants: &str, extra: &str) -> (Run, bool) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let marker = dir.path().join("init-ran");
    let grants = grants.replace("DIR", &dir.path().display().to_string());
    let policy = policy(
        &dir,
        &format!(
            "    config: {{init_marker: {}}}\n{grants}{extra}",
            marker.display()
        ),
    );
    let run = Toolgate::new(&["validate", &policy]).run_within(Duration::from_secs(60));
    (run, marker.exists())
}

/// Everything the plugin asks for but the network, and writing in the marker's folder (so
/// that Landlock, under `isolation: process`, would let `init` write it).
const ALL_BUT_NET: &str = "    grants:\n      fs_read: [/etc]\n      fs_write: [DIR]\n      env: [TOOLGATE_TEST_SECRET]\n";

#[test]
fn a_granted_plugin_is_started_and_its_init_runs() {
    let (run, ran) = init_ran(&format!("{ALL_BUT_NET}      net: [example.com]\n"), "");
    run.assert_code(0);
    assert!(ran, "init did not write its marker: {run:#?}");
}

#[test]
fn a_plugin_asking_for_more_than_granted_is_refused_before_its_init_runs() {
    let (run, ran) = init_ran(ALL_BUT_NET, "");
    run.assert_code(3);
    assert!(
        run.stderr.contains("missing: net example.com:443"),
        "{run:#?}"
    );
    assert!(!ran, "init ran before the grants were checked");
}

#[test]
fn an_isolated_granted_plugin_is_started_and_its_init_runs() {
    let (run, ran) = init_ran(
        &format!("{ALL_BUT_NET}      net: [example.com]\n"),
        "    isolation: process\n",
    );
    run.assert_code(0);
    assert!(ran, "init did not write its marker: {run:#?}");
}

#[test]
fn an_isolated_plugin_asking_for_more_than_granted_is_refused_before_its_init_runs() {
    let (run, ran) = init_ran(ALL_BUT_NET, "    isolation: process\n");
    run.assert_code(3);
    assert!(
        run.stderr.contains("missing: net example.com:443"),
        "{run:#?}"
    );
    assert!(
        !ran,
        "init ran in the worker before the grants were checked"
    );
}

#[test]
fn a_pinned_isolated_plugin_loads_its_checked_copy_under_landlock() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let hash = Toolgate::new(&["plugin", "hash", &granted_library().display().to_string()])
        .run_within(Duration::from_secs(60));
    hash.assert_code(0);
    let policy = policy(
        &dir,
        &format!(
            "{ALL_GRANTS}    isolation: process\n    {}\n",
            hash.stdout.trim()
        ),
    );
    let run = call(&policy, "read", r#"{"path": "/etc/passwd"}"#);
    run.assert_code(0);
    assert!(run.stdout.contains("root:"), "{run:#?}");
    let args = serde_json::json!({ "path": policy }).to_string();
    let run = call(&policy, "read", &args);
    run.assert_code(1);
    assert!(run.stdout.contains("Permission denied"), "{run:#?}");
}
