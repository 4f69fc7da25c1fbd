//! Issue #9's resource items through the engine: queue time apart from the timeout (G2), a
//! sequential group held until its member really returns, scripts off the runtime under their
//! own bound; issue #25's: calls beyond a plugin's threads wait in a queue served fairly across
//! sessions, within their timeout.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use toolgate::events::EventKind;
use toolgate::{Engine, Policy};

fn testkit(yaml: &str) -> Engine {
    let dir = tempfile::tempdir().unwrap();
    let policy: Policy = yaml_policy(
        &format!("version: 1\nplugins:\n  - name: testkit\n{yaml}"),
        dir.path(),
    );
    Engine::builder(policy).build().expect("testkit loads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g2_the_timeout_starts_after_the_wait_for_a_concurrency_slot() {
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = ends.clone();
    // One at a time, 300 ms each: the fifth call waits 1.2 s, past the 1 s timeout, and still
    // runs. The 700 ms between a nap and the timeout is room for a loaded machine.
    let policy = policy_with(|p| {
        p.dispatch.concurrency = Some(1);
        p.dispatch.timeout = Some(Duration::from_millis(1000));
    });
    let engine = Engine::builder(policy)
        .tool(sleeper("nap"))
        .on_event(move |e| {
            if let EventKind::End { outcome } = &e.kind {
                seen.lock()
                    .unwrap()
                    .push((e.call_id.clone(), outcome.queued_ms));
            }
        })
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    let calls: Vec<_> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|id| call(id, "nap", json!({"ms": 300})))
        .collect();
    let outcomes = engine.dispatch(&s, &calls).await.unwrap();
    for o in &outcomes {
        assert!(!o.is_error(), "{o:?}");
    }
    // A sleep never ends early: the last call waited at least four naps, more than the
    // timeout, which did not count them.
    let mut queued: Vec<Duration> = outcomes.iter().map(|o| o.queued).collect();
    queued.sort();
    assert!(
        queued[4] >= Duration::from_millis(1200),
        "the last call waited four runs: {queued:?}"
    );
    let ends = ends.lock().unwrap();
    assert_eq!(ends.len(), 5);
    assert!(
        ends.iter().any(|(_, q)| *q >= 1200.0),
        "end events carry queued_ms: {ends:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_after_hook_sees_the_queue_time() {
    let messages = Arc::new(Mutex::new(Vec::new()));
    let seen = messages.clone();
    let policy = policy_with(|p| {
        p.dispatch.concurrency = Some(1);
        p.scripts.after = Some(script("throw `queued ${outcome.queued_ms}`;"));
    });
    let engine = Engine::builder(policy)
        .tool(sleeper("nap"))
        .on_event(move |e| {
            if let EventKind::Error { message, .. } = &e.kind {
                seen.lock().unwrap().push(message.clone());
            }
        })
        .build()
        .unwrap();
    let s = engine.session(None).unwrap();
    let calls = [
        call("a", "nap", json!({"ms": 200})),
        call("b", "nap", json!({"ms": 200})),
    ];
    engine.dispatch(&s, &calls).await.unwrap();
    let messages = messages.lock().unwrap();
    let queued: Vec<f64> = messages
        .iter()
        .filter_map(|m| m.split("queued ").nth(1))
        .filter_map(|n| {
            n.trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(queued.len(), 2, "{messages:?}");
    assert!(queued.iter().any(|q| *q >= 150.0), "{messages:?}");
}

/// A stubborn group member that runs until the test says so: `stubborn_sleep` connects to this
/// listener and returns only when the test closes the connection (or after a minute).
struct Holder {
    listener: std::net::TcpListener,
}

impl Holder {
    fn new() -> Holder {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        Holder { listener }
    }

    /// The holder's arguments.
    fn args(&self) -> serde_json::Value {
        let addr = self.listener.local_addr().unwrap();
        json!({"ms": 60_000, "until_closed": addr.to_string()})
    }

    /// Waits until the member runs (it has the group's lock then); drop the stream to let it
    /// return.
    async fn running(&self) -> std::net::TcpStream {
        let listener = self.listener.try_clone().unwrap();
        let accepted = tokio::task::spawn_blocking(move || listener.accept());
        tokio::time::timeout(Duration::from_secs(60), accepted)
            .await
            .expect("the holder runs within a minute")
            .unwrap()
            .unwrap()
            .0
    }
}

/// Calls `echo` in group `g` until it is not refused as `overloaded` (an abandoned member frees
/// the group when its plugin thread returns, which no event tells).
async fn echo_once_the_group_is_free(engine: &Engine, s: &toolgate::Session) -> toolgate::Outcome {
    let echo = call("c3", "echo", json!({"text": "hi"}));
    poll(
        || engine.call(s, &echo),
        |o| o.error_kind() != Some("overloaded"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_stays_locked_while_a_timed_out_member_still_runs() {
    let engine = testkit(
        "dispatch: {timeout: 300ms}\ntools:\n  stubborn_sleep: {sequential_group: g}\n  echo: {sequential_group: g}\n",
    );
    let s = engine.session(None).unwrap();
    let holder = Holder::new();
    let (o, running) = tokio::join!(
        one(&engine, "stubborn_sleep", holder.args()),
        holder.running()
    );
    assert_eq!(o.error_kind(), Some("timeout"), "{o:?}");
    // The stubborn member still runs (the test has not let it go): another member must not run
    // beside it.
    let o = engine
        .call(&s, &call("c2", "echo", json!({"text": "hi"})))
        .await;
    assert_eq!(o.error_kind(), Some("overloaded"), "{o:?}");
    assert!(o.content.text().contains("\"g\""), "{o:?}");
    // Once it has returned, the group is free again.
    drop(running);
    let o = echo_once_the_group_is_free(&engine, &s).await;
    assert_eq!(o.content.text(), "hi", "{o:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_waiting_for_its_group_is_told_when_the_holder_is_abandoned() {
    let engine = testkit(
        "dispatch: {timeout: 1s}\ntools:\n  stubborn_sleep: {sequential_group: g}\n  echo: {sequential_group: g}\n",
    );
    let s = engine.session(None).unwrap();
    let holder = Holder::new();
    let held = {
        let (engine, s) = (engine.clone(), s.clone());
        let slow = [call("slow", "stubborn_sleep", holder.args())];
        tokio::spawn(async move { engine.dispatch(&s, &slow).await.unwrap() })
    };
    // The holder runs, so it has the group: the next member waits for it.
    let running = holder.running().await;
    let next = [call("next", "echo", json!({"text": "hi"}))];
    let waiting = engine.dispatch(&s, &next).await.unwrap();
    // Answered while the holder still runs (the test keeps it running until here): when it
    // was abandoned at its timeout, not when it returns.
    assert_eq!(
        waiting[0].error_kind(),
        Some("overloaded"),
        "{:?}",
        waiting[0]
    );
    let held = held.await.unwrap();
    assert_eq!(held[0].error_kind(), Some("timeout"), "{:?}", held[0]);
    // Let the holder return before the runtime goes.
    drop(running);
    let o = echo_once_the_group_is_free(&engine, &s).await;
    assert_eq!(o.content.text(), "hi", "{o:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_after_hooks_of_parallel_calls_do_not_block_the_runtime() {
    let policy = policy_with(|p| {
        p.dispatch.script_timeout = Duration::from_millis(1000);
        p.scripts.after = Some(script("loop { }"));
    });
    let engine = Engine::builder(policy).tool(echo("echo")).build().unwrap();
    let s = engine.session(None).unwrap();
    let calls: Vec<_> = (0..11)
        .map(|i| call(&format!("c{i}"), "echo", json!({"text": "x"})))
        .collect();
    let started = Instant::now();
    let outcomes = engine.dispatch(&s, &calls).await.unwrap();
    assert!(outcomes.iter().all(|o| !o.is_error()));
    // In parallel they take about 1 s; on the runtime's 2 workers they would take 6 s.
    assert!(
        started.elapsed() < Duration::from_millis(4000),
        "11 after hooks of 1 s took {:?}: they ran on the runtime's 2 workers",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_before_script_with_no_call_timeout_stops_at_its_own_bound() {
    let policy = policy_with(|p| {
        p.dispatch.timeout = None;
        p.dispatch.script_timeout = Duration::from_millis(200);
        // Few operations, each slow: the operation limit alone would let it run for minutes.
        p.scripts.before = Some(script(
            "let s = \"ab\"; while s.len() < 500000 { s += s; } loop { s = s.to_upper(); s = s.to_lower(); }",
        ));
    });
    let engine = Engine::builder(policy).tool(echo("echo")).build().unwrap();
    let o = tokio::time::timeout(
        Duration::from_secs(30),
        one(&engine, "echo", json!({"text": "x"})),
    )
    .await
    .expect("the script stops at its bound, not at the operation limit minutes later");
    assert_eq!(o.error_kind(), Some("tool_policy_panic"), "{o:?}");
    assert!(o.content.text().contains("200ms"), "{o:?}");
}

#[test]
fn a_script_timeout_of_zero_fails_the_build() {
    let policy = policy_with(|p| p.dispatch.script_timeout = Duration::ZERO);
    let err = Engine::builder(policy).build().unwrap_err();
    assert!(err.to_string().contains("dispatch.script_timeout"), "{err}");
}

/// Waits for `n` `start` events of `session` on `events`, keeping every event it reads.
async fn starts(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<toolgate::events::Event>,
    seen: &mut Vec<toolgate::events::Event>,
    session: &str,
    n: usize,
) {
    let count = |seen: &[toolgate::events::Event]| {
        seen.iter()
            .filter(|e| matches!(e.kind, EventKind::Start) && e.session.as_deref() == Some(session))
            .count()
    };
    while count(seen) < n {
        let e = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("the calls start within a minute")
            .expect("the engine is alive");
        seen.push(e);
    }
}

// One thread for the runtime: a call's `start` event and its place in the plugin's queue are
// taken in one poll, so once the test has seen a call's `start`, the call waits in the queue.
#[tokio::test]
async fn calls_waiting_for_a_plugins_threads_are_served_in_turn_across_sessions() {
    let engine = testkit("    max_threads: 1\n");
    let mut events = engine.subscribe();
    let mut seen = Vec::new();
    // Holds the only thread until the test cancels it.
    let release = tokio_util::sync::CancellationToken::new();
    let blocker = {
        let (engine, release) = (engine.clone(), release.clone());
        let s = engine.session(Some("blocker")).unwrap();
        tokio::spawn(async move {
            let calls = [call("b", "sleep", json!({"ms": 600_000}))];
            engine.dispatch_with_cancel(&s, &calls, &release).await
        })
    };
    starts(&mut events, &mut seen, "blocker", 1).await;
    // The greedy session queues 20 calls, then four others one each.
    let mut turns = Vec::new();
    let mut turn = |session: &str, n: usize| {
        let engine = engine.clone();
        let s = engine.session(Some(session)).unwrap();
        let calls: Vec<_> = (0..n)
            .map(|i| call(&format!("{session}-{i}"), "progress", json!({"steps": 1})))
            .collect();
        turns.push(tokio::spawn(async move {
            engine.dispatch(&s, &calls).await.unwrap()
        }));
    };
    turn("greedy", 20);
    starts(&mut events, &mut seen, "greedy", 20).await;
    for other in ["s1", "s2", "s3", "s4"] {
        turn(other, 1);
        starts(&mut events, &mut seen, other, 1).await;
    }
    release.cancel();
    let blocked = blocker.await.unwrap().unwrap();
    assert!(blocked[0].error.is_some(), "{:?}", blocked[0]);
    for t in turns {
        for o in t.await.unwrap() {
            assert!(o.error.is_none(), "every waiting call runs: {o:?}");
        }
    }
    while let Ok(e) = events.try_recv() {
        seen.push(e);
    }
    // One thread: the calls run one by one, each reporting its one step as it runs.
    let ran: Vec<&str> = seen
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Update { .. }))
        .filter_map(|e| e.session.as_deref())
        .collect();
    let mut expected = vec!["greedy", "s1", "s2", "s3", "s4"];
    expected.extend(std::iter::repeat_n("greedy", 19));
    assert_eq!(ran, expected, "the order the waiting calls ran in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_for_a_plugins_thread_counts_against_the_timeout_and_is_reported_as_queued() {
    let engine = testkit("    max_threads: 1\ndispatch: {timeout: 1s}\n");
    let s = engine.session(None).unwrap();
    let calls = [
        call("a", "sleep", json!({"ms": 700})),
        call("b", "sleep", json!({"ms": 700})),
    ];
    let outcomes = engine.dispatch(&s, &calls).await.unwrap();
    let (ran, waited): (Vec<_>, Vec<_>) = outcomes.iter().partition(|o| o.error.is_none());
    assert_eq!(ran.len(), 1, "{outcomes:?}");
    assert_eq!(ran[0].content.text(), "slept 700 ms");
    assert_eq!(waited.len(), 1, "{outcomes:?}");
    assert_eq!(waited[0].error_kind(), Some("timeout"), "{:?}", waited[0]);
    assert!(
        waited[0].queued >= Duration::from_millis(500),
        "it waited for the other call's 700 ms sleep: {:?}",
        waited[0]
    );
}
