//! The script pool's guarantees: a bound on every run, on the threads and on the queue.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use toolgate_policy::{ScriptSource, Scripts};

use super::pool::ScriptPool;
use super::{CallView, ScriptLimits, ScriptSet, Verdict};
use crate::error::CallError;

/// A set with `before` as its before script, runs bounded by `timeout`, on `pool`; the
/// operation limit out of reach, so only the clock ends a loop.
fn before_set(before: &str, timeout: Duration, pool: ScriptPool) -> Arc<ScriptSet> {
    let scripts = Scripts {
        before: Some(ScriptSource {
            code: before.to_string(),
            file: "before.rhai".into(),
            line_offset: 1,
            column_offset: 0,
        }),
        ..Scripts::default()
    };
    let limits = ScriptLimits {
        max_operations: u64::MAX,
        ..ScriptLimits::default()
    };
    let mut set = ScriptSet::compile(&scripts, &limits)
        .and_then(|s| s.with_timeout(timeout))
        .unwrap_or_else(|e| panic!("the script compiles: {e}"));
    set.pool = pool;
    Arc::new(set)
}

/// `args.text` is `text`.
fn args(text: &str) -> serde_json::Value {
    serde_json::json!({ "text": text })
}

static LOCAL: std::sync::LazyLock<std::sync::Arc<crate::caller::Caller>> =
    std::sync::LazyLock::new(crate::caller::Caller::local);

fn view(args: &serde_json::Value) -> CallView<'_> {
    CallView {
        kind: "tool",
        tool: "echo",
        model_name: "echo",
        args,
        call_id: "c",
        session: None,
        caller: LOCAL.as_ref(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Spins while `args.text` is "spin", else allows.
const SPIN_OR_ALLOW: &str = "if args.text == \"spin\" { loop {} }\ntrue";

/// Polls `f` once, so that it submits its job, and keeps it.
fn started<F: Future>(f: F) -> std::pin::Pin<Box<F>> {
    let mut f = Box::pin(f);
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(
        matches!(f.as_mut().poll(&mut cx), Poll::Pending),
        "the run waits for its thread"
    );
    f
}

#[test]
fn runs_queued_behind_runaway_scripts_are_answered_by_their_own_bound() {
    let rt = runtime();
    let set = before_set(
        SPIN_OR_ALLOW,
        Duration::from_millis(500),
        ScriptPool::with_bounds(1, 16),
    );
    let (spin, quick) = (args("spin"), args("quick"));
    let never = CancellationToken::new();
    let started = Instant::now();
    // Three runaways and a quick run for one thread: the bounds count from the request, so
    // the queue does not add the runaways' bounds up.
    let verdicts = rt.block_on(futures::future::join_all(
        [&spin, &spin, &spin, &quick].map(|a| set.before(view(a), None, &never)),
    ));
    let took = started.elapsed();
    for (i, verdict) in verdicts.into_iter().enumerate() {
        match verdict {
            Ok(Verdict::Allow) if i == 3 => {}
            Err(CallError::ToolPolicyPanic { message, .. }) => assert!(
                message.contains("500ms bound (dispatch.script_timeout)"),
                "run {i}: {message}"
            ),
            other => panic!("run {i}: {other:?}"),
        }
    }
    assert!(
        took < Duration::from_secs(20),
        "four runs of a 500 ms bound took {took:?}"
    );
}

#[test]
fn no_more_scripts_run_at_once_than_the_pool_has_threads() {
    let rt = runtime();
    let set = before_set(
        "sleep(0.2);\ntrue",
        Duration::from_secs(60),
        ScriptPool::with_bounds(2, 16),
    );
    let a = args("x");
    let never = CancellationToken::new();
    let started = Instant::now();
    let verdicts = rt.block_on(futures::future::join_all(
        (0..6).map(|_| set.before(view(&a), None, &never)),
    ));
    let took = started.elapsed();
    assert!(
        verdicts.iter().all(|v| matches!(v, Ok(Verdict::Allow))),
        "{verdicts:?}"
    );
    // Six runs of 200 ms, two at a time: three rounds at least.
    assert!(
        took >= Duration::from_millis(600),
        "six 200 ms scripts took {took:?}: more than two ran at once"
    );
}

#[test]
fn a_run_that_finds_the_queue_full_is_refused_at_once() {
    let rt = runtime();
    let set = before_set(
        SPIN_OR_ALLOW,
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 2),
    );
    let (spin, quick) = (args("spin"), args("quick"));
    let never = CancellationToken::new();
    let _guard = rt.enter();
    // One run on the thread, two waiting.
    let held: Vec<_> = (0..3)
        .map(|_| started(set.before(view(&spin), None, &never)))
        .collect();
    let mut refused = pin!(set.before(view(&quick), None, &never));
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    match refused.as_mut().poll(&mut cx) {
        Poll::Ready(Err(CallError::ToolPolicyPanic { message, .. })) => assert_eq!(
            message,
            "the script did not run: 2 scripts already wait for one of the 1 script threads"
        ),
        Poll::Ready(other) => panic!("expected a refusal, got {other:?}"),
        Poll::Pending => panic!("the fourth run waits instead of being refused"),
    }
    drop(held);
}
