//! SPEC "Dispatch of one assistant turn" (D1-D8).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolgate::tool::{FnTool, ToolOutput};
use toolgate::{CallError, Engine};
use toolgate_policy::{AliasSpec, OnError};

/// A tool that records when it starts and ends, and how many run at once.
fn recorder(
    log: Arc<Mutex<Vec<String>>>,
    live: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) -> impl toolgate::tool::Tool {
    FnTool::new(
        "rec",
        "Record.",
        obj(json!({"id": {"type": "string"}, "ms": {"type": "integer"}})),
        move |_ctx, args: Value| {
            let log = log.clone();
            let live = live.clone();
            let peak = peak.clone();
            async move {
                let id = args["id"].as_str().unwrap_or("").to_string();
                let now = live.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                log.lock().unwrap().push(format!("start {id}"));
                tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                log.lock().unwrap().push(format!("end {id}"));
                live.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolOutput::text(id))
            }
        },
    )
}

// The tests that run `rec` do so on paused time: the clock moves only when every call waits
// on it, so which calls overlap and in what order they end is decided by their `ms` alone.
fn rec_engine(
    f: impl FnOnce(&mut toolgate::Policy),
) -> (Engine, Arc<Mutex<Vec<String>>>, Arc<AtomicUsize>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let peak = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(policy_with(f))
        .tool(recorder(
            log.clone(),
            Arc::new(AtomicUsize::new(0)),
            peak.clone(),
        ))
        .build()
        .unwrap();
    (engine, log, peak)
}

#[tokio::test(start_paused = true)]
async fn d1_calls_run_in_parallel_by_default_and_results_keep_call_order() {
    let (engine, log, peak) = rec_engine(|_| {});
    let s = engine.session(None).unwrap();
    // The first call takes longest, so it ends last; its result still comes first.
    let calls = vec![
        call("a", "rec", json!({"id": "a", "ms": 300})),
        call("b", "rec", json!({"id": "b", "ms": 100})),
        call("c", "rec", json!({"id": "c", "ms": 10})),
    ];
    let out = engine.dispatch(&s, &calls).await.unwrap();
    let texts: Vec<String> = out.iter().map(|o| o.content.text()).collect();
    assert_eq!(texts, ["a", "b", "c"]);
    assert_eq!(peak.load(Ordering::SeqCst), 3, "all three ran at once");
    let log = log.lock().unwrap();
    assert_eq!(log.last().map(String::as_str), Some("end a"));
}

#[tokio::test(start_paused = true)]
async fn d1_concurrency_cap_limits_calls_running_at_once() {
    let (engine, _log, peak) = rec_engine(|p| p.dispatch.concurrency = Some(2));
    let s = engine.session(None).unwrap();
    let calls: Vec<_> = (0..6)
        .map(|i| {
            call(
                &format!("c{i}"),
                "rec",
                json!({"id": i.to_string(), "ms": 30}),
            )
        })
        .collect();
    let out = engine.dispatch(&s, &calls).await.unwrap();
    assert_eq!(out.len(), 6);
    assert_eq!(peak.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn d1_sequential_runs_calls_one_by_one_in_order() {
    let (engine, log, peak) = rec_engine(|p| p.dispatch.sequential = true);
    let s = engine.session(None).unwrap();
    let calls = vec![
        call("a", "rec", json!({"id": "a", "ms": 50})),
        call("b", "rec", json!({"id": "b", "ms": 1})),
    ];
    engine.dispatch(&s, &calls).await.unwrap();
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    assert_eq!(
        *log.lock().unwrap(),
        ["start a", "end a", "start b", "end b"]
    );
}

fn alias_policy() -> toolgate::Policy {
    policy_with(|p| {
        p.aliases.insert(
            "show".into(),
            AliasSpec {
                names: vec!["display".into()],
                arguments: [(
                    "path".to_string(),
                    vec!["file".to_string(), "p".to_string()],
                )]
                .into(),
                position: None,
            },
        );
    })
}

#[tokio::test]
async fn d2_a_name_alias_resolves_to_its_tool() {
    let engine = Engine::builder(alias_policy())
        .tool(show_args("show"))
        .build()
        .unwrap();
    let o = one(&engine, "display", json!({"path": "a"})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(o.tool_name, "show");
    assert_eq!(o.model_name, "display");
}

#[tokio::test]
async fn d2_argument_aliases_are_renamed_at_the_top_level() {
    let engine = Engine::builder(alias_policy())
        .tool(show_args("show"))
        .build()
        .unwrap();
    let o = one(
        &engine,
        "show",
        json!({"file": "a.txt", "nested": {"file": 1}}),
    )
    .await;
    let args: Value = serde_json::from_str(&o.content.text()).unwrap();
    assert_eq!(args, json!({"path": "a.txt", "nested": {"file": 1}}));
}

#[tokio::test]
async fn d2_argument_alias_is_left_alone_when_the_real_name_is_present() {
    let engine = Engine::builder(alias_policy())
        .tool(show_args("show"))
        .build()
        .unwrap();
    let o = one(&engine, "show", json!({"file": "alias", "path": "real"})).await;
    let args: Value = serde_json::from_str(&o.content.text()).unwrap();
    assert_eq!(args, json!({"path": "real", "file": "alias"}));
}

#[tokio::test]
async fn d2_the_rewrite_sees_the_real_tool_name_and_the_renamed_arguments() {
    let mut p = alias_policy();
    p.scripts.rewrite = Some(script(
        r#"let a = args; a.seen_tool = tool; a.seen_model = model_name; a.had_path = ("path" in args); a"#,
    ));
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    let o = one(&engine, "display", json!({"p": "x"})).await;
    let args: Value = serde_json::from_str(&o.content.text()).unwrap();
    assert_eq!(args["seen_tool"], "show");
    assert_eq!(args["seen_model"], "display");
    assert_eq!(args["had_path"], true);
}

#[tokio::test]
async fn d3_the_rewrite_output_replaces_the_arguments() {
    let p = policy_with(|p| p.scripts.rewrite = Some(script(r#"#{ path: "/safe/" + args.path }"#)));
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    let o = one(&engine, "show", json!({"path": "a", "drop": true})).await;
    assert_eq!(o.content.text(), r#"{"path":"/safe/a"}"#);
}

#[tokio::test]
async fn d3_a_rewrite_failure_fails_that_call_only() {
    let p = policy_with(|p| {
        p.scripts.rewrite = Some(script(
            r#"if args.text == "bad" { throw "no bad words" } ()"#,
        ))
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let s = engine.session(None).unwrap();
    let out = engine
        .dispatch(
            &s,
            &[
                call("1", "echo", json!({"text": "bad"})),
                call("2", "echo", json!({"text": "good"})),
            ],
        )
        .await
        .unwrap();
    assert_eq!(out[0].error_kind(), Some("tool_policy_panic"));
    assert!(
        out[0].content.text().contains("no bad words"),
        "{}",
        out[0].content.text()
    );
    assert_eq!(out[1].content.text(), "good");
}

#[tokio::test]
async fn d3_a_rewrite_failure_goes_through_the_after_hook() {
    let p = policy_with(|p| {
        p.scripts.rewrite = Some(script(r#"throw "broken rewrite""#));
        p.scripts.after = Some(script(r#"throw "after saw " + outcome.error_kind"#));
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let mut events = engine.subscribe();
    let o = one(&engine, "echo", json!({"text": "x"})).await;
    assert_eq!(o.error_kind(), Some("tool_policy_panic"));
    let mut saw = false;
    while let Ok(e) = events.try_recv() {
        if let toolgate::events::EventKind::Error { message, .. } = &e.kind {
            saw |= message.contains("after saw tool_policy_panic");
        }
    }
    assert!(saw, "the after hook saw the rewrite failure");
}

#[tokio::test]
async fn d4_an_unknown_name_gets_the_handlers_text() {
    let p = policy_with(|p| {
        p.scripts.unknown_tool = Some(script(
            r#""no tool " + model_name + "; try " + suggestions[0]"#,
        ))
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "ecko", json!({})).await;
    assert!(!o.is_error());
    assert!(!o.known_tool);
    assert_eq!(o.content.text(), "no tool ecko; try echo");
}

#[tokio::test]
async fn d4_without_a_handler_an_unknown_name_is_an_error_with_suggestions() {
    let engine = Engine::builder(Default::default())
        .tool(echo("echo"))
        .tool(echo("search"))
        .build()
        .unwrap();
    let o = one(&engine, "serch", json!({})).await;
    assert_eq!(o.error_kind(), Some("unknown_tool"));
    match &o.error {
        Some(CallError::UnknownTool { suggestions, .. }) => assert_eq!(suggestions, &["search"]),
        other => panic!("{other:?}"),
    }
    assert!(
        o.content.text().contains("Did you mean: search?"),
        "{}",
        o.content.text()
    );
}

#[tokio::test]
async fn d4_an_unknown_name_is_never_routed_to_another_tool() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(Default::default())
        .tool(counter("count", runs.clone()))
        .build()
        .unwrap();
    let o = one(&engine, "Count", json!({})).await;
    assert_eq!(o.error_kind(), Some("unknown_tool"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn d4_the_unknown_path_runs_through_the_before_hook() {
    let p = policy_with(|p| {
        p.scripts.before = Some(script(
            r#"if tool == "nope" { "blocked: " + tool } else { () }"#,
        ))
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "nope", json!({})).await;
    assert_eq!(o.error_kind(), Some("denied"));
}

#[tokio::test]
async fn d4_the_unknown_path_runs_under_the_timeout() {
    let p = policy_with(|p| {
        p.dispatch.timeout = Some(Duration::from_millis(200));
        p.scripts.unknown_tool = Some(script("let x = 0; loop { x += 1; }"));
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "nope", json!({})).await;
    assert!(
        matches!(o.error_kind(), Some("timeout") | Some("tool_policy_panic")),
        "{:?}",
        o.error
    );
}

#[tokio::test(start_paused = true)]
async fn d6_on_error_model_turns_each_failure_into_that_calls_message() {
    let engine = Engine::builder(policy_with(|p| {
        p.dispatch.timeout = Some(Duration::from_millis(100))
    }))
    .tool(echo("echo"))
    .tool(failer("fail"))
    .tool(panicker("boom"))
    .tool(sleeper("sleep"))
    .build()
    .unwrap();
    let s = engine.session(None).unwrap();
    let calls = vec![
        call("1", "echo", json!({"text": "ok"})),
        call("2", "fail", json!({"message": "disk full"})),
        call("3", "boom", json!({})),
        call("4", "sleep", json!({"ms": 10_000})),
        call("5", "nope", json!({})),
        raw_call("6", "echo", "{not json"),
    ];
    let out = engine.dispatch(&s, &calls).await.unwrap();
    let kinds: Vec<_> = out.iter().map(|o| o.error_kind()).collect();
    assert_eq!(
        kinds,
        [
            None,
            Some("tool_error"),
            Some("tool_execution_panic"),
            Some("timeout"),
            Some("unknown_tool"),
            Some("invalid_arguments")
        ]
    );
    assert_eq!(out[0].content.text(), "ok");
    assert_eq!(out[1].content.text(), "Error: fail failed: disk full");
    for o in &out[1..] {
        assert!(
            o.content.text().starts_with("Error: "),
            "{}",
            o.content.text()
        );
    }
}

#[tokio::test]
async fn d6_on_error_fail_aborts_the_turn_with_the_typed_error() {
    let p = policy_with(|p| p.dispatch.on_error = OnError::Fail);
    let engine = Engine::builder(p)
        .tool(echo("echo"))
        .tool(failer("fail"))
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    let err = engine
        .dispatch(
            &s,
            &[
                call("1", "echo", json!({"text": "x"})),
                call("2", "fail", json!({"message": "m"})),
            ],
        )
        .await
        .expect_err("the turn aborts");
    assert_eq!(err.call_id, "2");
    assert!(matches!(err.error, CallError::ToolFailed { .. }));
}

#[tokio::test]
async fn d7_stop_on_error_skips_the_calls_after_a_failure() {
    let runs = Arc::new(AtomicUsize::new(0));
    let p = policy_with(|p| {
        p.dispatch.sequential = true;
        p.dispatch.stop_on_error = true;
    });
    let engine = Engine::builder(p)
        .tool(failer("fail"))
        .tool(counter("count", runs.clone()))
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    let out = engine
        .dispatch(
            &s,
            &[
                call("1", "count", json!({})),
                call("2", "fail", json!({})),
                call("3", "count", json!({})),
            ],
        )
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(out[2].error_kind(), Some("skipped"));
    assert!(
        out[2].content.text().contains("(2) failed"),
        "{}",
        out[2].content.text()
    );
}

#[tokio::test]
async fn d7_without_stop_on_error_later_calls_still_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let p = policy_with(|p| p.dispatch.sequential = true);
    let engine = Engine::builder(p)
        .tool(failer("fail"))
        .tool(counter("count", runs.clone()))
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    engine
        .dispatch(
            &s,
            &[call("1", "fail", json!({})), call("2", "count", json!({}))],
        )
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn d8_hooks_events_and_outcomes_carry_both_names() {
    let mut p = alias_policy();
    p.scripts.after = Some(script(r#"throw model_name + "->" + tool"#));
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    let mut events = engine.subscribe();
    let o = one(&engine, "display", json!({})).await;
    assert_eq!(
        (o.model_name.as_str(), o.tool_name.as_str()),
        ("display", "show")
    );
    let mut hook_saw = false;
    let mut end_saw = false;
    while let Ok(e) = events.try_recv() {
        assert_eq!(
            (e.model_name.as_str(), e.tool_name.as_str()),
            ("display", "show")
        );
        match e.kind {
            toolgate::events::EventKind::Error { message, .. } => {
                hook_saw |= message.contains("display->show")
            }
            toolgate::events::EventKind::End { .. } => end_saw = true,
            _ => {}
        }
    }
    assert!(hook_saw && end_saw);
}
