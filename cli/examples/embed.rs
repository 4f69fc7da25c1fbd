//! Embedding toolgate in a Rust agent: the example of the README's "Rust API" section.
//!
//! Run it with `cargo run -p toolgate-cli --example embed`.

use serde_json::json;
use toolgate::history::{Message, ToolCall};
use toolgate::tool::{FnTool, ToolOutput};
use toolgate::{Engine, Policy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A policy from YAML (or `toolgate_policy::load_file(path)`).
    let policy: Policy = toolgate_policy::load_str(
        "version: 1\ndispatch: {timeout: 5s, max_result_chars: 10000}\n",
        "inline.yaml".as_ref(),
    )?;

    // The engine: the policy plus the host's own tools (plugins come from the policy).
    let engine = Engine::builder(policy)
        .tool(FnTool::new(
            "add",
            "Add two integers.",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }),
            |_ctx, args| async move {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(ToolOutput::text(sum.to_string()))
            },
        ))
        .build()?;
    let session = engine.session(Some("user-42"))?;

    // What to send the model as `tools`.
    for spec in engine.visible_tools(&session) {
        println!("tool: {} - {}", spec.name, spec.description);
    }

    // The model answered with two calls, one of them to a tool that does not exist.
    let mut history = vec![
        Message::user("What is 2 + 3?"),
        Message::assistant_calls(vec![
            ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#),
            ToolCall::new("call_2", "sum", r#"{"a": 2, "b": 3}"#),
        ]),
    ];
    // One tool message per call, in the order of the calls; failures are error results the
    // model can act on (unless the policy says `on_error: fail`). Only calls without an answer
    // run; `apply` puts the answers right after the message's existing answers.
    let turn = engine.run_turn(&session, &history).await?;
    turn.apply(&mut history);
    for message in &turn.messages {
        println!("{}", serde_json::to_string(message)?);
    }

    // Or one call at a time, with the whole outcome.
    let outcome = engine
        .call(
            &session,
            &ToolCall::new("call_3", "add", r#"{"a": 40, "b": 2}"#),
        )
        .await;
    assert_eq!(outcome.content.text(), "42");
    assert!(!outcome.is_error());
    Ok(())
}
