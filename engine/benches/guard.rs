//! What the guard costs, measured against the goals of the engine issue. Speed targets live
//! here only, never in tests.
//!
//! | group | goal |
//! |---|---|
//! | `overhead`: `guarded` - `direct`, no hooks, `Policy::default()` | < 2 µs median |
//! | `hooks`: aliases + Rhai rewrite + before + after | < 10 µs median (last measured, under load 11: 23.2 µs; `docs/benchmarks.md`) |
//! | `plugin`: `plugin_echo_1kb` - `native_echo_1kb` | < 5 µs median |
//! | `plugin`: the same on a multi-thread runtime's worker (`*_multi_thread`) | < 5 µs median |
//! | `process`: `echo_1kb` under `isolation: process` | < 50 µs median |
//! | `process`: `crash_then_echo`: a crash, the restart and one call | for information |
//! | `dispatch`: 1,000 calls of one turn sleeping 10 ms each | < 60 ms wall |
//!
//! Every async measurement is `rt.block_on(..)` inside `iter`, so it includes the cost of one
//! `block_on`; `overhead/block_on_baseline` measures `block_on(async {})` on the same runtime,
//! to subtract. The differences above cancel it anyway.
//!
//! The plugin benches need the testkit plugin beside the bench executable (the engine looks in
//! `target/release/deps` and `target/release`) or in `TOOLGATE_PLUGIN_PATH`:
//!
//! ```text
//! cargo build --release -p toolgate-plugin-testkit
//! cargo bench -p toolgate --bench guard
//! ```
//!
//! Without it the plugin benches are skipped with a message; the others still run. The
//! `process` benches also need the `toolgate` program of the same profile (it is the plugin
//! worker): `cargo build --release -p toolgate-cli -p toolgate-plugin-testkit`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::history::ToolCall;
use toolgate::tool::{FnTool, Tool, ToolContext, ToolOutput};
use toolgate::{Engine, Outcome, Policy};
use toolgate_policy::{AliasSpec, PluginLocation, PluginSpec, ScriptSource};

/// As in the `toolgate` program: script runs count the memory they hold, and every allocation
/// pays for the check.
#[global_allocator]
static ALLOCATOR: toolgate::script::ScriptMemory = toolgate::script::ScriptMemory;

// ---------------------------------------------------------------------------------------------
// tools, policies, runtimes

/// `echo {text}`: returns the text.
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

/// `sleep {ms}`: an async sleep on the tokio timer.
fn sleeper() -> Arc<dyn Tool> {
    Arc::new(FnTool::new(
        "sleep",
        "Sleep.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
        |_ctx, args: Value| async move {
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text(format!("slept {ms}ms")))
        },
    ))
}

fn script(code: &str) -> Option<ScriptSource> {
    Some(ScriptSource {
        code: code.to_string(),
        file: "bench.rhai".into(),
        line_offset: 1,
        column_offset: 0,
    })
}

const REWRITE: &str = "let a = args; a.text = a.text.to_upper(); a";
const BEFORE: &str = r#"if args.text.len() > 1000 { "too long" } else { () }"#;
const AFTER: &str = "if outcome.is_error { () }";

/// `echo` is also `say`, and its `text` argument is also `message`.
fn aliases() -> BTreeMap<String, AliasSpec> {
    BTreeMap::from([(
        "echo".to_string(),
        AliasSpec {
            names: vec!["say".into()],
            arguments: BTreeMap::from([("text".to_string(), vec!["message".to_string()])]),
            position: None,
        },
    )])
}

fn native_engine(policy: Policy, tool: Arc<dyn Tool>) -> Engine {
    Engine::builder(policy)
        .tool_arc(tool)
        .build()
        .unwrap_or_else(|e| panic!("the bench engine builds: {e}"))
}

/// An engine with the testkit plugin only, or `None` (with a message) when it is not built;
/// the plugin may hold `max_threads` threads.
fn testkit_engine(max_threads: usize) -> Option<Engine> {
    let mut policy = Policy::default();
    let mut spec = PluginSpec::new(PluginLocation::Name("testkit".into()));
    spec.max_threads = max_threads;
    policy.plugins.push(spec);
    match Engine::builder(policy).build() {
        Ok(e) => Some(e),
        Err(e) => {
            eprintln!(
                "skipping the plugin benches: {e}\n(run `cargo build --release -p toolgate-plugin-testkit` with the same CARGO_TARGET_DIR first)"
            );
            None
        }
    }
}

/// The `toolgate` program beside the bench (`target/<profile>/toolgate`), if built.
fn toolgate_program() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let program = exe.parent()?.parent()?.join("toolgate");
    program.is_file().then_some(program)
}

/// An engine with the testkit plugin in a worker process, or `None` (with a message).
fn process_engine() -> Option<Engine> {
    let Some(program) = toolgate_program() else {
        eprintln!(
            "skipping the process benches: no toolgate program beside the bench (run `cargo build --release -p toolgate-cli` first)"
        );
        return None;
    };
    let mut policy = Policy::default();
    let mut spec = PluginSpec::new(PluginLocation::Name("testkit".into()));
    spec.isolation = toolgate_policy::Isolation::Process;
    policy.plugins.push(spec);
    match Engine::builder(policy).plugin_host(program).build() {
        Ok(e) => Some(e),
        Err(e) => {
            eprintln!("skipping the process benches: {e}");
            None
        }
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime")
}

/// Checks once, outside the measurement, that a bench measures a successful call.
fn expect_text(o: &Outcome, text: &str) {
    assert!(o.error.is_none(), "{}: {:?}", o.tool_name, o.error);
    assert_eq!(o.content.text(), text, "{}", o.tool_name);
}

// ---------------------------------------------------------------------------------------------
// 1. guard overhead, no hooks (goal: guarded - direct < 2 µs)

fn overhead(c: &mut Criterion) {
    let rt = current_thread();
    let tool = echo();
    let engine = native_engine(Policy::default(), tool.clone());
    let session = engine.session(None).expect("session");
    let call = ToolCall::new("c", "echo", r#"{"text":"hi"}"#);
    let args: Value = json!({"text": "hi"});
    expect_text(&rt.block_on(engine.call(&session, &call)), "hi");

    let mut g = c.benchmark_group("overhead");
    g.bench_function("block_on_baseline", |b| {
        b.iter(|| rt.block_on(black_box(async {})))
    });
    g.bench_function("direct", |b| {
        b.iter(|| {
            rt.block_on(tool.call(ToolContext::detached("c"), black_box(args.clone())))
                .map(black_box)
                .ok()
        })
    });
    g.bench_function("guarded", |b| {
        b.iter(|| black_box(rt.block_on(engine.call(&session, black_box(&call)))))
    });
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// 2. aliases, a Rhai rewrite and before and after hooks (goal: < 10 µs)

fn hooks(c: &mut Criterion) {
    let rt = current_thread();
    let full = {
        let mut p = Policy {
            aliases: aliases(),
            ..Policy::default()
        };
        p.scripts.rewrite = script(REWRITE);
        p.scripts.before = script(BEFORE);
        p.scripts.after = script(AFTER);
        native_engine(p, echo())
    };
    // The same call with one feature at a time, to see where the time goes.
    let only = |f: fn(&mut Policy)| {
        let mut p = Policy {
            aliases: aliases(),
            ..Policy::default()
        };
        f(&mut p);
        native_engine(p, echo())
    };
    let parts: [(&str, Engine, &str); 4] = [
        ("aliases_only", only(|_| {}), "hi"),
        (
            "aliases_rewrite",
            only(|p| p.scripts.rewrite = script(REWRITE)),
            "HI",
        ),
        (
            "aliases_before",
            only(|p| p.scripts.before = script(BEFORE)),
            "hi",
        ),
        (
            "aliases_after",
            only(|p| p.scripts.after = script(AFTER)),
            "hi",
        ),
    ];
    let session = full.session(None).expect("session");
    // Both aliases used: the name `say` and the argument `message`.
    let call = ToolCall::new("c", "say", r#"{"message":"hi"}"#);
    expect_text(&rt.block_on(full.call(&session, &call)), "HI");
    for (_, engine, text) in &parts {
        expect_text(&rt.block_on(engine.call(&session, &call)), text);
    }

    let mut g = c.benchmark_group("hooks");
    g.bench_function("aliases_rewrite_before_after", |b| {
        b.iter(|| black_box(rt.block_on(full.call(&session, black_box(&call)))))
    });
    for (name, engine, _) in &parts {
        g.bench_function(*name, |b| {
            b.iter(|| black_box(rt.block_on(engine.call(&session, black_box(&call)))))
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// 3. a plugin call over a native call, 1 KB payload (goal: plugin - native < 5 µs)

fn plugin(c: &mut Criterion) {
    let Some(plugin) = testkit_engine(PluginSpec::DEFAULT_MAX_THREADS) else {
        return;
    };
    let rt = current_thread();
    let native = native_engine(Policy::default(), echo());
    let session = native.session(None).expect("session");
    let payload: String = "0123456789abcdef".repeat(64);
    assert_eq!(payload.len(), 1024);
    let call = ToolCall::new("c", "echo", json!({"text": payload}).to_string());
    expect_text(&rt.block_on(native.call(&session, &call)), &payload);
    expect_text(&rt.block_on(plugin.call(&session, &call)), &payload);

    let mut g = c.benchmark_group("plugin");
    g.bench_function("native_echo_1kb", |b| {
        b.iter(|| black_box(rt.block_on(native.call(&session, black_box(&call)))))
    });
    g.bench_function("plugin_echo_1kb", |b| {
        b.iter(|| black_box(rt.block_on(plugin.call(&session, black_box(&call)))))
    });
    // For comparison: a hop to tokio's blocking pool and back with an empty closure, what a
    // plugin call paid before plugins had threads of their own.
    g.bench_function("spawn_blocking_baseline", |b| {
        b.iter(|| rt.block_on(async { tokio::task::spawn_blocking(|| black_box(1u8)).await.ok() }))
    });
    // The same two calls from a task of a multi-thread runtime, as the CLI and `serve` run
    // them (`block_on` of a spawned task, so the call runs on a runtime worker).
    let mt = multi_thread();
    let native = Arc::new(native);
    let plugin = Arc::new(plugin);
    let session = Arc::new(session);
    let call = Arc::new(call);
    let on_worker = |engine: &Arc<Engine>| {
        let (engine, session, call) = (engine.clone(), session.clone(), call.clone());
        mt.block_on(async move {
            tokio::spawn(async move { engine.call(&session, &call).await })
                .await
                .ok()
        })
    };
    g.bench_function("native_echo_1kb_multi_thread", |b| {
        b.iter(|| black_box(on_worker(&native)))
    });
    g.bench_function("plugin_echo_1kb_multi_thread", |b| {
        b.iter(|| black_box(on_worker(&plugin)))
    });
    g.finish();
    hops(c, &mt);
}

/// The floor of a call handed to another thread and back, without the plugin and the guard:
/// what two thread wake-ups cost on this machine.
fn hops(c: &mut Criterion, mt: &tokio::runtime::Runtime) {
    let mut g = c.benchmark_group("plugin");
    // Two plain threads taking turns: one park/unpark (futex) each way.
    let (to_other, from_main) = std::sync::mpsc::sync_channel::<std::thread::Thread>(0);
    let turn = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let theirs = turn.clone();
    let other = std::thread::spawn(move || {
        let Ok(main) = from_main.recv() else { return };
        let mut seen = 1;
        loop {
            while theirs.load(std::sync::atomic::Ordering::Acquire) < seen {
                std::thread::park();
            }
            if theirs.load(std::sync::atomic::Ordering::Acquire) == u64::MAX {
                return;
            }
            theirs.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            seen += 2;
            main.unpark();
        }
    });
    to_other.send(std::thread::current()).ok();
    let mut round = 0u64;
    g.bench_function("hop_baseline_thread_park_round_trip", |b| {
        b.iter(|| {
            round += 2;
            turn.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            other.thread().unpark();
            while turn.load(std::sync::atomic::Ordering::Acquire) < round {
                std::thread::park();
            }
        })
    });
    turn.store(u64::MAX, std::sync::atomic::Ordering::Release);
    other.thread().unpark();
    other.join().ok();
    // A task on a runtime worker handing an empty job to a sleeping thread and awaiting its
    // answer over a oneshot: the two hops of a plugin call, nothing else.
    let (jobs, queue) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<u8>>();
    let thread = std::thread::spawn(move || {
        while let Ok(done) = queue.recv() {
            done.send(1).ok();
        }
    });
    let jobs = Arc::new(std::sync::Mutex::new(jobs));
    g.bench_function("hop_baseline_worker_to_thread_and_back_multi_thread", |b| {
        b.iter(|| {
            let jobs = jobs.clone();
            mt.block_on(async move {
                tokio::spawn(async move {
                    let (done, answer) = tokio::sync::oneshot::channel();
                    jobs.lock().ok()?.send(done).ok()?;
                    answer.await.ok()
                })
                .await
                .ok()
            })
        })
    });
    drop(jobs);
    thread.join().ok();
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// 3b. a plugin call through a worker process (goal: < 50 µs), and a crash with its restart

fn process(c: &mut Criterion) {
    let Some(engine) = process_engine() else {
        return;
    };
    let rt = multi_thread();
    let session = engine.session(None).expect("session");
    let payload: String = "0123456789abcdef".repeat(64);
    let call = ToolCall::new("c", "echo", json!({"text": payload}).to_string());
    let crash = ToolCall::new("c", "crash", r#"{"how":"abort"}"#);
    expect_text(&rt.block_on(engine.call(&session, &call)), &payload);

    let mut g = c.benchmark_group("process");
    g.bench_function("echo_1kb", |b| {
        b.iter(|| black_box(rt.block_on(engine.call(&session, black_box(&call)))))
    });
    g.sample_size(10);
    g.bench_function("crash_then_echo", |b| {
        b.iter(|| {
            let crashed = rt.block_on(engine.call(&session, &crash));
            assert!(crashed.error.is_some());
            black_box(rt.block_on(engine.call(&session, &call)))
        })
    });
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// 4. 1,000 calls of one turn that each sleep 10 ms, in parallel (goal: < 60 ms wall)

fn sleep_calls() -> Vec<ToolCall> {
    (0..1000)
        .map(|i| ToolCall::new(format!("c{i}"), "sleep", r#"{"ms":10}"#))
        .collect()
}

fn dispatch(c: &mut Criterion) {
    let rt = multi_thread();
    let calls = sleep_calls();
    let native = native_engine(Policy::default(), sleeper());
    let session = native.session(None).expect("session");
    let check = |outcomes: &[Outcome]| {
        assert_eq!(outcomes.len(), calls.len());
        assert!(
            outcomes.iter().all(|o| o.error.is_none()),
            "every sleep succeeds"
        );
    };
    check(
        &rt.block_on(native.dispatch(&session, &calls))
            .expect("turn"),
    );

    let mut g = c.benchmark_group("dispatch");
    g.sample_size(10);
    g.bench_function("native_sleep_10ms_x1000", |b| {
        b.iter(|| black_box(rt.block_on(native.dispatch(&session, black_box(&calls)))))
    });
    // For information: plugin calls are blocking C calls, one thread each; with 1,000 threads
    // allowed, they all sleep at once.
    if let Some(plugin) = testkit_engine(1000) {
        check(
            &rt.block_on(plugin.dispatch(&session, &calls))
                .expect("turn"),
        );
        g.bench_function("plugin_sleep_10ms_x1000", |b| {
            b.iter(|| black_box(rt.block_on(plugin.dispatch(&session, black_box(&calls)))))
        });
    }
    g.finish();
}

criterion_group!(benches, overhead, hooks, plugin, process, dispatch);
criterion_main!(benches);
