//! SPEC "Events and observability" (E1).

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use toolgate::Engine;
use toolgate::events::EventKind;
use toolgate::tool::{FnTool, ToolOutput};

#[tokio::test]
async fn e1_each_call_emits_start_updates_and_end_with_names_arguments_id_and_outcome() {
    let tool = FnTool::new(
        "work",
        "Work with progress.",
        obj(json!({})),
        |ctx, _args: Value| async move {
            ctx.progress("step 1");
            ctx.progress("step 2");
            Ok(ToolOutput::text("done"))
        },
    );
    let engine = Engine::builder(Default::default())
        .tool(tool)
        .build()
        .unwrap();
    let mut rx = engine.subscribe();
    let s = engine.session(Some("s-1")).unwrap();
    engine
        .call(&s, &call("call-7", "work", json!({"a": 1})))
        .await;
    let events: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::Start => "start".to_string(),
            EventKind::Update { message } => format!("update {message}"),
            EventKind::End { .. } => "end".to_string(),
            EventKind::Error { .. } => "error".to_string(),
            EventKind::Retry { .. } => "retry".to_string(),
            EventKind::Breaker { .. } => "breaker".to_string(),
        })
        .collect();
    assert_eq!(kinds, ["start", "update step 1", "update step 2", "end"]);
    for e in &events {
        assert_eq!(e.call_id, "call-7");
        assert_eq!(e.session.as_deref(), Some("s-1"));
        assert_eq!(e.tool_name, "work");
        assert_eq!(e.arguments, r#"{"a":1}"#);
    }
    match &events[3].kind {
        EventKind::End { outcome } => {
            assert_eq!(outcome.content.text(), "done");
            assert!(!outcome.is_error);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn e1_listeners_registered_on_the_builder_see_every_event_and_a_panicking_one_is_isolated() {
    let seen = Arc::new(Mutex::new(0usize));
    let s2 = seen.clone();
    let engine = Engine::builder(Default::default())
        .tool(echo("echo"))
        .on_event(|_| panic!("bad listener"))
        .on_event(move |_| *s2.lock().unwrap() += 1)
        .build()
        .unwrap();
    let o = one(&engine, "echo", json!({"text": "x"})).await;
    assert_eq!(o.content.text(), "x");
    assert_eq!(*seen.lock().unwrap(), 2, "start and end");
}

#[tokio::test]
async fn e1_events_serialise_to_json_with_a_kind_tag() {
    let engine = Engine::builder(Default::default())
        .tool(echo("echo"))
        .build()
        .unwrap();
    let mut rx = engine.subscribe();
    one(&engine, "echo", json!({"text": "x"})).await;
    let first = serde_json::to_value(rx.try_recv().unwrap()).unwrap();
    assert_eq!(first["event"], "start");
    assert_eq!(first["tool_name"], "echo");
}

#[tokio::test]
async fn e1_progress_messages_are_masked_by_redact_before_anyone_sees_them() {
    // A tool that reports a secret in its progress: the update event (and so the client's
    // notification, made from the same callback) carries the mask, and the call counts it.
    let tool = FnTool::new(
        "work",
        "Work with progress.",
        obj(json!({})),
        |ctx, _args: Value| async move {
            ctx.progress("using key AKIAIOSFODNN7EXAMPLE");
            Ok(ToolOutput::text("done"))
        },
    );
    let policy = toolgate::Policy {
        redact: Some(Default::default()),
        ..Default::default()
    };
    let engine = Engine::builder(policy).tool(tool).build().unwrap();
    let mut rx = engine.subscribe();
    let s = engine.session(Some("s-1")).unwrap();
    let outcome = engine.call(&s, &call("call-1", "work", json!({}))).await;
    let updates: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e.kind {
            EventKind::Update { message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["using key [REDACTED:aws_access_key_id]"]);
    assert_eq!(outcome.redactions, 1);
}

#[tokio::test]
async fn e1_a_call_whose_future_is_dropped_still_ends_as_cancelled() {
    // A tool that never answers; the caller gives up on it once it has started (a client that
    // cancelled, a connection that closed): the listeners still see the call end.
    let tool = FnTool::new(
        "hang",
        "Never answers.",
        obj(json!({})),
        |_ctx, _args: Value| async move {
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        },
    );
    let engine = Engine::builder(Default::default())
        .tool(tool)
        .build()
        .unwrap();
    let mut rx = engine.subscribe();
    let s = engine.session(Some("s-1")).unwrap();
    let c = call("call-9", "hang", json!({}));
    tokio::select! {
        _ = engine.call(&s, &c) => panic!("the hanging tool answered"),
        started = rx.recv() => assert!(matches!(started.map(|e| e.kind), Some(EventKind::Start))),
    }
    let end = rx
        .try_recv()
        .expect("an end event once the call was dropped");
    assert_eq!(end.call_id, "call-9");
    match &end.kind {
        EventKind::End { outcome } => {
            assert!(outcome.is_error);
            assert_eq!(outcome.error_kind, Some("cancelled"));
        }
        other => panic!("expected the end event, got {other:?}"),
    }
    assert!(rx.try_recv().is_err(), "one end event, no more");
}
