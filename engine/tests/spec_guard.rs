//! SPEC "Guard" (G1-G8): what happens to one call.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};
use toolgate::events::EventKind;
use toolgate::guard::{CallResult, Invocation, Layer, Next, TRUNCATION_MARKER};
use toolgate::tool::{BoxFuture, ContentPart, FnTool, ToolOutput};
use toolgate::{CallError, Engine};
use toolgate_policy::{CharCap, Rule, Rules, ToolOverride};

fn deny_rule(tools: &[&str], args: &[(&str, &str)], reason: Option<&str>) -> Rule {
    Rule {
        tools: tools.iter().map(|s| glob(s)).collect(),
        args: args.iter().map(|(k, v)| (k.to_string(), glob(v))).collect(),
        reason: reason.map(str::to_string),
        ..Rule::default()
    }
}

#[tokio::test]
async fn g1_the_before_hook_can_deny_and_the_tool_does_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let p = policy_with(|p| {
        p.scripts.before = Some(script(r#"if tool == "count" { "not today" } else { () }"#))
    });
    let engine = Engine::builder(p)
        .tool(counter("count", runs.clone()))
        .build()
        .unwrap();
    let o = one(&engine, "count", json!({})).await;
    assert_eq!(o.error_kind(), Some("denied"));
    assert!(o.content.text().contains("not today"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn g1_before_returning_false_denies_and_true_allows() {
    let p = policy_with(|p| p.scripts.before = Some(script(r#"args.ok"#)));
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    assert_eq!(
        one(&engine, "echo", json!({"ok": false}))
            .await
            .error_kind(),
        Some("denied")
    );
    assert_eq!(
        one(&engine, "echo", json!({"ok": true, "text": "y"}))
            .await
            .content
            .text(),
        "y"
    );
}

#[tokio::test]
async fn g1_the_after_hook_still_runs_and_sees_the_denial() {
    let p = policy_with(|p| {
        p.scripts.before = Some(script(r#""denied by test""#));
        p.scripts.after = Some(script(
            r#"throw "after: " + outcome.error_kind + " / " + outcome.error"#,
        ));
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let mut events = engine.subscribe();
    one(&engine, "echo", json!({})).await;
    let msgs: Vec<String> = std::iter::from_fn(|| events.try_recv().ok())
        .filter_map(|e| match e.kind {
            EventKind::Error { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("after: denied / tool call denied: denied by test")),
        "{msgs:?}"
    );
}

#[tokio::test]
async fn g1_declarative_rules_are_checked_before_scripts() {
    let p = policy_with(|p| {
        p.rules
            .deny
            .push(deny_rule(&["echo"], &[], Some("rule says no")));
        p.scripts.before = Some(script(r#"throw "the script must not run""#));
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "echo", json!({})).await;
    assert_eq!(o.error_kind(), Some("denied"));
    assert!(o.content.text().contains("rule says no"));
}

#[tokio::test]
async fn g1_deny_wins_over_allow() {
    let p = policy_with(|p| {
        p.rules.allow.push(deny_rule(&["show"], &[], None));
        p.rules.deny.push(deny_rule(
            &["show"],
            &[("path", "/etc/*")],
            Some("system files are off limits"),
        ));
    });
    let engine = Engine::builder(p)
        .tool(show_args("show"))
        .tool(echo("echo"))
        .build()
        .unwrap();
    assert_eq!(
        one(&engine, "show", json!({"path": "/etc/passwd"}))
            .await
            .error_kind(),
        Some("denied")
    );
    assert!(
        !one(&engine, "show", json!({"path": "/tmp/x"}))
            .await
            .is_error()
    );
    // Not in the allow list:
    assert_eq!(
        one(&engine, "echo", json!({})).await.error_kind(),
        Some("denied")
    );
}

#[tokio::test]
async fn g1_rules_match_sessions() {
    let p = policy_with(|p| {
        p.rules.deny.push(Rule {
            sessions: vec![glob("guest-*")],
            ..deny_rule(&[], &[], Some("guests cannot"))
        })
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let guest = engine.session(Some("guest-1")).unwrap();
    let admin = engine.session(Some("admin")).unwrap();
    assert_eq!(
        engine
            .call(&guest, &call("1", "echo", json!({})))
            .await
            .error_kind(),
        Some("denied")
    );
    assert!(
        !engine
            .call(&admin, &call("1", "echo", json!({})))
            .await
            .is_error()
    );
}

// Paused time: the 100 ms timeout passes at once, and the clock moves on only once every task
// (the token's watcher too) waits for it.
#[tokio::test(start_paused = true)]
async fn g2_the_timeout_cancels_the_tool_and_its_token_fires() {
    let dropped = Arc::new(AtomicBool::new(false));
    let cancelled = Arc::new(AtomicBool::new(false));
    let p = policy_with(|p| p.dispatch.timeout = Some(Duration::from_millis(100)));
    let engine = Engine::builder(p)
        .tool(observer("slow", dropped.clone(), cancelled.clone()))
        .build()
        .unwrap();
    let o = one(&engine, "slow", json!({})).await;
    assert!(
        matches!(o.error, Some(CallError::Timeout { after }) if after == Duration::from_millis(100))
    );
    assert!(
        o.content.text().contains("timed out after 100ms"),
        "{}",
        o.content.text()
    );
    assert!(dropped.load(Ordering::SeqCst), "the future was dropped");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(cancelled.load(Ordering::SeqCst), "the token fired");
}

#[tokio::test]
async fn g2_a_tool_that_ignores_cancellation_does_not_hold_the_turn() {
    // A blocking wait on another thread, which ends only when the test says so: the guard
    // stops waiting at the deadline.
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(released));
    let stubborn = FnTool::new(
        "stubborn",
        "Ignore cancellation.",
        obj(json!({})),
        move |_ctx, _args: Value| {
            let released = released.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    let released = released.lock().unwrap();
                    released.recv_timeout(Duration::from_secs(60)).ok();
                })
                .await
                .ok();
                Ok(ToolOutput::text("late"))
            }
        },
    );
    let p = policy_with(|p| p.dispatch.timeout = Some(Duration::from_millis(100)));
    let engine = Engine::builder(p).tool(stubborn).build().unwrap();
    // The tool is still blocked (the test lets it go only below): the turn ended at the
    // deadline, not when the tool did.
    let o = tokio::time::timeout(Duration::from_secs(30), one(&engine, "stubborn", json!({})))
        .await
        .expect("the turn ends at the deadline while the tool still runs");
    assert_eq!(o.error_kind(), Some("timeout"));
    release.send(()).unwrap();
}

#[tokio::test]
async fn g2_the_timeout_covers_the_before_hook() {
    let p = policy_with(|p| {
        p.dispatch.timeout = Some(Duration::from_millis(100));
        p.scripts.before = Some(script("let x = 0; loop { x += 1; }"));
    });
    let limits = toolgate::script::ScriptLimits {
        max_operations: u64::MAX,
        ..Default::default()
    };
    let engine = Engine::builder(p)
        .tool(echo("echo"))
        .script_limits(limits)
        .build()
        .unwrap();
    // The script never ends by itself: without the timeout the call would hang.
    let o = tokio::time::timeout(Duration::from_secs(60), one(&engine, "echo", json!({})))
        .await
        .expect("the before hook is stopped at the call's deadline");
    assert_eq!(o.error_kind(), Some("timeout"));
}

#[tokio::test]
async fn g2_a_result_after_the_deadline_is_discarded() {
    let p = policy_with(|p| p.dispatch.timeout = Some(Duration::from_millis(50)));
    let engine = Engine::builder(p).tool(sleeper("sleep")).build().unwrap();
    let o = one(&engine, "sleep", json!({"ms": 300})).await;
    assert_eq!(o.error_kind(), Some("timeout"));
    assert!(!o.content.text().contains("slept"));
}

#[tokio::test]
async fn g3_text_is_capped_by_characters_with_the_marker() {
    let p = policy_with(|p| p.dispatch.max_result_chars = CharCap::Chars(5));
    let engine = Engine::builder(p).tool(texter("text")).build().unwrap();
    let o = one(&engine, "text", json!({"n": 8})).await;
    assert_eq!(o.content.text(), format!("ééééé{TRUNCATION_MARKER}"));
    assert_eq!(TRUNCATION_MARKER, "\n...[tool result truncated]");
    assert_eq!(o.output_chars, 5, "characters, not bytes, marker excluded");
    assert!(o.truncated);
}

#[tokio::test]
async fn g3_a_result_at_the_cap_is_not_cut() {
    let p = policy_with(|p| p.dispatch.max_result_chars = CharCap::Chars(5));
    let engine = Engine::builder(p).tool(texter("text")).build().unwrap();
    let o = one(&engine, "text", json!({"n": 5})).await;
    assert_eq!((o.output_chars, o.truncated), (5, false));
}

#[tokio::test]
async fn g3_minus_one_means_no_cap_and_the_default_is_100000() {
    assert_eq!(
        toolgate::Policy::default().dispatch.max_result_chars,
        CharCap::Chars(100_000)
    );
    let engine = Engine::builder(Default::default())
        .tool(texter("text"))
        .build()
        .unwrap();
    let o = one(&engine, "text", json!({"n": 100_001})).await;
    assert_eq!((o.output_chars, o.truncated), (100_000, true));
    let engine = Engine::builder(policy_with(|p| {
        p.dispatch.max_result_chars = CharCap::Unlimited
    }))
    .tool(texter("text"))
    .build()
    .unwrap();
    let o = one(&engine, "text", json!({"n": 200_000})).await;
    assert_eq!((o.output_chars, o.truncated), (200_000, false));
}

#[tokio::test]
async fn g4_multimodal_cap_counts_text_parts_and_keeps_images() {
    let image = ContentPart::image("image/png", "iVBORw0KGgo=");
    let img = image.clone();
    let tool = FnTool::new(
        "mm",
        "Multimodal.",
        obj(json!({})),
        move |_ctx, _args: Value| {
            let img = img.clone();
            async move {
                Ok(ToolOutput::Parts(vec![
                    ContentPart::text("ab"),
                    img,
                    ContentPart::text("cdef"),
                    ContentPart::text("later"),
                ]))
            }
        },
    );
    let engine = Engine::builder(policy_with(|p| {
        p.dispatch.max_result_chars = CharCap::Chars(3)
    }))
    .tool(tool)
    .build()
    .unwrap();
    let o = one(&engine, "mm", json!({})).await;
    assert_eq!(
        o.content,
        toolgate::Content::Parts(vec![
            ContentPart::text("ab"),
            image,
            ContentPart::text(format!("c{TRUNCATION_MARKER}"))
        ])
    );
    assert_eq!((o.output_chars, o.truncated), (3, true));
}

#[tokio::test]
async fn g5_stream_cap_counts_across_chunks_and_closes_the_source() {
    let closed = Arc::new(AtomicBool::new(false));
    let pulled = Arc::new(AtomicUsize::new(0));
    let (c, p2) = (closed.clone(), pulled.clone());
    let tool = FnTool::new(
        "stream",
        "Stream.",
        obj(json!({})),
        move |_ctx, _args: Value| {
            let closed = c.clone();
            let pulled = p2.clone();
            async move {
                struct Close(Arc<AtomicBool>);
                impl Drop for Close {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let close = Close(closed);
                let s = futures::stream::iter(0..1000).map(move |i| {
                    let _keep = &close;
                    pulled.fetch_add(1, Ordering::SeqCst);
                    Ok(format!("{i:03}|"))
                });
                Ok(ToolOutput::Stream(s.boxed()))
            }
        },
    );
    let engine = Engine::builder(policy_with(|p| {
        p.dispatch.max_result_chars = CharCap::Chars(10)
    }))
    .tool(tool)
    .build()
    .unwrap();
    let o = one(&engine, "stream", json!({})).await;
    assert_eq!(o.content.text(), format!("000|001|00{TRUNCATION_MARKER}"));
    assert_eq!((o.output_chars, o.truncated), (10, true));
    assert!(closed.load(Ordering::SeqCst), "the source was closed");
    assert_eq!(
        pulled.load(Ordering::SeqCst),
        3,
        "no chunk read after the cut"
    );
}

#[tokio::test]
async fn g6_a_tool_panic_becomes_tool_execution_panic() {
    let engine = Engine::builder(Default::default())
        .tool(panicker("boom"))
        .build()
        .unwrap();
    let o = one(&engine, "boom", json!({})).await;
    assert_eq!(o.error_kind(), Some("tool_execution_panic"));
    assert!(o.content.text().contains("the tool exploded"));
}

#[tokio::test]
async fn g6_a_panic_while_reading_a_stream_becomes_tool_execution_panic() {
    let tool = FnTool::new(
        "s",
        "Stream.",
        obj(json!({})),
        |_ctx, _args: Value| async move {
            let s = futures::stream::iter(0..3).map(|i| {
                if i == 1 {
                    panic!("stream broke")
                } else {
                    Ok("x".to_string())
                }
            });
            Ok(ToolOutput::Stream(s.boxed()))
        },
    );
    let engine = Engine::builder(Default::default())
        .tool(tool)
        .build()
        .unwrap();
    let o = one(&engine, "s", json!({})).await;
    assert_eq!(o.error_kind(), Some("tool_execution_panic"));
    assert!(o.content.text().contains("stream broke"));
}

struct PanickingLayer;
impl Layer for PanickingLayer {
    fn call<'a>(&'a self, _inv: &'a mut Invocation, _next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move { panic!("middleware bug") })
    }
}

#[tokio::test]
async fn g6_a_middleware_panic_becomes_tool_execution_panic() {
    let engine = Engine::builder(Default::default())
        .tool(echo("echo"))
        .layer(PanickingLayer)
        .build()
        .unwrap();
    let o = one(&engine, "echo", json!({})).await;
    assert_eq!(o.error_kind(), Some("tool_execution_panic"));
    assert!(o.content.text().contains("middleware bug"));
}

#[tokio::test]
async fn g6_script_failures_become_tool_policy_panic() {
    for hook in ["rewrite", "before", "unknown_tool"] {
        let p = policy_with(|p| {
            let s = Some(script(r#"let m = #{}; m.missing.deeper"#));
            match hook {
                "rewrite" => p.scripts.rewrite = s,
                "before" => p.scripts.before = s,
                _ => p.scripts.unknown_tool = s,
            }
        });
        let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
        let name = if hook == "unknown_tool" {
            "nope"
        } else {
            "echo"
        };
        let o = one(&engine, name, json!({})).await;
        assert_eq!(
            o.error_kind(),
            Some("tool_policy_panic"),
            "{hook}: {:?}",
            o.error
        );
        assert!(
            o.content.text().contains(hook),
            "{hook}: {}",
            o.content.text()
        );
    }
}

#[tokio::test]
async fn g6_a_script_that_loops_forever_ends_with_tool_policy_panic() {
    let p = policy_with(|p| p.scripts.before = Some(script("loop { }")));
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "echo", json!({})).await;
    assert_eq!(o.error_kind(), Some("tool_policy_panic"));
    assert!(
        o.content.text().contains("too many operations"),
        "{}",
        o.content.text()
    );
}

#[tokio::test]
async fn g6_unbounded_recursion_in_a_script_ends_with_tool_policy_panic() {
    let p = policy_with(|p| p.scripts.before = Some(script("fn f(x) { f(x + 1) } f(0)")));
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "echo", json!({})).await;
    assert_eq!(o.error_kind(), Some("tool_policy_panic"));
}

#[tokio::test]
async fn g6_an_after_hook_failure_is_an_error_event_and_the_result_stands() {
    let p = policy_with(|p| p.scripts.after = Some(script(r#"throw "audit log is down""#)));
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let mut events = engine.subscribe();
    let o = one(&engine, "echo", json!({"text": "kept"})).await;
    assert!(!o.is_error());
    assert_eq!(o.content.text(), "kept");
    let errors: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(&e.kind, EventKind::Error { message, kind } if message.contains("audit log is down") && *kind == "tool_policy_panic"))
        .collect();
    assert_eq!(errors.len(), 1);
}

#[tokio::test]
async fn g7_the_after_hook_gets_duration_error_chars_and_truncation() {
    let p = policy_with(|p| {
        p.dispatch.max_result_chars = CharCap::Chars(4);
        p.scripts.after = Some(script(
            r#"throw `d=${outcome.duration_ms >= 20.0} e=${outcome.is_error} k=${outcome.error_kind} c=${outcome.chars} t=${outcome.truncated}`"#,
        ));
    });
    let engine = Engine::builder(p)
        .tool(texter("text"))
        .tool(sleeper("sleep"))
        .build()
        .unwrap();
    let mut events = engine.subscribe();
    one(&engine, "text", json!({"n": 9})).await;
    one(&engine, "sleep", json!({"ms": 25})).await;
    let msgs: Vec<String> = std::iter::from_fn(|| events.try_recv().ok())
        .filter_map(|e| match e.kind {
            EventKind::Error { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert!(msgs[0].contains("e=false k= c=4 t=true"), "{msgs:?}");
    assert!(msgs[1].contains("d=true e=false"), "{msgs:?}");
}

fn over(pattern: &str, cap: u64) -> ToolOverride {
    ToolOverride {
        pattern: glob(pattern),
        timeout: None,
        max_result_chars: Some(CharCap::Chars(cap)),
        sequential_group: None,
        rules: Rules::default(),
        principals: Vec::new(),
        groups: Vec::new(),
        position: None,
    }
}

#[tokio::test]
async fn g8_the_most_specific_override_wins() {
    let p = policy_with(|p| p.tools = vec![over("text*", 3), over("text", 2), over("*", 9)]);
    let engine = Engine::builder(p)
        .tool(texter("text"))
        .tool(texter("textual"))
        .tool(texter("other"))
        .build()
        .unwrap();
    assert_eq!(one(&engine, "text", json!({"n": 20})).await.output_chars, 2);
    assert_eq!(
        one(&engine, "textual", json!({"n": 20})).await.output_chars,
        3
    );
    assert_eq!(
        one(&engine, "other", json!({"n": 20})).await.output_chars,
        9
    );
}

#[tokio::test]
async fn g8_explain_says_which_setting_came_from_where() {
    let mut timeout_override = over("te*", 7);
    timeout_override.timeout = Some(Some(Duration::from_secs(5)));
    let p = policy_with(|p| p.tools = vec![timeout_override, over("text", 2)]);
    let engine = Engine::builder(p).tool(texter("text")).build().unwrap();
    let e = engine.explain("text");
    assert_eq!(e.matched, ["te*", "text"]);
    assert_eq!(e.max_result_chars, CharCap::Chars(2));
    assert_eq!(e.max_result_chars_from, "tools.\"text\".max_result_chars");
    assert_eq!(e.timeout.as_deref(), Some("5s"));
    assert_eq!(e.timeout_from, "tools.\"te*\".timeout");
}

#[tokio::test]
async fn g8_override_rules_apply_to_matched_tools_only() {
    let mut o = over("show", 100);
    o.max_result_chars = None;
    o.rules
        .deny
        .push(deny_rule(&[], &[("path", "*.pem")], Some("no keys")));
    let p = policy_with(|p| p.tools = vec![o]);
    let engine = Engine::builder(p)
        .tool(show_args("show"))
        .tool(show_args("other"))
        .build()
        .unwrap();
    assert_eq!(
        one(&engine, "show", json!({"path": "a.pem"}))
            .await
            .error_kind(),
        Some("denied")
    );
    assert!(
        !one(&engine, "other", json!({"path": "a.pem"}))
            .await
            .is_error()
    );
}

// Paused time: the clock moves only when every call waits on it, so members not kept apart by
// the group would all be inside their 20 ms at once.
#[tokio::test(start_paused = true)]
async fn g8_a_sequential_group_serialises_its_calls() {
    let live = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (l, pk) = (live.clone(), peak.clone());
    let tool = FnTool::new(
        "disk",
        "Disk.",
        obj(json!({})),
        move |_ctx, _args: Value| {
            let (live, peak) = (l.clone(), pk.clone());
            async move {
                let now = live.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                live.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolOutput::text("ok"))
            }
        },
    );
    let mut o = over("disk", 100);
    o.max_result_chars = None;
    o.sequential_group = Some("disk".into());
    let engine = Engine::builder(policy_with(|p| p.tools = vec![o]))
        .tool(tool)
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    let calls: Vec<_> = (0..4)
        .map(|i| call(&i.to_string(), "disk", json!({})))
        .collect();
    engine.dispatch(&s, &calls).await.unwrap();
    assert_eq!(peak.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_json_arguments_get_invalid_arguments_and_the_tool_does_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(Default::default())
        .tool(counter("count", runs.clone()))
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    for raw in ["{oops", "[1,2]", "\"text\""] {
        let o = engine.call(&s, &raw_call("1", "count", raw)).await;
        assert_eq!(o.error_kind(), Some("invalid_arguments"), "{raw}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let o = engine.call(&s, &raw_call("1", "count", "")).await;
    assert!(!o.is_error(), "empty arguments mean {{}}");
}
