//! What the limits layer costs on one call (issue 27): the same guarded call of a native `echo`
//! without `limits:` (the chain main had: no layer is built), with a local rate limit that
//! never refuses, with a local concurrency gate, and with the rate limit kept in Redis.
//!
//! | bench | what |
//! |---|---|
//! | `limits/none` | no `limits:` section (the baseline) |
//! | `limits/local_rate` | one `limits.rates` entry, in memory |
//! | `limits/local_rate_and_concurrency` | the same, and `limits.concurrency` |
//! | `limits/redis_rate` | the entry in Redis (one Lua script per call over loopback) |
//!
//! The Redis bench needs a server: `eval "$(bash scripts/redis.sh start)"` first (it reads
//! `TOOLGATE_TEST_REDIS_URL`); without it that bench is skipped with a message.
//!
//! ```text
//! cargo bench -p toolgate --bench limits
//! ```

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::history::ToolCall;
use toolgate::tool::{FnTool, Tool, ToolOutput};
use toolgate::{Engine, Policy};

#[global_allocator]
static ALLOCATOR: toolgate::script::ScriptMemory = toolgate::script::ScriptMemory;

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

fn engine(yaml: &str) -> Engine {
    let dir = std::env::temp_dir();
    let policy: Policy = toolgate_policy::load_str(
        &format!("version: 1\n{yaml}"),
        &dir.join("bench-policy.yaml"),
    )
    .expect("the bench policy loads");
    Engine::builder(policy)
        .tool_arc(echo())
        .build()
        .expect("the bench engine builds")
}

/// A rate no bench reaches: the check runs, and always passes.
const RATE: &str = "limits:\n  rates:\n    - rate: 1000000000/s\n";

fn limits(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let call = ToolCall::new("c1", "echo", r#"{"text":"hi"}"#);
    let mut g = c.benchmark_group("limits");
    let mut cases = vec![
        ("none", engine("")),
        ("local_rate", engine(RATE)),
        (
            "local_rate_and_concurrency",
            engine(&format!(
                "{RATE}  concurrency:\n    per_principal: 64\n    total: 256\n"
            )),
        ),
    ];
    match std::env::var("TOOLGATE_TEST_REDIS_URL") {
        Ok(url) => cases.push((
            "redis_rate",
            engine(&format!(
                "{RATE}  redis:\n    url: \"{url}\"\n    prefix: \"toolgate-bench\"\n    \
                 on_store_error: closed\n    timeout: 1s\n"
            )),
        )),
        Err(_) => eprintln!(
            "limits/redis_rate skipped: run `eval \"$(bash scripts/redis.sh start)\"` first"
        ),
    }
    for (name, engine) in &cases {
        let session = engine.session(None).expect("a session");
        let first = rt.block_on(engine.call(&session, &call));
        assert!(!first.is_error(), "{name}: {first:?}");
        g.bench_function(*name, |b| {
            b.iter(|| black_box(rt.block_on(engine.call(&session, black_box(&call)))))
        });
    }
    g.finish();
}

criterion_group!(benches, limits);
criterion_main!(benches);
