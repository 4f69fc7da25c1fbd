//! `Engine::run_turn`: runs only the calls of the last assistant message that have no answer
//! yet, and says where their answers go.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::{Value, json};
use toolgate::history::{Message, ToolCall};
use toolgate::tool::{FnTool, ToolOutput};
use toolgate::{Engine, Policy};

/// An echo tool that counts its runs.
fn counted_echo(runs: Arc<AtomicUsize>) -> impl toolgate::tool::Tool {
    FnTool::new(
        "echo",
        "Echo the text.",
        obj(json!({"text": {"type": "string"}})),
        move |_ctx, args: Value| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(
                    args["text"].as_str().unwrap_or("").to_string(),
                ))
            }
        },
    )
}

fn echo_call(id: &str, text: &str) -> ToolCall {
    ToolCall::new(id, "echo", json!({"text": text}).to_string())
}

#[tokio::test]
async fn run_turn_runs_only_calls_without_an_answer_and_inserts_after_the_existing_answers() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(Policy::default())
        .tool(counted_echo(runs.clone()))
        .build()
        .unwrap();
    let session = engine.session(None).unwrap();
    let mut history = vec![
        Message::user("go"),
        Message::assistant_calls(vec![echo_call("a", "first"), echo_call("b", "second")]),
        Message::tool("a", None, json!("first")),
        Message::user("and also this"),
    ];
    let turn = engine.run_turn(&session, &history).await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the answered call does not run again"
    );
    assert_eq!(turn.pending.insert_at, 3);
    turn.apply(&mut history);
    let shape: Vec<String> = history
        .iter()
        .map(|m| match m {
            Message::Tool { tool_call_id, .. } => format!("tool:{tool_call_id}"),
            other => other.role().to_string(),
        })
        .collect();
    assert_eq!(shape, ["user", "assistant", "tool:a", "tool:b", "user"]);
    assert!(matches!(&history[3], Message::Tool { content, .. } if content == "second"));
}

#[tokio::test]
async fn run_turn_with_every_call_answered_runs_nothing() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(Policy::default())
        .tool(counted_echo(runs.clone()))
        .build()
        .unwrap();
    let session = engine.session(None).unwrap();
    let history = vec![
        Message::assistant_calls(vec![echo_call("a", "first")]),
        Message::tool("a", None, json!("first")),
    ];
    let turn = engine.run_turn(&session, &history).await.unwrap();
    assert!(turn.messages.is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
