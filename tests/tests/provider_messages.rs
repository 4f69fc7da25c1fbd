//! The messages `toolgate run` writes and the tools `toolgate tools --json` lists, checked against
//! the provider's own types: the `openai` Python SDK's `ChatCompletionToolParam`,
//! `ChatCompletionToolMessageParam` and `ChatCompletionUserMessageParam`, validated strictly
//! (extra keys refused, content parts checked one by one).

use serde_json::{Value, json};
use toolgate_e2e::{testkit_policy, toolgate, toolgate_with_stdin, venv_python_run};

/// Validates `{"tools": [...], "messages": [...]}` from stdin with the installed SDK's types and
/// `extra='forbid'` (on a list, so the config reaches the nested TypedDicts). Content parts are
/// `Iterable`s, which pydantic validates lazily: they are consumed to check them.
const VALIDATE: &str = r#"
import json, sys
from typing import List
from pydantic import ConfigDict, TypeAdapter
from openai.types.chat import (
    ChatCompletionToolParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)

strict = ConfigDict(extra="forbid")
tools = TypeAdapter(List[ChatCompletionToolParam], config=strict)
by_role = {
    "tool": TypeAdapter(List[ChatCompletionToolMessageParam], config=strict),
    "user": TypeAdapter(List[ChatCompletionUserMessageParam], config=strict),
}
data = json.load(sys.stdin)
tools.validate_python(data["tools"])
for i, message in enumerate(data["messages"]):
    adapter = by_role.get(message.get("role"))
    if adapter is None:
        sys.exit(f"message {i}: unexpected role {message.get('role')!r}")
    try:
        (valid,) = adapter.validate_python([message])
        if not isinstance(valid["content"], str):
            list(valid["content"])
    except Exception as e:
        sys.exit(f"message {i} is not a valid {message['role']} message: {e}\n{json.dumps(message)}")
print("ok", len(data["tools"]), len(data["messages"]))
"#;

/// The testkit plugin under `name_profile: PROFILE`, in `dir`.
fn policy(dir: &std::path::Path, profile: &str) -> String {
    let path = dir.join(format!("{profile}.yaml"));
    std::fs::write(
        &path,
        format!("version: 1\nname_profile: {profile}\nplugins: [{{name: testkit}}]\n"),
    )
    .unwrap();
    path.display().to_string()
}

/// A turn with a text, an error and an image result.
fn turn() -> Value {
    json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c_text", "type": "function", "function": {"name": "echo", "arguments": "{\"text\": \"hello\"}"}},
            {"id": "c_error", "type": "function", "function": {"name": "fail", "arguments": "{\"message\": \"disk full\"}"}},
            {"id": "c_image", "type": "function", "function": {"name": "multimodal", "arguments": "{}"}}
        ]}
    ])
}

/// `toolgate run` on [`turn`] under `policy`: the whole conversation it prints.
fn run(policy: &str) -> Vec<Value> {
    let run = toolgate_with_stdin(&["run", "--policy", policy], &turn().to_string());
    run.assert_code(0);
    run.json().as_array().unwrap().clone()
}

#[test]
fn under_the_openai_profile_tools_and_appended_messages_validate_as_the_openai_sdk_types() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(dir.path(), "openai");
    let tools = toolgate(&["tools", "--json", "--policy", &policy]);
    tools.assert_code(0);
    let messages = run(&policy);
    let added = &messages[2..];
    assert!(added.len() >= 3, "every call is answered: {added:#?}");
    let input = json!({"tools": tools.json(), "messages": added}).to_string();
    let check = venv_python_run(VALIDATE, &[], &input);
    assert_eq!(check.code, 0, "the openai SDK refuses them: {check:#?}");
    assert!(check.stdout.starts_with("ok "), "{check:#?}");
}

#[test]
fn under_the_openai_profile_images_go_to_a_user_message_after_the_tool_messages() {
    let dir = tempfile::tempdir().unwrap();
    let messages = run(&policy(dir.path(), "openai"));
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "tool", "user"],
        "{messages:#?}"
    );
    let image_answer = &messages[4];
    assert_eq!(image_answer["tool_call_id"], "c_image");
    let answer_text = image_answer.to_string();
    assert!(!answer_text.contains("image_url"), "{image_answer:#}");
    assert!(
        answer_text.contains("Here is a one-pixel image:")
            && answer_text.contains("That was the image."),
        "the text parts stay: {image_answer:#}"
    );
    assert!(
        answer_text.contains("user message"),
        "the tool text says where the image went: {image_answer:#}"
    );
    let images = messages[5]["content"].as_array().unwrap();
    assert!(
        images[0]["text"].as_str().unwrap().contains("c_image"),
        "the user message says which call the image came from: {images:#?}"
    );
    assert_eq!(images[1]["type"], "image_url");
    assert!(
        images[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
}

#[test]
fn under_the_mcp_profile_images_stay_in_the_tool_message() {
    let messages = run(&testkit_policy());
    assert_eq!(messages.len(), 5, "no extra user message: {messages:#?}");
    let parts = messages[4]["content"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image_url", "text"]);
    assert_eq!(messages[4]["name"], "multimodal");
}
