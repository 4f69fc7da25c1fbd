//! `toolgate call`: one call through the whole guard, as a script would make it.

use std::time::Duration;

use toolgate_e2e::{Toolgate, repo_path, testkit_policy, toolgate};

fn call_json(args: &[&str]) -> toolgate_e2e::Run {
    let policy = testkit_policy();
    let mut all = vec!["call", "--policy", policy.as_str(), "--json"];
    all.extend_from_slice(args);
    toolgate(&all)
}

#[test]
fn a_successful_call_prints_the_tool_text_and_exits_0() {
    let policy = testkit_policy();
    let run = toolgate(&["call", "--policy", &policy, "echo", r#"{"text": "hello"}"#]);
    run.assert_code(0);
    assert_eq!(run.stdout, "hello\n");
}

#[test]
fn call_json_reports_every_outcome_field() {
    let run = call_json(&["echo", r#"{"text": "hello"}"#]);
    run.assert_code(0);
    let o = run.json();
    assert_eq!(o["content"], "hello");
    assert_eq!(o["is_error"], false);
    assert!(o["error_kind"].is_null());
    assert_eq!(o["truncated"], false);
    assert_eq!(o["output_chars"], 5);
    assert!(o["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0));
    assert!(o["result_id"].is_null());
    assert_eq!(o["tool_name"], "echo");
    assert_eq!(o["model_name"], "echo");
}

#[test]
fn d2_a_name_alias_and_an_argument_alias_resolve_to_the_real_tool() {
    let policy = repo_path("policies/examples/aliases.yaml")
        .display()
        .to_string();
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "--json",
        "say",
        r#"{"msg": "hi"}"#,
    ]);
    run.assert_code(0);
    let o = run.json();
    assert_eq!(o["content"], "hi");
    assert_eq!(o["model_name"], "say", "D8: the name the model used");
    assert_eq!(o["tool_name"], "echo", "D8: the real tool");
}

#[test]
fn d4_an_unknown_tool_is_an_error_result_that_suggests_the_closest_names() {
    let run = call_json(&["ecko", r#"{"text": "hi"}"#]);
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "unknown_tool");
    assert_eq!(o["is_error"], true);
    let text = o["content"].as_str().unwrap();
    assert!(
        text.contains("echo"),
        "the closest name is suggested: {text}"
    );
}

#[test]
fn d6_a_panicking_tool_is_a_tool_execution_panic() {
    let run = call_json(&["panic", "{}"]);
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "tool_execution_panic");
    assert!(
        o["content"].as_str().unwrap().contains("deliberate panic"),
        "{o}"
    );
}

#[test]
fn d6_a_failing_tool_is_a_tool_error_with_its_message() {
    let run = call_json(&["fail", r#"{"message": "disk full"}"#]);
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "tool_error");
    assert!(o["content"].as_str().unwrap().contains("disk full"));
}

#[test]
fn d6_a_call_past_its_timeout_is_a_timeout() {
    let run = call_json(&["--timeout", "100ms", "sleep", r#"{"ms": 5000}"#]);
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "timeout");
}

#[test]
fn g2_a_tool_that_ignores_cancellation_does_not_hold_the_call_past_its_deadline() {
    // The tool runs until the test closes this listener, which it does only after the program
    // has ended (or for two minutes).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let held = format!(
        r#"{{"ms": 120000, "until_closed": "{}"}}"#,
        listener.local_addr().unwrap()
    );
    let policy = testkit_policy();
    let args = ["call", "--policy", &policy, "--json", "--timeout", "200ms"];
    let run = Toolgate::new(&[&args[..], &["stubborn_sleep", &held]].concat())
        .run_within(Duration::from_secs(60));
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "timeout");
    drop(listener);
}

#[test]
fn d6_an_unknown_tool_via_call_json_is_unknown_tool() {
    let run = call_json(&["no_such_tool", "{}"]);
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "unknown_tool");
}

#[test]
fn d6_arguments_that_are_not_json_are_invalid_arguments() {
    let run = call_json(&["echo", "not json"]);
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "invalid_arguments");
}

#[test]
fn g3_a_long_text_result_is_cut_at_100000_characters_with_a_marker() {
    let run = call_json(&["big_output", r#"{"bytes": 150000}"#]);
    run.assert_code(0);
    let o = run.json();
    assert_eq!(o["truncated"], true);
    assert_eq!(o["output_chars"], 100_000);
    let text = o["content"].as_str().unwrap();
    assert!(text.ends_with("\n...[tool result truncated]"));
    assert_eq!(
        text.chars().count(),
        100_000 + "\n...[tool result truncated]".chars().count()
    );
}

#[test]
fn g4_a_multimodal_result_keeps_its_text_and_image_parts() {
    let run = call_json(&["multimodal", "{}"]);
    run.assert_code(0);
    let parts = run.json()["content"].as_array().cloned().unwrap();
    let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image_url", "text"]);
    assert!(
        parts[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
}

#[test]
fn a_failed_call_without_json_prints_the_error_text_and_exits_1() {
    let policy = testkit_policy();
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "fail",
        r#"{"message": "boom"}"#,
    ]);
    run.assert_code(1);
    assert!(run.stdout.starts_with("Error: "), "{}", run.stdout);
    assert!(run.stdout.contains("boom"));
}

#[test]
fn timeout_overrides_a_per_tool_timeout_of_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        "version: 1\nplugins: [{name: testkit}]\ntools:\n  sleep: {timeout: 10ms}\n",
    )
    .unwrap();
    let run = toolgate(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "--timeout",
        "5s",
        "sleep",
        r#"{"ms": 100}"#,
    ]);
    run.assert_code(0);
}

#[test]
fn a_bad_timeout_is_a_usage_error() {
    let policy = testkit_policy();
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "--timeout",
        "soon",
        "echo",
        "{}",
    ]);
    run.assert_code(2);
    assert!(run.stderr.contains("--timeout"), "{}", run.stderr);
}

#[test]
fn a_blank_session_id_is_a_usage_error() {
    let policy = testkit_policy();
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "--session",
        " padded ",
        "echo",
        "{}",
    ]);
    run.assert_code(2);
    assert!(run.stderr.contains("--session"), "{}", run.stderr);
}

#[test]
fn without_a_policy_the_built_in_default_reads_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    let run = toolgate_e2e::toolgate_in(
        dir.path(),
        &["call", "fs_read_file", r#"{"path": "notes.txt"}"#],
        "",
    );
    run.assert_code(0);
    assert!(run.stdout.contains("second line"), "{}", run.stdout);
}

#[test]
fn under_the_built_in_policy_a_call_reports_the_model_facing_and_the_real_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let run = toolgate_e2e::toolgate_in(
        dir.path(),
        &["call", "--json", "fs_read_file", r#"{"path": "notes.txt"}"#],
        "",
    );
    run.assert_code(0);
    let o = run.json();
    assert_eq!(o["model_name"], "fs_read_file");
    assert_eq!(o["tool_name"], "fs.read_file");
}

#[test]
fn under_the_built_in_policy_the_unmapped_real_name_is_unknown_and_suggests_the_mapped_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let run = toolgate_e2e::toolgate_in(
        dir.path(),
        &["call", "--json", "fs.read_file", r#"{"path": "notes.txt"}"#],
        "",
    );
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "unknown_tool");
    assert!(
        o["error"]
            .as_str()
            .unwrap()
            .contains("Did you mean: fs_read_file"),
        "{o}"
    );
}

/// The store's error keeps its cause in `source()` (the id's problem under "invalid result
/// id"); the model still reads the whole sentence.
#[test]
fn a_store_error_reaches_the_model_with_its_cause() {
    let policy = repo_path("policies/offload.yaml").display().to_string();
    let run = toolgate(&[
        "call",
        "--policy",
        &policy,
        "--json",
        "read_tool_result",
        r#"{"id": "a/b"}"#,
    ]);
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "invalid_id");
    assert_eq!(
        o["error"],
        "read_tool_result: invalid result id: the result id \"a/b\" has the character '/' at \
         byte 1; result ids use only A-Z, a-z, 0-9, '_' and '-'"
    );
}
