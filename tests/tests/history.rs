//! `toolgate run` and `toolgate prepare` on histories that are not a plain "last assistant
//! message, nothing after it": the conversation comes back as given, answers go right after
//! their assistant message, duplicate call ids, and a run followed by a prepare loses nothing.

use serde_json::{Value, json};
use toolgate_e2e::{testkit_policy, toolgate_with_stdin};

fn echo_call(id: &str, text: &str) -> Value {
    json!({"id": id, "type": "function",
           "function": {"name": "echo", "arguments": json!({"text": text}).to_string()}})
}

/// `toolgate ARGS --policy testkit` on `input`, exit 0, stdout as JSON.
fn toolgate_json(args: &[&str], input: &str) -> Value {
    let policy = testkit_policy();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--policy", &policy]);
    let run = toolgate_with_stdin(&all, input);
    run.assert_code(0);
    run.json()
}

fn roles_and_ids(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m["tool_call_id"].as_str() {
            Some(id) => format!("tool:{id}"),
            None => m["role"].as_str().unwrap().to_string(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The conversation as given

#[test]
fn run_keeps_the_key_order_of_every_message_and_an_explicit_null_content() {
    // Compact, with keys in no sorted order: the output starts with exactly these bytes.
    let messages = r#"[{"role":"user","zeta":1,"content":"go","alpha":{"y":1,"b":2}},{"tool_calls":[{"type":"function","id":"c1","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}],"role":"assistant","content":null,"refusal":null}]"#;
    let policy = testkit_policy();
    let run = toolgate_with_stdin(&["run", "--compact", "--policy", &policy], messages);
    run.assert_code(0);
    let kept = &messages[..messages.len() - 1];
    assert!(
        run.stdout.starts_with(kept),
        "the input messages come back byte for byte:\n in: {messages}\nout: {}",
        run.stdout
    );
    assert!(
        run.stdout.contains(r#""tool_call_id":"c1""#),
        "{}",
        run.stdout
    );
}

#[test]
fn run_keeps_the_key_order_of_a_request_body() {
    let body = r#"{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}]}],"temperature":0.5,"stream":false}"#;
    let policy = testkit_policy();
    let run = toolgate_with_stdin(&["run", "--compact", "--policy", &policy], body);
    run.assert_code(0);
    let (head, _) = body.split_once("]}]").unwrap();
    assert!(run.stdout.starts_with(head), "{}", run.stdout);
    assert!(
        run.stdout
            .trim_end()
            .ends_with(r#"],"temperature":0.5,"stream":false}"#),
        "the fields after messages stay after it: {}",
        run.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// Where answers go

/// The last assistant message has one answered call and one pending, and a user message after
/// its answers.
fn interrupted_turn() -> Value {
    json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null,
         "tool_calls": [echo_call("a", "first"), echo_call("b", "second")]},
        {"role": "tool", "tool_call_id": "a", "content": "first"},
        {"role": "user", "content": "and also this"}
    ])
}

#[test]
fn run_inserts_answers_right_after_the_existing_answers_of_their_assistant_message() {
    let out = toolgate_json(&["run"], &interrupted_turn().to_string());
    assert_eq!(
        roles_and_ids(&out),
        ["user", "assistant", "tool:a", "tool:b", "user"]
    );
    assert_eq!(out[3]["content"], "second");
}

#[test]
fn prepare_after_run_keeps_every_real_result() {
    let ran = toolgate_json(&["run"], &interrupted_turn().to_string());
    let report = toolgate_json(&["prepare", "--report"], &ran.to_string());
    assert_eq!(report["repair"]["added"], json!([]), "{report:#}");
    assert_eq!(report["repair"]["removed_orphans"], json!([]), "{report:#}");
    assert_eq!(report["messages"][3]["content"], "second");
}

#[test]
fn prepare_moves_a_late_answer_up_to_its_call_instead_of_dropping_it() {
    // What an older `run` wrote: the answer to "b" after the user message.
    let mut history = interrupted_turn();
    history
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "tool", "tool_call_id": "b", "name": "echo", "content": "second"}));
    let report = toolgate_json(&["prepare", "--report"], &history.to_string());
    assert_eq!(
        roles_and_ids(&report["messages"]),
        ["user", "assistant", "tool:a", "tool:b", "user"]
    );
    assert_eq!(report["messages"][3]["content"], "second");
    assert_eq!(report["repair"]["added"], json!([]));
    assert_eq!(report["repair"]["removed_orphans"], json!([]));
    assert_eq!(report["repair"]["moved"], json!(["b"]));
}

// ---------------------------------------------------------------------------------------------
// Duplicate call ids

fn three_calls_with_one_id() -> Value {
    json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            echo_call("x", "one"), echo_call("x", "two"), echo_call("x", "three")
        ]}
    ])
}

#[test]
fn run_makes_duplicate_call_ids_unique_and_answers_every_call() {
    let out = toolgate_json(&["run"], &three_calls_with_one_id().to_string());
    let ids: Vec<&str> = out[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["x", "x_2", "x_3"]);
    assert_eq!(
        roles_and_ids(&out),
        ["user", "assistant", "tool:x", "tool:x_2", "tool:x_3"]
    );
    let answers: Vec<&str> = (2..5)
        .map(|i| out[i]["content"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["one", "two", "three"]);
}

#[test]
fn prepare_after_run_with_duplicate_call_ids_keeps_an_answer_for_every_call() {
    let ran = toolgate_json(&["run"], &three_calls_with_one_id().to_string());
    let report = toolgate_json(&["prepare", "--report"], &ran.to_string());
    assert_eq!(report["messages"], ran, "{report:#}");
    assert_eq!(report["repair"]["removed_duplicates"], json!([]));
}

#[test]
fn prepare_gives_repeated_answers_to_repeated_call_ids_in_order() {
    // What an older `run` wrote: three answers, all with the id "x".
    let mut history = three_calls_with_one_id();
    for text in ["one", "two", "three"] {
        history
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "tool", "tool_call_id": "x", "name": "echo", "content": text}));
    }
    let report = toolgate_json(&["prepare", "--report"], &history.to_string());
    let messages = &report["messages"];
    assert_eq!(
        roles_and_ids(messages),
        ["user", "assistant", "tool:x", "tool:x_2", "tool:x_3"]
    );
    assert_eq!(messages[1]["tool_calls"][2]["id"], "x_3");
    assert_eq!(messages[4]["content"], "three");
    assert_eq!(report["repair"]["removed_duplicates"], json!([]));
    assert_eq!(report["repair"]["added"], json!([]));
    assert_eq!(
        report["repair"]["renamed"],
        json!([{"from": "x", "to": "x_2"}, {"from": "x", "to": "x_3"}])
    );
}
