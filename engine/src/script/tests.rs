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
    let spin = args("spin");
    let never = CancellationToken::new();
    let _guard = rt.enter();
    // One run on the thread, two waiting.
    let held: Vec<_> = (0..3)
        .map(|_| started(set.before(view(&spin), None, &never)))
        .collect();
    // A run past the inline budget needs a thread too (a quick one does not).
    let mut refused = pin!(set.before(view(&spin), None, &never));
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

/// Sums 0..n in a loop: some 4 operations a round, so `n` = 5,000 is past the inline budget.
fn sum_to(n: u32) -> String {
    format!("let s = 0;\nfor i in 0..{n} {{ s += i; }}\n`sum ${{s}}`")
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn a_script_past_the_inline_budget_runs_again_on_the_pool_with_the_same_answer() {
    let rt = current_thread();
    let long = before_set(
        &sum_to(5_000),
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 16),
    );
    let short = before_set(
        &sum_to(50),
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 16),
    );
    let a = args("x");
    let never = CancellationToken::new();
    assert_eq!(
        rt.block_on(long.before(view(&a), None, &never)).ok(),
        Some(Verdict::Deny("sum 12497500".into()))
    );
    assert_eq!(
        rt.block_on(short.before(view(&a), None, &never)).ok(),
        Some(Verdict::Deny("sum 1225".into()))
    );
}

#[test]
fn a_quick_script_needs_no_script_thread_and_a_long_one_does() {
    let rt = runtime();
    // One thread, no queue: a runaway on the thread leaves no room for another run on it.
    let set = before_set(
        &format!(
            "if args.text == \"spin\" {{ loop {{}} }}\nif args.text == \"long\" {{ {} }} else {{ true }}",
            sum_to(5_000)
        ),
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 0),
    );
    let (spin, quick, long) = (args("spin"), args("quick"), args("long"));
    let never = CancellationToken::new();
    let cancel_spin = CancellationToken::new();
    let _guard = rt.enter();
    let held = started(set.before(view(&spin), None, &cancel_spin));
    assert!(
        matches!(
            rt.block_on(set.before(view(&quick), None, &never)),
            Ok(Verdict::Allow)
        ),
        "a quick script answers on the caller's thread while the only script thread is busy"
    );
    match rt.block_on(set.before(view(&long), None, &never)) {
        Err(CallError::ToolPolicyPanic { message, .. }) => assert_eq!(
            message,
            "the script did not run: 0 scripts already wait for one of the 1 script threads"
        ),
        other => panic!("a script past the inline budget waits for a script thread: {other:?}"),
    }
    cancel_spin.cancel();
    drop(held);
}

#[test]
fn a_script_past_the_inline_budget_still_ends_at_its_full_bound() {
    let rt = current_thread();
    let set = before_set(
        "loop {}",
        Duration::from_millis(100),
        ScriptPool::with_bounds(1, 16),
    );
    let a = args("x");
    let never = CancellationToken::new();
    let started = Instant::now();
    match rt.block_on(set.before(view(&a), None, &never)) {
        Err(CallError::ToolPolicyPanic { message, .. }) => assert!(
            message
                .contains("the script ran longer than its 100ms bound (dispatch.script_timeout)"),
            "{message}"
        ),
        other => panic!("a loop ends at its bound: {other:?}"),
    }
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "the loop ran for its whole bound, not for the inline budget only"
    );
}

#[test]
fn a_script_that_sleeps_runs_on_the_pool_and_sleeps_once() {
    let rt = current_thread();
    let set = before_set(
        "sleep(0.3);\ntrue",
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 16),
    );
    let a = args("x");
    let never = CancellationToken::new();
    let started = Instant::now();
    assert!(matches!(
        rt.block_on(set.before(view(&a), None, &never)),
        Ok(Verdict::Allow)
    ));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(600),
        "one sleep of 300 ms took {took:?}: two would take 600"
    );
}

/// Counts the `print` lines (`info` events of `toolgate::script`) of this thread.
#[derive(Clone, Default)]
struct PrintedLines(Arc<std::sync::atomic::AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for PrintedLines {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if meta.target() == "toolgate::script" && *meta.level() == tracing::Level::INFO {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

#[test]
fn the_print_lines_of_an_abandoned_inline_run_are_not_written() {
    use tracing_subscriber::layer::SubscriberExt;
    let printed = PrintedLines::default();
    let _log =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(printed.clone()));
    let rt = current_thread();
    let count = || printed.0.load(std::sync::atomic::Ordering::Relaxed);
    let never = CancellationToken::new();
    let a = args("x");
    // A quick run writes its line on the caller's thread, once it ends.
    let quick = before_set(
        "print(\"hello\");\ntrue",
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 16),
    );
    assert!(matches!(
        rt.block_on(quick.before(view(&a), None, &never)),
        Ok(Verdict::Allow)
    ));
    assert_eq!(count(), 1, "the quick run's line");
    // A long one prints before it goes past the inline budget: that line is dropped here and
    // written by the run on the script thread (whose log this thread does not see).
    let long = before_set(
        &format!("print(\"hello\");\n{}", sum_to(5_000)),
        Duration::from_secs(5),
        ScriptPool::with_bounds(1, 16),
    );
    assert_eq!(
        rt.block_on(long.before(view(&a), None, &never)).ok(),
        Some(Verdict::Deny("sum 12497500".into()))
    );
    assert_eq!(count(), 1, "the abandoned run wrote no line");
}

#[test]
fn scripts_see_json_arguments_as_rhai_serde_makes_them() {
    let value = serde_json::json!({
        "null": null, "yes": true, "int": -7, "big": u64::MAX, "float": 1.5,
        "text": "é", "list": [1, "two", [3.0], {"four": 4}], "empty": {}
    });
    let expected = rhai::serde::to_dynamic(&value).expect("JSON converts");
    assert_eq!(
        format!("{:?}", super::json_to_dynamic(&value)),
        format!("{expected:?}")
    );
}

#[test]
fn the_after_script_sees_the_outcome_as_rhai_serde_makes_it() {
    for outcome in [
        super::OutcomeView {
            duration_ms: 1.25,
            queued_ms: 0.0,
            is_error: true,
            error_kind: Some("timeout"),
            error: Some("the call took too long".into()),
            chars: u64::MAX,
            truncated: true,
        },
        super::OutcomeView {
            duration_ms: 3.0,
            queued_ms: 0.5,
            is_error: false,
            error_kind: None,
            error: None,
            chars: 42,
            truncated: false,
        },
    ] {
        let expected = rhai::serde::to_dynamic(&outcome).expect("the outcome converts");
        assert_eq!(
            format!("{:?}", outcome.to_dynamic()),
            format!("{expected:?}")
        );
    }
}
