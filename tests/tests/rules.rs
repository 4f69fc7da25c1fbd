//! Declarative rules through the binary (G1, D4, G8): the shipped read-only example denies
//! every spelling of a protected path, rules judge the final arguments, unknown names and
//! built-in tools are not hidden by an allow list, and `explain` says what applies and in which
//! order.

use std::path::Path;
use std::time::Duration;

use toolgate_e2e::{Toolgate, repo_path, toolgate, toolgate_in};

/// A folder laid out like a small project with secrets in it, the fs plugin's root.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (file, text) in [
        ("key.pem", "PRIVATE KEY"),
        (".env", "TOKEN=1"),
        ("sub/.env", "TOKEN=2"),
        ("secrets/x", "hidden"),
        ("docs/readme.md", "hello docs"),
    ] {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The shipped read-only example, copied into `root`: its `root: .` is the policy's folder.
fn example_in(root: &Path) -> std::path::PathBuf {
    let policy = root.join("fs-readonly.yaml");
    std::fs::copy(repo_path("policies/examples/fs-readonly.yaml"), &policy).unwrap();
    policy
}

fn read_with_example(root: &Path, path: &str) -> toolgate_e2e::serde_json::Value {
    let policy = example_in(root);
    let args = toolgate_e2e::serde_json::json!({ "path": path }).to_string();
    let run = toolgate_in(
        root,
        &[
            "call",
            "--policy",
            policy.to_str().unwrap(),
            "--json",
            "fs.read_file",
            &args,
        ],
        "",
    );
    run.json()
}

#[test]
fn the_fs_readonly_example_denies_every_spelling_of_a_protected_path() {
    let dir = project();
    for path in [
        "key.pem",
        "key.pem/",
        "./key.pem/.",
        ".env",
        "sub/.env",
        "sub/.env/",
        "secrets/x",
        "docs/../secrets/x",
        "./secrets/x",
        "docs//../secrets//x",
    ] {
        let o = read_with_example(dir.path(), path);
        assert_eq!(o["error_kind"], "denied", "{path:?} must be denied: {o}");
        let text = o["content"].as_str().unwrap_or_default();
        for secret in ["PRIVATE KEY", "TOKEN=", "hidden"] {
            assert!(!text.contains(secret), "{path:?} leaked {secret}: {o}");
        }
    }
}

#[test]
fn the_fs_readonly_example_refuses_paths_it_cannot_normalise() {
    let dir = project();
    for path in ["/etc/passwd", "../outside", "docs/../../outside"] {
        let o = read_with_example(dir.path(), path);
        assert_eq!(o["error_kind"], "denied", "{path:?}: {o}");
        assert!(
            o["content"]
                .as_str()
                .is_some_and(|c| c.contains("cannot be checked against the policy's path rules")),
            "{path:?} says why: {o}"
        );
    }
}

#[test]
fn the_fs_readonly_example_still_reads_ordinary_files() {
    let dir = project();
    for path in [
        "docs/readme.md",
        "./docs//readme.md",
        "sub/../docs/readme.md",
    ] {
        let o = read_with_example(dir.path(), path);
        assert_eq!(o["is_error"], false, "{path:?}: {o}");
        assert!(
            o["content"]
                .as_str()
                .is_some_and(|c| c.contains("hello docs")),
            "{path:?}: {o}"
        );
    }
}

/// `fs.read_file` on `path` under the shipped read-only example, in `root`; the run must end
/// within a minute.
fn read_within_a_minute(root: &Path, path: &str) -> toolgate_e2e::serde_json::Value {
    let policy = example_in(root);
    let args = toolgate_e2e::serde_json::json!({ "path": path }).to_string();
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "fs.read_file",
        &args,
    ])
    .current_dir(root)
    .run_within(Duration::from_secs(60))
    .json()
}

#[test]
fn a_path_longer_than_the_system_takes_is_denied_before_the_rules_read_it() {
    // 20,000 names in 40,000 bytes: the rules used to match each of its 20,000 folders in turn
    // (minutes, past the call's 5 s timeout).
    let dir = project();
    let path = "a/".repeat(20_000) + "x";
    let o = read_within_a_minute(dir.path(), &path);
    assert_eq!(o["error_kind"], "denied", "{o}");
    let content = o["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("it is 40001 bytes long, and a path may be at most 4096 bytes"),
        "{content}"
    );
    // The reason shows the start of the path, not all of it.
    assert!(content.len() < 1_000, "{}", content.len());
}

#[test]
fn a_name_longer_than_the_system_takes_is_denied() {
    let dir = project();
    let path = format!("docs/{}.md", "n".repeat(300));
    let o = read_within_a_minute(dir.path(), &path);
    assert_eq!(o["error_kind"], "denied", "{o}");
    assert!(
        o["content"].as_str().is_some_and(|c| c.contains(
            "one of its names is 303 bytes long, and a file or folder name may be at most 255 bytes"
        )),
        "{o}"
    );
}

/// Writes `text` as `policy.yaml` in a fresh folder.
fn policy_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

#[test]
fn a_rewrite_cannot_turn_a_denied_call_into_an_allowed_one() {
    let (_dir, policy) = policy_file(
        "version: 1\nplugins: [{name: testkit}]\nrules:\n  deny:\n    - tools: [echo]\n      args: { text: \"secrets/*\" }\n      reason: secrets are off limits\nscripts:\n  rewrite:\n    code: |\n      let a = args;\n      if a.text.starts_with(\"/\") { a.text = a.text.sub_string(1); }\n      a\n",
    );
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "--json",
        "echo",
        r#"{"text": "/secrets/id.pem"}"#,
    ]);
    let o = run.json();
    assert_eq!(o["error_kind"], "denied", "{o}");
    assert!(
        o["content"]
            .as_str()
            .is_some_and(|c| c.contains("secrets are off limits")),
        "{o}"
    );
}

#[test]
fn an_unknown_name_under_an_allow_list_gets_the_unknown_tool_answer() {
    let (_dir, policy) = policy_file(
        "version: 1\nplugins: [{name: testkit}]\nrules:\n  allow:\n    - tools: [sleep]\n",
    );
    let run = toolgate(&["call", "--policy", &policy, "--json", "ecko", "{}"]);
    let o = run.json();
    assert_eq!(o["error_kind"], "unknown_tool", "{o}");
    assert!(
        o["content"].as_str().is_some_and(|c| c.contains("echo")),
        "suggests the closest name: {o}"
    );
}

#[test]
fn an_allow_list_does_not_hide_read_tool_result_under_reduction() {
    let (_dir, policy) = policy_file(
        "version: 1\nplugins: [{name: testkit}]\nreduction: { store: \"memory://\" }\nrules:\n  allow:\n    - tools: [echo]\n",
    );
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "--json",
        "read_tool_result",
        r#"{"id": "no-such-result"}"#,
    ]);
    let o = run.json();
    assert_eq!(o["tool_name"], "read_tool_result", "{o}");
    assert_ne!(o["error_kind"], "denied", "the built-in is callable: {o}");
    assert_eq!(
        o["error_kind"], "not_found",
        "it ran and looked the id up: {o}"
    );
}

#[test]
fn validate_warns_about_a_rule_that_blocks_a_built_in() {
    let (_dir, policy) = policy_file(
        "version: 1\nplugins: [{name: testkit}]\nreduction: { store: \"memory://\" }\nrules:\n  deny:\n    - tools: [read_tool_result]\n      reason: no paging\n",
    );
    let run = toolgate(&["validate", &policy]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("read_tool_result") && run.stderr.contains("reduction"),
        "warns on stderr: {run:#?}"
    );
    assert!(
        run.stderr.contains(&format!("{policy}:6:7")),
        "points at the rule: {run:#?}"
    );
}

#[test]
fn validate_does_not_warn_when_no_rule_names_a_built_in() {
    let (_dir, policy) = policy_file(
        "version: 1\nplugins: [{name: testkit}]\nreduction: { store: \"memory://\" }\nrules:\n  allow:\n    - tools: [echo]\n",
    );
    let run = toolgate(&["validate", &policy]);
    run.assert_code(0);
    assert!(!run.stderr.contains("read_tool_result"), "{run:#?}");
}

#[test]
fn explain_states_the_order_in_which_arguments_are_rewritten_and_judged() {
    let policy = repo_path("policies/examples/fs-readonly.yaml");
    let run = toolgate(&[
        "explain",
        "--policy",
        policy.to_str().unwrap(),
        "fs.read_file",
    ]);
    run.assert_code(0);
    let order = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("order"))
        .unwrap_or_else(|| panic!("an order line: {}", run.stdout));
    let at = |step: &str| {
        order
            .find(step)
            .unwrap_or_else(|| panic!("{step} in {order}"))
    };
    assert!(at("rewrite") < at("rules"), "{order}");
    assert!(at("rules") < at("before"), "{order}");
}

#[test]
fn explain_under_reduction_shows_the_offload_size_not_the_character_cap() {
    let policy = repo_path("policies/default.yaml");
    let run = toolgate(&[
        "explain",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "fs.read_file",
    ]);
    run.assert_code(0);
    let e = run.json();
    assert_eq!(e["max_result_chars_applies"], false, "{e}");
    assert_eq!(e["max_result_bytes"], 50000, "{e}");
    assert_eq!(
        e["max_result_bytes_from"], "reduction.max_result_bytes",
        "{e}"
    );

    let text = toolgate(&[
        "explain",
        "--policy",
        policy.to_str().unwrap(),
        "fs.read_file",
    ]);
    text.assert_code(0);
    assert!(
        text.stdout.contains("max_result_bytes") && text.stdout.contains("50000"),
        "{}",
        text.stdout
    );
    assert!(
        !text
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with("max_result_chars")),
        "the character cap does not apply: {}",
        text.stdout
    );
}

#[test]
fn g8_overrides_merge_field_by_field_and_every_matching_rule_applies() {
    let dir = project();
    let policy = repo_path("policies/examples/fs-readonly.yaml");
    let run = toolgate(&[
        "explain",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "fs.read_file",
    ]);
    run.assert_code(0);
    let e = run.json();
    assert_eq!(e["timeout"], "10s", "{e}");
    assert_eq!(e["timeout_from"], "tools.\"fs.read_file\".timeout");
    assert_eq!(e["max_result_chars"], 20000, "{e}");
    assert_eq!(
        e["max_result_chars_from"],
        "tools.\"fs.*\".max_result_chars"
    );
    assert_eq!(e["sequential_group"], "disk", "{e}");
    assert_eq!(
        e["rules_from"],
        toolgate_e2e::serde_json::json!(["rules", "tools.\"fs.*\".rules"])
    );
    // The exact-name override sets no rules, yet the glob's rules still deny.
    let o = read_with_example(dir.path(), "key.pem");
    assert_eq!(o["error_kind"], "denied", "{o}");
}

#[test]
fn an_absolute_path_glob_is_an_error_at_its_position() {
    let (_dir, policy) =
        policy_file("version: 1\nrules:\n  deny:\n    - paths: { path: \"/etc/*\" }\n");
    let run = toolgate(&["validate", &policy]);
    run.assert_code(3);
    assert!(
        run.stderr
            .contains(&format!("{policy}:4:16: rules.deny[0].paths.path"))
            && run.stderr.contains("leading /"),
        "{run:#?}"
    );
}
