//! What `Engine::prepare` costs on a long conversation, measured against the goal of the CLI
//! issue. Speed targets live here only, never in tests.
//!
//! | bench | goal |
//! |---|---|
//! | `prepare/10k_messages_nothing_to_offload`: reduction on, under the budget | < 20 ms median |
//!
//! The history is 10,000 messages: a system message, then rounds of a user message, an
//! assistant message with two tool calls and the two tool messages answering them (each result
//! about 600 bytes), the last round's second call left unanswered so that repair has one
//! answer to add. With reduction on and a budget far above the estimate, `prepare` repairs,
//! estimates every message, and offloads nothing: the cost paid before every model request of
//! a long session that fits its budget.
//!
//! For comparison: the same history without reduction (repair and the estimate only; the
//! difference to the first is the offload step when the budget is not reached); the parts
//! `prepare` is made of (`part_repair`, `part_estimate`); and `clone_baseline`, a plain clone of
//! the history, the floor for any function that returns a new history (P2).
//!
//! ```text
//! cargo bench -p toolgate --bench prepare
//! ```

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::history::{ByteEstimator, Message, TokenEstimator, ToolCall, repair};
use toolgate::tool::{FnTool, Tool, ToolOutput};
use toolgate::{Engine, Policy};
use toolgate_policy::ReductionSettings;

/// Messages in the benchmarked history.
const MESSAGES: usize = 10_000;

fn echo() -> Arc<dyn Tool> {
    Arc::new(FnTool::new(
        "echo",
        "Echo the text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |_ctx, args: Value| async move {
            Ok(ToolOutput::text(
                args["text"].as_str().unwrap_or("").to_string(),
            ))
        },
    ))
}

fn engine(reduction: bool) -> Engine {
    let mut policy = Policy::default();
    if reduction {
        policy.reduction = Some(ReductionSettings {
            store: Some("memory://".into()),
            // Far above the estimate of the history: nothing needs offloading.
            max_context_tokens: u64::MAX,
            ..ReductionSettings::default()
        });
    }
    Engine::builder(policy)
        .tool_arc(echo())
        .build()
        .unwrap_or_else(|e| panic!("the bench engine builds: {e}"))
}

/// `MESSAGES` messages of tool rounds; the last call has no answer.
fn history() -> Vec<Message> {
    let result = "line of a tool result, about sixty bytes long, repeated.\n".repeat(10);
    let mut h = vec![Message::System {
        content: Value::String("You are a helpful assistant with tools.".into()),
        extra: Default::default(),
    }];
    let mut round = 0;
    while h.len() < MESSAGES {
        let (a, b) = (format!("call_{round}_a"), format!("call_{round}_b"));
        h.push(Message::user(format!(
            "Question number {round}: please look it up."
        )));
        h.push(Message::assistant_calls(vec![
            ToolCall::new(&a, "echo", r#"{"text": "first lookup"}"#),
            ToolCall::new(&b, "echo", r#"{"text": "second lookup"}"#),
        ]));
        h.push(Message::tool(
            a,
            Some("echo".into()),
            Value::String(result.clone()),
        ));
        h.push(Message::tool(
            b,
            Some("echo".into()),
            Value::String(result.clone()),
        ));
        round += 1;
    }
    // 1 + 4n messages: cutting the last one leaves the last call dangling, as an interrupted
    // turn would.
    h.truncate(MESSAGES);
    assert!(matches!(h.last(), Some(Message::Tool { .. })));
    h
}

fn prepare(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let history = history();
    let with_reduction = engine(true);
    let without = engine(false);
    let session = with_reduction.session(Some("bench")).expect("session");
    let session_plain = without.session(Some("bench")).expect("session");

    // Check once, outside the measurement, what is measured: one answer added, nothing
    // offloaded, every message kept.
    for (engine, session) in [(&with_reduction, &session), (&without, &session_plain)] {
        let p = rt.block_on(engine.prepare(session, &history));
        assert_eq!(p.repair.added.len(), 1, "{:?}", p.repair);
        assert!(p.offload.offloaded.is_empty() && p.offload.failed.is_empty());
        assert_eq!(p.messages.len(), history.len() + 1);
    }

    let mut g = c.benchmark_group("prepare");
    g.bench_function("10k_messages_nothing_to_offload", |b| {
        b.iter(|| black_box(rt.block_on(with_reduction.prepare(&session, black_box(&history)))))
    });
    g.bench_function("10k_messages_no_reduction", |b| {
        b.iter(|| black_box(rt.block_on(without.prepare(&session_plain, black_box(&history)))))
    });
    // Where the time goes: the parts `prepare` is made of, one at a time.
    let estimator = ByteEstimator;
    g.bench_function("part_repair", |b| {
        b.iter(|| black_box(repair(black_box(&history))))
    });
    g.bench_function("part_estimate", |b| {
        b.iter(|| {
            black_box(&history)
                .iter()
                .map(|m| estimator.message(m))
                .sum::<u64>()
        })
    });
    g.bench_function("clone_baseline", |b| {
        b.iter(|| black_box(black_box(&history).clone()))
    });
    g.finish();
}

criterion_group!(benches, prepare);
criterion_main!(benches);
