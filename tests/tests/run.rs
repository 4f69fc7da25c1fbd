//! `toolgate run`: one assistant turn of a conversation, read from a file or stdin.

use std::time::Duration;

use toolgate_e2e::{conversation, repo_path, testkit_policy, toolgate, toolgate_with_stdin};

fn tool_messages(out: &serde_json::Value) -> Vec<serde_json::Value> {
    out.as_array()
        .expect("the conversation is written back as an array")
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

#[test]
fn d1_several_calls_run_in_parallel_and_answer_in_the_order_of_the_calls() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\ndispatch: {timeout: 10m}\nplugins: [{name: testkit}]\n",
    )
    .unwrap();
    // The slow calls run until the test closes their connections: one at a time, the second
    // would not start while the first waits for the test.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let held = format!(
        r#"{{"ms": 120000, "until_closed": "{}"}}"#,
        listener.local_addr().unwrap()
    );
    let input = conversation(&[
        ("c1", "stubborn_sleep", &held),
        ("c2", "echo", r#"{"text": "two"}"#),
        ("c3", "stubborn_sleep", &held),
        ("c4", "echo", r#"{"text": "four"}"#),
    ]);
    let policy = policy.display().to_string();
    let run =
        std::thread::spawn(move || toolgate_with_stdin(&["run", "--policy", &policy], &input));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let peers: Vec<_> = (0..2).map(|_| listener.accept().unwrap().0).collect();
        let _ = tx.send(peers);
    });
    let peers = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the two slow calls run at the same time");
    drop(peers);
    let run = run.join().expect("the run's thread");
    run.assert_code(0);
    let out = run.json();
    let tools = tool_messages(&out);
    let ids: Vec<&str> = tools
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    assert_eq!(tools[1]["content"], "two");
    assert_eq!(tools[3]["content"], "four");
    assert_eq!(
        out.as_array().unwrap().len(),
        2 + 4,
        "the input messages are kept"
    );
}

#[test]
fn d6_a_failed_call_becomes_an_error_tool_message_and_the_others_keep_their_results() {
    let policy = testkit_policy();
    let input = conversation(&[
        ("ok", "echo", r#"{"text": "fine"}"#),
        ("bad", "fail", r#"{"message": "broken"}"#),
        ("gone", "no_such_tool", "{}"),
    ]);
    let run = toolgate_with_stdin(&["run", "--policy", &policy], &input);
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    assert_eq!(tools[0]["content"], "fine");
    assert!(tools[1]["content"].as_str().unwrap().contains("broken"));
    assert!(
        tools[2]["content"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
}

#[test]
fn d6_on_error_fail_aborts_the_turn_with_exit_code_5() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("fail.yaml");
    std::fs::write(
        &policy,
        "version: 1\nplugins: [{name: testkit}]\ndispatch: {on_error: fail}\n",
    )
    .unwrap();
    let input = conversation(&[("bad", "fail", r#"{"message": "broken"}"#)]);
    let run = toolgate_with_stdin(&["run", "--policy", policy.to_str().unwrap()], &input);
    run.assert_code(5);
    assert!(run.stdout.is_empty(), "nothing on stdout: {}", run.stdout);
    assert!(run.stderr.contains("broken"), "{}", run.stderr);
}

#[test]
fn run_reads_a_conversation_from_a_file() {
    let policy = testkit_policy();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("turn.json");
    std::fs::write(
        &file,
        conversation(&[("c1", "echo", r#"{"text": "from a file"}"#)]),
    )
    .unwrap();
    let run = toolgate(&["run", "--policy", &policy, file.to_str().unwrap()]);
    run.assert_code(0);
    assert_eq!(tool_messages(&run.json())[0]["content"], "from a file");
}

#[test]
fn run_reads_a_conversation_from_stdin_given_as_a_dash() {
    let policy = testkit_policy();
    let input = conversation(&[("c1", "echo", r#"{"text": "from stdin"}"#)]);
    let run = toolgate_with_stdin(&["run", "--policy", &policy, "-"], &input);
    run.assert_code(0);
    assert_eq!(tool_messages(&run.json())[0]["content"], "from stdin");
}

#[test]
fn run_accepts_a_request_body_and_keeps_its_other_fields() {
    let policy = testkit_policy();
    let file = repo_path("examples/testkit-turn.json");
    let run = toolgate(&["run", "--policy", &policy, file.to_str().unwrap()]);
    run.assert_code(0);
    let out = run.json();
    assert_eq!(out["model"], "any-model");
    let messages = out["messages"].as_array().unwrap();
    let tools: Vec<&serde_json::Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 4);
    assert_eq!(tools[0]["content"], "hello");
}

#[test]
fn run_leaves_answered_calls_alone() {
    let policy = testkit_policy();
    let mut input: serde_json::Value = serde_json::from_str(&conversation(&[
        ("done", "echo", r#"{"text": "again"}"#),
        ("todo", "echo", r#"{"text": "new"}"#),
    ]))
    .unwrap();
    input.as_array_mut().unwrap().push(serde_json::json!(
        {"role": "tool", "tool_call_id": "done", "content": "already answered"}
    ));
    let run = toolgate_with_stdin(&["run", "--policy", &policy], &input.to_string());
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["content"], "already answered");
    assert_eq!(tools[1]["tool_call_id"], "todo");
}

#[test]
fn bad_input_json_is_an_input_error_with_line_and_column() {
    let policy = testkit_policy();
    let run = toolgate_with_stdin(
        &["run", "--policy", &policy],
        "[\n  {\"role\": \"user\",,}\n]",
    );
    run.assert_code(4);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("<stdin>:2:"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn a_message_of_the_wrong_shape_is_an_input_error_with_its_position() {
    let policy = testkit_policy();
    let run = toolgate_with_stdin(
        &["run", "--policy", &policy],
        "[\n  {\"role\": \"wizard\", \"content\": \"hi\"}\n]",
    );
    run.assert_code(4);
    assert!(run.stderr.contains("<stdin>:2:"), "{}", run.stderr);
    assert!(run.stderr.contains("wizard"), "{}", run.stderr);
}

#[test]
fn a_missing_conversation_file_is_an_input_error() {
    let policy = testkit_policy();
    let run = toolgate(&["run", "--policy", &policy, "no/such/file.json"]);
    run.assert_code(4);
    assert!(run.stderr.contains("no/such/file.json"), "{}", run.stderr);
}

#[test]
fn the_shipped_example_turn_runs_on_the_built_in_policy() {
    let file = repo_path("examples/turn.json");
    let run = toolgate(&["run", file.to_str().unwrap()]);
    run.assert_code(0);
    let tools = tool_messages(&run.json());
    let ids: Vec<&str> = tools
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_list", "call_readme", "call_typo"]);
    assert!(tools[0]["content"].as_str().unwrap().contains("Cargo.toml"));
    assert!(
        tools[1]["content"].as_str().unwrap().contains("toolgate"),
        "README.md is read: {}",
        tools[1]["content"]
    );
    let typo = tools[2]["content"].as_str().unwrap();
    assert!(
        typo.contains("fs_read_file"),
        "the typo gets the model-facing name as a suggestion: {typo}"
    );
    // The built-in policy's profile is openai: tool messages are `{role, tool_call_id, content}`,
    // as the OpenAI API takes them (no `name` key).
    for message in &tools {
        let mut keys: Vec<&str> = message
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["content", "role", "tool_call_id"], "{message}");
    }
}
