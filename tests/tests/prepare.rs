//! `toolgate prepare`: the history to send the model next, repaired (P1) and, with reduction on,
//! with the results of older tool rounds offloaded once the context budget is reached (R5).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate_e2e::{testkit_policy, toolgate_with_results, toolgate_with_stdin};

fn call(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}})
}

fn assistant(calls: &[&str]) -> Value {
    json!({"role": "assistant", "content": null,
           "tool_calls": calls.iter().map(|id| call(id, "echo")).collect::<Vec<_>>()})
}

fn tool(id: &str, content: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "name": "echo", "content": content})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// `toolgate prepare --report ARGS` on `history` (stdin), parsed.
fn prepare_report(args: &[&str], history: &Value) -> Value {
    let mut all = vec!["prepare", "--report"];
    all.extend_from_slice(args);
    let run = toolgate_with_stdin(&all, &history.to_string());
    run.assert_code(0);
    run.json()
}

#[test]
fn p1_a_dangling_call_gets_a_synthetic_error_answer_right_after_the_existing_answers() {
    let history = json!([
        user("go"),
        assistant(&["c1", "c2"]),
        tool("c1", "first"),
        user("and then?"),
    ]);
    let run = toolgate_with_stdin(&["prepare"], &history.to_string());
    run.assert_code(0);
    let out = run.json();
    let messages = out.as_array().expect("an array in, an array out");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
    assert_eq!(messages[2]["content"], "first");
    let synthetic = &messages[3];
    assert_eq!(synthetic["tool_call_id"], "c2");
    // The built-in policy's profile is openai, whose tool messages carry no `name`.
    assert!(synthetic.get("name").is_none(), "{synthetic}");
    let text = synthetic["content"].as_str().unwrap();
    assert!(text.starts_with("Error:"), "marked as an error: {text}");
    assert!(text.contains("no result"), "says what happened: {text}");
}

#[test]
fn p1_the_report_lists_added_answers_and_removed_orphans_and_duplicates() {
    let history = json!([
        user("go"),
        tool("stray", "answers nothing"),
        assistant(&["c1", "c2"]),
        tool("c1", "first"),
        tool("c1", "first again"),
        tool("zz", "not a call of this message"),
    ]);
    let report = prepare_report(&[], &history);
    assert_eq!(report["repair"]["added"], json!(["c2"]));
    assert_eq!(report["repair"]["removed_orphans"], json!(["stray", "zz"]));
    assert_eq!(report["repair"]["removed_duplicates"], json!(["c1"]));
    let ids: Vec<&str> = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
}

#[test]
fn p1_a_call_id_reused_in_a_later_turn_is_matched_by_position() {
    let history = json!([
        user("go"),
        assistant(&["call_0"]),
        tool("call_0", "answered in turn one"),
        assistant(&["call_0"]),
    ]);
    let report = prepare_report(&[], &history);
    assert_eq!(report["repair"]["added"], json!(["call_0"]));
    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[2]["content"], "answered in turn one");
    assert!(
        messages[4]["content"]
            .as_str()
            .unwrap()
            .starts_with("Error:")
    );
}

#[test]
fn prepare_keeps_the_other_fields_of_a_request_body() {
    let body =
        json!({"model": "m", "temperature": 0.2, "messages": [user("hi"), assistant(&["c1"])]});
    let run = toolgate_with_stdin(&["prepare", "--compact"], &body.to_string());
    run.assert_code(0);
    assert_eq!(run.stdout.lines().count(), 1, "--compact prints one line");
    let out = run.json();
    assert_eq!(out["model"], "m");
    assert_eq!(out["temperature"], 0.2);
    assert_eq!(out["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn prepare_an_input_that_is_not_a_message_list_is_an_input_error() {
    let run = toolgate_with_stdin(&["prepare"], "[{\"role\": \"user\", ");
    run.assert_code(4);
    assert!(
        run.stderr.starts_with("error: <stdin>:1:"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn prepare_without_reduction_only_repairs_however_large_the_history() {
    let big = "x".repeat(1_000_000);
    let history = json!([
        user("go"),
        assistant(&["c1"]),
        tool("c1", &big),
        assistant(&["c2"]),
        tool("c2", &big),
    ]);
    let policy = testkit_policy();
    let report = prepare_report(&["--policy", &policy], &history);
    assert_eq!(report["offload"]["offloaded"], json!([]));
    assert_eq!(
        report["offload"]["tokens_before"],
        report["offload"]["tokens_after"]
    );
    assert_eq!(
        report["messages"][2]["content"].as_str().unwrap().len(),
        1_000_000
    );
}

// ---------------------------------------------------------------------------------------------
// R5: offload of older rounds

/// A policy with reduction on, a tiny context budget and a store in `dir`.
fn tiny_budget_policy(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    let policy = dir.join("tiny-budget.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nreduction:\n  store: \"file://{}\"\n  max_context_tokens: 500\n  keep_recent_tool_rounds: 1\n  min_offload_bytes: 100\n",
            store.display()
        ),
    )
    .unwrap();
    policy
}

/// Two rounds of 4,000-byte results, the first one old: about 2,000 tokens, over a budget of 500.
fn two_rounds() -> (Value, String, String) {
    let old = format!("old result {}", "o".repeat(4_000));
    let recent = format!("recent result {}", "r".repeat(4_000));
    let history = json!([
        user("go"),
        assistant(&["old_call"]),
        tool("old_call", &old),
        assistant(&["recent_call"]),
        tool("recent_call", &recent),
        user("next"),
    ]);
    (history, old, recent)
}

fn prepare_in_session(dir: &Path, policy: &Path, history: &Value) -> Value {
    let input = dir.join("history.json");
    std::fs::write(&input, history.to_string()).unwrap();
    let run = toolgate_with_results(
        dir,
        &[
            "prepare",
            "--policy",
            policy.to_str().unwrap(),
            "--session",
            "S",
            "--report",
            input.to_str().unwrap(),
        ],
    );
    run.assert_code(0);
    run.json()
}

#[test]
fn r5_over_the_budget_the_older_round_is_offloaded_and_the_recent_one_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let policy = tiny_budget_policy(dir.path());
    let (history, _old, recent) = two_rounds();
    let report = prepare_in_session(dir.path(), &policy, &history);

    let offloaded = report["offload"]["offloaded"].as_array().unwrap();
    assert_eq!(offloaded.len(), 1, "{report}");
    assert_eq!(offloaded[0]["call_id"], "old_call");
    let id = offloaded[0]["result_id"].as_str().unwrap();

    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages.len(), history.as_array().unwrap().len());
    let notice = messages[2]["content"].as_str().unwrap();
    assert!(notice.contains(id), "the notice has the id: {notice}");
    assert!(notice.contains("read_tool_result"), "{notice}");
    assert_eq!(
        messages[4]["content"],
        recent.as_str(),
        "the recent round is unchanged"
    );

    let before = report["offload"]["tokens_before"].as_u64().unwrap();
    let after = report["offload"]["tokens_after"].as_u64().unwrap();
    assert!(before >= 500 && after < before, "{before} -> {after}");
}

#[test]
fn r5_preparing_again_in_another_process_reuses_the_same_id() {
    let dir = tempfile::tempdir().unwrap();
    let policy = tiny_budget_policy(dir.path());
    let (history, ..) = two_rounds();
    let first = prepare_in_session(dir.path(), &policy, &history);
    let second = prepare_in_session(dir.path(), &policy, &history);
    assert_eq!(
        first["offload"]["offloaded"], second["offload"]["offloaded"],
        "one id per round, however often it is prepared"
    );
    assert_eq!(first["messages"], second["messages"]);
    assert_eq!(second["offload"]["failed"], json!([]));

    let list = toolgate_with_results(
        dir.path(),
        &[
            "results",
            "list",
            "--policy",
            policy.to_str().unwrap(),
            "--json",
        ],
    );
    list.assert_code(0);
    assert_eq!(
        list.json().as_array().unwrap().len(),
        1,
        "saved once: {}",
        list.stdout
    );
}

#[test]
fn r5_an_offloaded_round_is_read_back_whole_in_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let policy = tiny_budget_policy(dir.path());
    let (history, old, _) = two_rounds();
    let report = prepare_in_session(dir.path(), &policy, &history);
    let id = report["offload"]["offloaded"][0]["result_id"]
        .as_str()
        .unwrap()
        .to_string();

    let run = toolgate_with_results(
        dir.path(),
        &[
            "call",
            "--policy",
            policy.to_str().unwrap(),
            "--session",
            "S",
            "read_tool_result",
            &format!(r#"{{"id":"{id}"}}"#),
        ],
    );
    run.assert_code(0);
    let expected_footer = format!(
        "\n\n[tool result \"{id}\": characters 0-{n} of {n}]\n",
        n = old.chars().count()
    );
    assert_eq!(run.stdout, format!("{old}{expected_footer}"));
}
