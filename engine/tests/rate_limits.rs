//! Issue 27 items 3 and 4 through the engine: rate limits and quotas (L1, L2), concurrency and
//! fair queuing (L3), retries of idempotent tools (L5) and circuit breakers (L6), on paused
//! time where the subject is time.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolgate::events::{Event, EventKind};
use toolgate::tool::{FnTool, Tool, ToolError, ToolOutput};
use toolgate::{Caller, Engine, Outcome, Policy};

fn policy(yaml: &str) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    yaml_policy(&format!("version: 1\n{yaml}"), dir.path())
}

fn engine(yaml: &str) -> Engine {
    Engine::builder(policy(yaml))
        .tool(echo("echo"))
        .tool(echo("other"))
        .build()
        .expect("the engine builds")
}

async fn call_in(engine: &Engine, session: &str, name: &str, args: Value) -> Outcome {
    let s = engine.session(Some(session)).unwrap();
    engine.call(&s, &call("c", name, args)).await
}

/// A call by the principal `who` (in `groups`), in its own session.
async fn call_by(engine: &Engine, who: &str, groups: &[&str], name: &str, args: Value) -> Outcome {
    let caller = Caller::new(who, groups.iter().map(|g| g.to_string()).collect());
    let s = engine
        .session(Some(&format!("{who}-session")))
        .unwrap()
        .with_caller(Arc::new(caller));
    engine.call(&s, &call("c", name, args)).await
}

fn text(o: &Outcome) -> String {
    o.content.text()
}

#[tokio::test(start_paused = true)]
async fn l1_a_burst_passes_at_once_then_a_call_is_rate_limited_until_its_turn() {
    let engine = engine("limits:\n  rates:\n    - rate: 2/s\n");
    for _ in 0..2 {
        let o = one(&engine, "echo", json!({"text": "hi"})).await;
        assert!(!o.is_error(), "{o:?}");
    }
    let limited = one(&engine, "echo", json!({"text": "hi"})).await;
    assert_eq!(limited.error_kind(), Some("rate_limited"));
    let retry_after = limited.error.as_ref().and_then(|e| e.retry_after());
    assert_eq!(retry_after, Some(Duration::from_millis(500)));
    tokio::time::advance(Duration::from_millis(500)).await;
    let again = one(&engine, "echo", json!({"text": "hi"})).await;
    assert!(!again.is_error(), "{again:?}");
}

#[tokio::test(start_paused = true)]
async fn l2_the_answer_says_which_limit_and_when_to_retry() {
    let engine =
        engine("limits:\n  rates:\n    - tools: [echo]\n      rate: 10/m\n      burst: 1\n");
    one(&engine, "echo", json!({"text": "hi"})).await;
    let limited = one(&engine, "echo", json!({"text": "hi"})).await;
    assert_eq!(
        text(&limited),
        "Error: rate limited: at most 10 calls by local to echo per 1m (burst 1; \
         limits.rates[0]); retry after 6.0 s"
    );
}

#[tokio::test(start_paused = true)]
async fn l1_a_call_denied_by_a_rule_uses_up_no_quota() {
    let engine = engine(
        "rules:\n  deny:\n    - tools: [echo]\n      args: {text: secret}\n      reason: no\n\
         limits:\n  rates:\n    - rate: 1/m\n",
    );
    for _ in 0..3 {
        let denied = one(&engine, "echo", json!({"text": "secret"})).await;
        assert_eq!(denied.error_kind(), Some("denied"));
    }
    let allowed = one(&engine, "echo", json!({"text": "fine"})).await;
    assert!(!allowed.is_error(), "{allowed:?}");
}

#[tokio::test(start_paused = true)]
async fn l1_a_limit_per_tool_counts_each_tool_apart_and_a_glob_only_its_tools() {
    let engine =
        engine("limits:\n  rates:\n    - tools: [\"*\"]\n      per: tool\n      rate: 1/m\n");
    assert!(!one(&engine, "echo", json!({})).await.is_error());
    assert!(!one(&engine, "other", json!({})).await.is_error());
    assert_eq!(
        one(&engine, "echo", json!({})).await.error_kind(),
        Some("rate_limited")
    );
    let only_other = engine_with_glob();
    assert!(!one(&only_other, "echo", json!({})).await.is_error());
    assert!(!one(&only_other, "echo", json!({})).await.is_error());
    assert!(!one(&only_other, "other", json!({})).await.is_error());
    assert_eq!(
        one(&only_other, "other", json!({})).await.error_kind(),
        Some("rate_limited")
    );
}

fn engine_with_glob() -> Engine {
    engine("limits:\n  rates:\n    - tools: [\"oth*\"]\n      per: all\n      rate: 1/h\n")
}

#[tokio::test(start_paused = true)]
async fn l1_a_call_refused_by_one_entry_uses_up_none_of_the_others() {
    // A quota of 4 a day and a rate of 1 a second: the refusals by the rate must not eat the
    // quota.
    let engine = engine("limits:\n  rates:\n    - rate: 4/d\n    - rate: 1/s\n      burst: 1\n");
    for _ in 0..3 {
        assert!(!one(&engine, "echo", json!({})).await.is_error());
        let refused = one(&engine, "echo", json!({})).await;
        assert!(
            text(&refused).contains("limits.rates[1]"),
            "{}",
            text(&refused)
        );
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    // Three refusals later, the quota still has its fourth call.
    assert!(!one(&engine, "echo", json!({})).await.is_error());
    tokio::time::advance(Duration::from_secs(1)).await;
    let quota = one(&engine, "echo", json!({})).await;
    assert!(text(&quota).contains("limits.rates[0]"), "{}", text(&quota));
}

#[tokio::test(start_paused = true)]
async fn l1_a_limit_per_principal_counts_each_principal_apart_and_names_them() {
    let engine = engine("limits:\n  rates:\n    - per: principal\n      rate: 1/h\n");
    assert!(
        !call_by(&engine, "alice", &[], "echo", json!({}))
            .await
            .is_error()
    );
    let limited = call_by(&engine, "alice", &[], "other", json!({})).await;
    assert_eq!(
        text(&limited),
        "Error: rate limited: at most 1 calls by alice per 1h (burst 1; limits.rates[0]); \
         retry after 3600 s"
    );
    assert!(
        !call_by(&engine, "bob", &[], "echo", json!({}))
            .await
            .is_error()
    );
}

#[tokio::test(start_paused = true)]
async fn l1_an_entry_for_some_principals_and_groups_limits_only_them() {
    let engine = engine(
        "limits:\n  rates:\n    - principals: [\"bot-*\"]\n      rate: 1/h\n    \
         - groups: [interns]\n      rate: 1/h\n",
    );
    for (who, groups, limited) in [
        ("bot-7", &[][..], true),
        ("carol", &["interns"][..], true),
        ("dave", &["staff"][..], false),
    ] {
        call_by(&engine, who, groups, "echo", json!({})).await;
        let second = call_by(&engine, who, groups, "echo", json!({})).await;
        assert_eq!(second.is_error(), limited, "{who}: {second:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn l3_a_flooding_principal_does_not_starve_another() {
    let engine = Arc::new(
        Engine::builder(policy(
            "limits:\n  concurrency:\n    total: 2\n    max_wait: 1h\n",
        ))
        .tool(sleeper("nap"))
        .build()
        .unwrap(),
    );
    let start = tokio::time::Instant::now();
    let mut flood = Vec::new();
    for _ in 0..40 {
        let engine = engine.clone();
        flood.push(tokio::spawn(async move {
            call_by(&engine, "flood", &[], "nap", json!({"ms": 100})).await;
            start.elapsed()
        }));
    }
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    // Two flood calls run and 38 wait; bob asks now and gets the next place: one nap.
    let bob = call_by(&engine, "bob", &[], "nap", json!({"ms": 100})).await;
    assert!(!bob.is_error(), "{bob:?}");
    assert!(
        start.elapsed() <= Duration::from_millis(200),
        "bob waited {:?} behind the flood",
        start.elapsed()
    );
    let mut last = Duration::ZERO;
    for f in flood {
        last = last.max(f.await.unwrap());
    }
    assert!(last >= Duration::from_millis(2000), "{last:?}");
}

#[tokio::test(start_paused = true)]
async fn l3_a_principal_at_its_cap_waits_while_another_runs_at_once() {
    let engine = Arc::new(
        Engine::builder(policy(
            "limits:\n  concurrency:\n    per_principal: 1\n    max_wait: 1h\n",
        ))
        .tool(sleeper("nap"))
        .build()
        .unwrap(),
    );
    let start = tokio::time::Instant::now();
    let alice: Vec<_> = (0..3)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                call_by(&engine, "alice", &[], "nap", json!({"ms": 100})).await;
                start.elapsed()
            })
        })
        .collect();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    call_by(&engine, "bob", &[], "nap", json!({"ms": 100})).await;
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "bob ran at once"
    );
    let mut ends = Vec::new();
    for a in alice {
        ends.push(a.await.unwrap());
    }
    ends.sort();
    assert_eq!(
        ends,
        [100, 200, 300].map(Duration::from_millis),
        "alice's calls ran one at a time"
    );
}

#[tokio::test(start_paused = true)]
async fn l3_a_flooding_session_does_not_starve_another() {
    let engine = Arc::new(
        Engine::builder(policy(
            "limits:\n  concurrency:\n    total: 1\n    max_wait: 1h\n",
        ))
        .tool(sleeper("nap"))
        .build()
        .unwrap(),
    );
    let start = tokio::time::Instant::now();
    let mut flood = Vec::new();
    for i in 0..20 {
        let engine = engine.clone();
        flood.push(tokio::spawn(async move {
            let s = engine.session(Some("flood")).unwrap();
            engine
                .call(&s, &call(&format!("f{i}"), "nap", json!({"ms": 100})))
                .await;
            start.elapsed()
        }));
    }
    // Let the flood queue up before the other session asks.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    let other = call_in(&engine, "other", "nap", json!({"ms": 100})).await;
    let other_done = start.elapsed();
    assert!(!other.is_error(), "{other:?}");
    // One flood call runs, the next flood call is first in line when the other session asks,
    // then it is the other session's turn: done within three naps, not after twenty.
    assert!(
        other_done <= Duration::from_millis(350),
        "the other session waited {other_done:?}"
    );
    let mut last = Duration::ZERO;
    for f in flood {
        last = last.max(f.await.unwrap());
    }
    assert!(last >= Duration::from_millis(2000), "{last:?}");
}

#[tokio::test(start_paused = true)]
async fn l3_a_call_that_finds_no_place_within_max_wait_is_rate_limited() {
    let engine = Arc::new(
        Engine::builder(policy(
            "limits:\n  concurrency:\n    per_principal: 1\n    max_wait: 50ms\n",
        ))
        .tool(sleeper("nap"))
        .build()
        .unwrap(),
    );
    let busy = {
        let engine = engine.clone();
        tokio::spawn(async move { call_in(&engine, "a", "nap", json!({"ms": 1000})).await })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let waited = call_in(&engine, "b", "nap", json!({"ms": 1})).await;
    assert_eq!(waited.error_kind(), Some("rate_limited"));
    assert!(
        text(&waited)
            .contains("no place to run within 50ms (limits.concurrency: 1 calls per principal)"),
        "{}",
        text(&waited)
    );
    assert!(!busy.await.unwrap().is_error());
}

/// A tool of an upstream-like source that fails with `kind` until `fails` runs have failed.
fn flaky(name: &str, kind: &'static str, fails: usize, runs: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    Arc::new(FnTool::new(
        name,
        "Flaky.",
        obj(json!({})),
        move |_ctx, _args: Value| {
            let runs = runs.clone();
            async move {
                let n = runs.fetch_add(1, Ordering::SeqCst);
                if n < fails {
                    Err(ToolError::coded(kind, format!("run {n} failed")))
                } else {
                    Ok(ToolOutput::text(format!("run {n} worked")))
                }
            }
        },
    ))
}

fn idempotent(tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
    let spec = tool
        .spec()
        .clone()
        .with_annotations(json!({"idempotentHint": true}));
    Arc::new(FnTool::from_spec(spec, move |ctx, args| {
        tool.call(ctx, args)
    }))
}

fn events_of(engine: &Engine) -> Arc<Mutex<Vec<Event>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut rx = engine.subscribe();
    let sink = seen.clone();
    tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            sink.lock().unwrap().push(e);
        }
    });
    seen
}

#[tokio::test(start_paused = true)]
async fn l5_an_idempotent_tool_is_retried_until_it_succeeds() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(policy("retries: {}\n"))
        .tool_arc(idempotent(flaky(
            "get",
            "upstream_unavailable",
            2,
            runs.clone(),
        )))
        .build()
        .unwrap();
    let mut rx = engine.subscribe();
    let o = one(&engine, "get", json!({})).await;
    assert!(!o.is_error(), "{o:?}");
    assert_eq!(text(&o), "run 2 worked");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    let retries: Vec<(u32, f64)> = std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e.kind {
            EventKind::Retry {
                attempt,
                backoff_ms,
                error_kind,
            } => {
                assert_eq!(error_kind, "upstream_unavailable");
                Some((attempt, backoff_ms))
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2, "{retries:?}");
    // 100 ms then 200 ms, each drawn between half and all of it.
    assert!((50.0..=100.0).contains(&retries[0].1), "{retries:?}");
    assert!((100.0..=200.0).contains(&retries[1].1), "{retries:?}");
}

#[tokio::test(start_paused = true)]
async fn l5_a_tool_not_marked_idempotent_runs_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let also = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(policy(
        "retries:\n  idempotent: [\"listed\"]\n  not_idempotent: [\"hinted_but_not\"]\n",
    ))
    .tool_arc(flaky("plain", "upstream_error", 5, runs.clone()))
    .tool_arc(idempotent(flaky(
        "hinted_but_not",
        "upstream_error",
        5,
        also.clone(),
    )))
    .build()
    .unwrap();
    let o = one(&engine, "plain", json!({})).await;
    assert_eq!(o.error_kind(), Some("upstream_error"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    one(&engine, "hinted_but_not", json!({})).await;
    assert_eq!(also.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn l5_a_tool_the_policy_names_idempotent_is_retried_and_an_argument_error_is_not() {
    let runs = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(policy("retries:\n  idempotent: [\"list*\"]\n"))
        .tool_arc(flaky("listed", "overloaded", 1, runs.clone()))
        .tool_arc(flaky("list_bad", "invalid_arguments", 5, bad.clone()))
        .build()
        .unwrap();
    assert!(!one(&engine, "listed", json!({})).await.is_error());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    one(&engine, "list_bad", json!({})).await;
    assert_eq!(
        bad.load(Ordering::SeqCst),
        1,
        "invalid_arguments is not retried"
    );
}

#[tokio::test(start_paused = true)]
async fn l5_retries_end_before_the_calls_deadline() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(policy(
        "dispatch:\n  timeout: 1s\nretries:\n  attempts: 100\n  initial_backoff: 300ms\n  max_backoff: 300ms\n",
    ))
    .tool_arc(idempotent(flaky("get", "upstream_unavailable", 1000, runs.clone())))
    .build()
    .unwrap();
    let o = one(&engine, "get", json!({})).await;
    // Waits of 150-300 ms within 1 s: at most 7 attempts, and the answer is the last failure,
    // not a timeout.
    assert_eq!(o.error_kind(), Some("upstream_unavailable"), "{o:?}");
    let n = runs.load(Ordering::SeqCst);
    assert!((2..=7).contains(&n), "{n} attempts");
}

fn breaker_engine(cool_down: &str, runs: Arc<AtomicUsize>, fails: usize) -> Engine {
    Engine::builder(policy(&format!(
        "circuit_breaker:\n  failures: 3\n  cool_down: {cool_down}\n"
    )))
    .tools_from(
        "MCP server flaky (test)",
        false,
        [
            flaky("flaky.get", "upstream_unavailable", fails, runs),
            Arc::new(echo("flaky.echo")) as Arc<dyn Tool>,
        ],
    )
    .tool(echo("local"))
    .build()
    .unwrap()
}

fn breaker_states(events: &Mutex<Vec<Event>>) -> Vec<&'static str> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Breaker { state, source, .. } => {
                assert_eq!(source, "MCP server flaky (test)");
                Some(*state)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn l6_a_breaker_opens_after_failures_in_a_row_and_refuses_the_sources_calls_at_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = breaker_engine("30s", runs.clone(), 1000);
    let events = events_of(&engine);
    for _ in 0..3 {
        let o = one(&engine, "flaky.get", json!({})).await;
        assert_eq!(o.error_kind(), Some("upstream_unavailable"));
    }
    let refused = one(&engine, "flaky.echo", json!({"text": "x"})).await;
    assert_eq!(refused.error_kind(), Some("circuit_open"));
    assert_eq!(
        text(&refused),
        "Error: MCP server flaky (test) is failing (3 failures in a row), so its calls are \
         refused for now; retry after 30 s"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "an open breaker runs nothing"
    );
    // Another source is not affected.
    assert!(!one(&engine, "local", json!({"text": "x"})).await.is_error());
    tokio::task::yield_now().await;
    assert_eq!(breaker_states(&events), ["open"]);
}

#[tokio::test(start_paused = true)]
async fn l6_after_the_cool_down_one_trial_call_closes_the_breaker_on_success() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = breaker_engine("10s", runs.clone(), 3);
    let events = events_of(&engine);
    for _ in 0..3 {
        one(&engine, "flaky.get", json!({})).await;
    }
    assert_eq!(
        one(&engine, "flaky.get", json!({})).await.error_kind(),
        Some("circuit_open")
    );
    tokio::time::advance(Duration::from_secs(10)).await;
    let trial = one(&engine, "flaky.get", json!({})).await;
    assert!(!trial.is_error(), "{trial:?}");
    assert!(
        !one(&engine, "flaky.echo", json!({"text": "x"}))
            .await
            .is_error()
    );
    tokio::task::yield_now().await;
    assert_eq!(breaker_states(&events), ["open", "half_open", "closed"]);
}

#[tokio::test(start_paused = true)]
async fn l6_a_failed_trial_opens_the_breaker_again_for_another_cool_down() {
    let runs = Arc::new(AtomicUsize::new(0));
    let engine = breaker_engine("10s", runs.clone(), 1000);
    let events = events_of(&engine);
    for _ in 0..3 {
        one(&engine, "flaky.get", json!({})).await;
    }
    tokio::time::advance(Duration::from_secs(10)).await;
    let trial = one(&engine, "flaky.get", json!({})).await;
    assert_eq!(trial.error_kind(), Some("upstream_unavailable"));
    let refused = one(&engine, "flaky.get", json!({})).await;
    assert_eq!(refused.error_kind(), Some("circuit_open"));
    assert_eq!(
        refused.error.as_ref().and_then(|e| e.retry_after()),
        Some(Duration::from_secs(10))
    );
    tokio::task::yield_now().await;
    assert_eq!(breaker_states(&events), ["open", "half_open", "open"]);
}

#[tokio::test(start_paused = true)]
async fn l6_a_call_cut_at_its_timeout_counts_as_a_failure_of_its_source() {
    let engine = Engine::builder(policy(
        "dispatch:\n  timeout: 100ms\ncircuit_breaker:\n  failures: 2\n",
    ))
    .tools_from(
        "MCP server slow (test)",
        false,
        [Arc::new(sleeper("slow.nap")) as Arc<dyn Tool>],
    )
    .build()
    .unwrap();
    for _ in 0..2 {
        let o = one(&engine, "slow.nap", json!({"ms": 1000})).await;
        assert_eq!(o.error_kind(), Some("timeout"));
    }
    let refused = one(&engine, "slow.nap", json!({"ms": 1})).await;
    assert_eq!(refused.error_kind(), Some("circuit_open"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l6_a_plugins_breaker_opens_on_its_panics_and_refuses_its_other_tools() {
    let dir = tempfile::tempdir().unwrap();
    let policy = yaml_policy(
        "version: 1\nplugins:\n  - name: testkit\ncircuit_breaker:\n  failures: 2\n  cool_down: 1h\n",
        dir.path(),
    );
    let engine = Engine::builder(policy)
        .build()
        .expect("the testkit plugin loads (cargo build -p toolgate-plugin-testkit)");
    for _ in 0..2 {
        let o = one(&engine, "panic", json!({})).await;
        assert_eq!(o.error_kind(), Some("tool_execution_panic"), "{o:?}");
    }
    let refused = one(&engine, "echo", json!({"text": "x"})).await;
    assert_eq!(refused.error_kind(), Some("circuit_open"));
    assert!(
        text(&refused).starts_with("Error: plugin testkit is failing (2 failures in a row)"),
        "{}",
        text(&refused)
    );
}
