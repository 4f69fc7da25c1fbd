//! SPEC "Identity" (C1): every call carries its caller, from the session handle a host calls
//! through to the tool, the events and the audit line. The whole path through `toolgate serve
//! --http` and its authentication is in tests/tests/team_auth.rs.

use std::sync::Arc;

use serde_json::json;
use toolgate::events::EventKind;
use toolgate::history::ToolCall;
use toolgate::tool::{FnTool, ToolOutput};
use toolgate::{Caller, Engine, Policy};

/// A tool that answers with the name and groups of whoever called it.
fn whoami() -> impl toolgate::tool::Tool {
    FnTool::new(
        "whoami",
        "Say who calls.",
        json!({"type": "object"}),
        |ctx, _args| async move {
            Ok(ToolOutput::text(format!(
                "{} {:?}",
                ctx.caller.name(),
                ctx.caller.groups()
            )))
        },
    )
}

fn engine() -> Engine {
    Engine::builder(Policy::default())
        .tool(whoami())
        .build()
        .unwrap()
}

#[tokio::test]
async fn c1_a_call_made_through_a_handle_with_a_caller_carries_it_to_the_tool_and_the_events() {
    let engine = engine();
    let mut rx = engine.subscribe();
    let alice = Arc::new(Caller::new("alice", vec!["dev".into()]));
    let session = engine.session(Some("s-1")).unwrap().with_caller(alice);
    let outcome = engine
        .call(&session, &ToolCall::new("c-1", "whoami", "{}"))
        .await;
    assert_eq!(outcome.content.text(), r#"alice ["dev"]"#);
    let events: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    for e in &events {
        assert_eq!(e.caller.name(), "alice");
    }
    assert!(matches!(events[1].kind, EventKind::End { .. }));
    let json = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(json["principal"], "alice", "{json}");
}

#[tokio::test]
async fn c1_without_a_caller_a_call_is_the_local_callers() {
    let engine = engine();
    let session = engine.session(Some("s-1")).unwrap();
    assert!(session.caller().is_local());
    let outcome = engine
        .call(&session, &ToolCall::new("c-1", "whoami", "{}"))
        .await;
    assert_eq!(outcome.content.text(), "local []");
}

#[tokio::test]
async fn c1_the_caller_belongs_to_the_handle_not_to_the_session_state() {
    let engine = engine();
    let alice = Arc::new(Caller::new("alice", vec![]));
    let _with = engine.session(Some("s-1")).unwrap().with_caller(alice);
    // Another handle of the same id says nothing of alice.
    let other = engine.session(Some("s-1")).unwrap();
    let outcome = engine
        .call(&other, &ToolCall::new("c-1", "whoami", "{}"))
        .await;
    assert_eq!(outcome.content.text(), "local []");
}

#[tokio::test]
async fn c1_hooks_see_the_caller() {
    let policy = toolgate_policy::load_str(
        r#"version: 1
scripts:
  before:
    code: |
      if caller.name == "mallory" || caller.groups.contains("banned") {
        return "not for " + caller.name;
      }
"#,
        std::path::Path::new("p.yaml"),
    )
    .unwrap();
    let engine = Engine::builder(policy).tool(whoami()).build().unwrap();
    let call = ToolCall::new("c-1", "whoami", "{}");
    for (name, groups, denied) in [
        ("mallory", vec![], true),
        ("alice", vec!["banned".to_owned()], true),
        ("alice", vec!["dev".to_owned()], false),
    ] {
        let caller = Arc::new(Caller::new(name, groups));
        let session = engine.session(None).unwrap().with_caller(caller);
        let outcome = engine.call(&session, &call).await;
        assert_eq!(outcome.is_error(), denied, "{name}: {outcome:?}");
        if denied {
            assert!(outcome.content.text().contains(&format!("not for {name}")));
        }
    }
}
