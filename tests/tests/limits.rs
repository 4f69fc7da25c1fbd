//! Resource limits through the binary: queue time kept apart from the timeout (G2), error texts
//! capped and offloaded like results (G3, R1), scripts bounded by their own wall clock.

use std::path::PathBuf;
use std::time::Duration;

use toolgate_e2e::{conversation, toolgate, toolgate_with_stdin};

/// A policy file in a fresh folder, loading the testkit plugin by name.
fn policy(dir: &tempfile::TempDir, yaml: &str) -> PathBuf {
    let path = dir.path().join("policy.yaml");
    std::fs::write(
        &path,
        format!("version: 1\nplugins:\n  - name: testkit\n{yaml}"),
    )
    .expect("the policy is written");
    path
}

fn tool_messages(out: &serde_json::Value) -> Vec<serde_json::Value> {
    out.as_array()
        .expect("the conversation is written back as an array")
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

#[test]
fn g2_waiting_for_a_concurrency_slot_does_not_count_against_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(&dir, "dispatch:\n  concurrency: 1\n  timeout: 500ms\n");
    let input = conversation(&[
        ("a", "sleep", r#"{"ms": 300}"#),
        ("b", "sleep", r#"{"ms": 300}"#),
        ("c", "sleep", r#"{"ms": 300}"#),
    ]);
    let run = toolgate_with_stdin(&["run", "--policy", p.to_str().unwrap()], &input);
    run.assert_code(0);
    for m in tool_messages(&run.json()) {
        assert_eq!(
            m["content"], "slept 300 ms",
            "every call runs to the end: {m}"
        );
    }
}

#[test]
fn call_json_reports_queued_ms_next_to_duration_ms() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(&dir, "");
    let run = toolgate(&[
        "call",
        "--policy",
        p.to_str().unwrap(),
        "--json",
        "sleep",
        r#"{"ms": 50}"#,
    ]);
    run.assert_code(0);
    let o = run.json();
    let queued = o["queued_ms"].as_f64().expect("queued_ms is a number");
    let duration = o["duration_ms"].as_f64().expect("duration_ms is a number");
    assert!(
        (0.0..50.0).contains(&queued),
        "a lone call hardly waits: {o}"
    );
    assert!(duration >= 50.0, "the run itself is the duration: {o}");
}

#[test]
fn g3_a_huge_error_message_is_capped_like_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(&dir, "dispatch:\n  max_result_chars: 1000\n");
    let message = "é".repeat(300_000);
    let args = serde_json::json!({ "message": message }).to_string();
    let input = conversation(&[("big", "fail", &args)]);
    let run = toolgate_with_stdin(&["run", "--policy", p.to_str().unwrap()], &input);
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    let content = tools[0]["content"].as_str().unwrap();
    assert!(
        content.chars().count() < 1_100,
        "the error text is cut near the 1000-character cap, got {} characters",
        content.chars().count()
    );
    assert!(
        content.ends_with("\n...[tool result truncated]"),
        "a cut error is marked like a cut result: {:?}",
        &content[content.len().saturating_sub(80)..]
    );
}

#[test]
fn r1_with_reduction_on_a_huge_error_message_is_offloaded_and_readable() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(&dir, "reduction: {}\n");
    let message = "x".repeat(300_000);
    let args = serde_json::json!({ "message": message }).to_string();
    let input = conversation(&[("big", "fail", &args)]);
    let results = dir.path().join("results");
    let run = toolgate_e2e::Toolgate::new(&["run", "--policy", p.to_str().unwrap()])
        .stdin(input)
        .results_dir(&results)
        .run();
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    let content = tools[0]["content"].as_str().unwrap();
    assert!(
        content.len() < 5_000,
        "the model gets a notice, not 300,000 characters ({} bytes)",
        content.len()
    );
    assert!(content.contains("read_tool_result"), "{content}");
    assert!(content.contains("300000 bytes"), "{content}");
}

#[test]
fn an_unknown_tool_name_is_cut_where_the_message_echoes_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(&dir, "");
    let name = "n".repeat(100_000);
    let input = conversation(&[("u", &name, "{}")]);
    let run = toolgate_with_stdin(&["run", "--policy", p.to_str().unwrap()], &input);
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    let content = tools[0]["content"].as_str().unwrap();
    assert!(
        content.len() < 2_000,
        "a 100,000-byte name is not echoed whole ({} bytes)",
        content.len()
    );
    assert!(content.contains("unknown tool"), "{content}");
}

#[test]
fn a_slow_after_hook_is_bounded_by_the_script_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "dispatch:\n  timeout: 1s\n  script_timeout: 300ms\nscripts:\n  after:\n    code: |\n      let s = \"a\";\n      loop { s = s.to_upper(); s = s.to_lower(); }\n",
    );
    let run = toolgate(&[
        "call",
        "--policy",
        p.to_str().unwrap(),
        "--json",
        "echo",
        r#"{"text": "hi"}"#,
    ]);
    run.assert_code(0);
    assert_eq!(run.json()["content"], "hi");
    assert!(
        run.elapsed < Duration::from_millis(2_500),
        "the after hook ran past its bound: {:?}",
        run.elapsed
    );
}

#[test]
fn a_script_loop_over_a_big_string_stops_at_the_script_timeout_even_without_a_call_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "dispatch:\n  timeout: none\n  script_timeout: 500ms\nscripts:\n  before:\n    code: |\n      let s = \"ab\";\n      while s.len() < 1000000 { s += s; }\n      loop { s = s.to_upper(); s = s.to_lower(); }\n",
    );
    // Few operations, each slow: without its bound the script would run for minutes.
    let run = toolgate_e2e::Toolgate::new(&[
        "call",
        "--policy",
        p.to_str().unwrap(),
        "--json",
        "echo",
        r#"{"text": "hi"}"#,
    ])
    .run_within(Duration::from_secs(60));
    run.assert_code(1);
    let o = run.json();
    assert_eq!(o["error_kind"], "tool_policy_panic", "{o}");
    assert!(
        o["content"].as_str().unwrap().contains("500ms"),
        "the message names the bound: {o}"
    );
}

#[test]
fn g3_an_fs_error_that_echoes_a_5_mb_path_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(
        &path,
        "version: 1\ndispatch:\n  max_result_chars: 2000\nplugins:\n  - name: fs\n    config: {root: \".\"}\n",
    )
    .unwrap();
    let missing = "d/".repeat(2_500_000);
    let args = serde_json::json!({ "path": missing }).to_string();
    let input = conversation(&[("p", "fs.read_file", &args)]);
    let run = toolgate_e2e::Toolgate::new(&["run", "--policy", path.to_str().unwrap()])
        .current_dir(dir.path())
        .stdin(input)
        .run();
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    let content = tools[0]["content"].as_str().unwrap();
    assert!(
        content.chars().count() <= 2_000 + 40,
        "the error text is held to the cap, got {} characters",
        content.chars().count()
    );
}

#[test]
fn a_turn_of_ten_thousand_echo_calls_gets_no_overloaded_answer() {
    let dir = tempfile::tempdir().unwrap();
    // The defaults: 16 threads, no concurrency cap.
    let p = policy(&dir, "");
    let ids: Vec<String> = (0..10_000).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .map(|id| (id.as_str(), "echo", r#"{"text": "hi"}"#))
        .collect();
    let run = toolgate_with_stdin(
        &["run", "--policy", p.to_str().unwrap()],
        &conversation(&calls),
    );
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    assert_eq!(tools.len(), 10_000);
    let not_hi: Vec<&serde_json::Value> = tools.iter().filter(|m| m["content"] != "hi").collect();
    assert!(
        not_hi.is_empty(),
        "{} calls were not answered \"hi\", the first: {}",
        not_hi.len(),
        not_hi[0]
    );
}

#[test]
fn a_call_that_finds_the_plugins_queue_full_is_overloaded_and_told_so() {
    let dir = tempfile::tempdir().unwrap();
    let p = policy(
        &dir,
        "    max_threads: 1\n    max_queued: 1\ndispatch:\n  timeout: 1m\n",
    );
    // One runs, one waits, the third finds the queue full.
    let input = conversation(&[
        ("a", "sleep", r#"{"ms": 2000}"#),
        ("b", "sleep", r#"{"ms": 2000}"#),
        ("c", "sleep", r#"{"ms": 2000}"#),
    ]);
    let run = toolgate_with_stdin(&["run", "--policy", p.to_str().unwrap()], &input);
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    let slept = tools
        .iter()
        .filter(|m| m["content"] == "slept 2000 ms")
        .count();
    let refused: Vec<&serde_json::Value> = tools
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|t| t.contains("overloaded"))
        })
        .collect();
    assert_eq!((slept, refused.len()), (2, 1), "{tools:?}");
    let text = refused[0]["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("queue is full") && text.contains("max_queued"),
        "the answer says the queue is full and which setting bounds it: {text}"
    );
}
