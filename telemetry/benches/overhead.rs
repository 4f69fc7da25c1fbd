//! What telemetry costs a call (issue 28, O4), measured in one run against the same engine:
//!
//! | bench | what is on | goal |
//! |---|---|---|
//! | `telemetry/off` | nothing (no subscriber, no listener): the engine as `guard`'s `overhead/guarded` | the baseline |
//! | `telemetry/metrics` | the metrics listener on the engine's events (OpenTelemetry SDK instruments, read by `/metrics`) | < 10 µs over `off` |
//! | `telemetry/traces` | the OpenTelemetry layer, spans batched to an exporter | < 10 µs over `off` |
//! | `telemetry/traces_and_metrics` | both | < 10 µs over `off` |
//!
//! "Off costs nothing" is `telemetry/off` against `overhead/guarded` of the `guard` bench, run
//! before and after the telemetry changes (`scripts/compare`). The exporter of the traces bench
//! drops each batch on the SDK's own export thread: what is measured is the cost on the caller's
//! thread (building the span and its attributes, handing it to the batch), not the network.
//!
//! ```text
//! cargo bench -p toolgate-telemetry --bench overhead
//! ```

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::{Value, json};
use toolgate::history::ToolCall;
use toolgate::tool::{FnTool, Tool, ToolOutput};
use toolgate::{Engine, Policy};
use toolgate_telemetry::metrics::Metrics;
use toolgate_telemetry::{LogFormat, LogOptions};
use tracing_subscriber::EnvFilter;

/// As in the `toolgate` program and the guard bench.
#[global_allocator]
static ALLOCATOR: toolgate::script::ScriptMemory = toolgate::script::ScriptMemory;

/// Drops every batch: the export thread's work is not the caller's.
#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        drop(black_box(batch));
        Ok(())
    }
}

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

fn engine(metrics: bool) -> Engine {
    let mut builder = Engine::builder(Policy::default()).tool_arc(echo());
    if metrics {
        builder = builder.on_event(Metrics::new().listener());
    }
    builder.build().expect("the bench engine builds")
}

fn traced() -> (
    SdkTracerProvider,
    impl tracing::Subscriber + Send + Sync + 'static,
) {
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(Discard)
        .build();
    let log = LogOptions {
        filter: EnvFilter::new("warn"),
        format: LogFormat::Text,
    };
    let subscriber = toolgate_telemetry::subscriber(log, Some(&provider));
    (provider, subscriber)
}

fn telemetry(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let call = ToolCall::new("c", "echo", r#"{"text":"hi"}"#);
    let mut g = c.benchmark_group("telemetry");
    for (name, metrics, traces) in [
        ("off", false, false),
        ("metrics", true, false),
        ("traces", false, true),
        ("traces_and_metrics", true, true),
    ] {
        let engine = engine(metrics);
        let session = engine.session(None).expect("session");
        let outcome = rt.block_on(engine.call(&session, &call));
        assert_eq!(outcome.content.text(), "hi");
        let measure = |g: &mut criterion::BenchmarkGroup<'_, _>| {
            g.bench_function(name, |b| {
                b.iter(|| black_box(rt.block_on(engine.call(&session, black_box(&call)))))
            });
        };
        if traces {
            let (provider, subscriber) = traced();
            tracing::subscriber::with_default(subscriber, || measure(&mut g));
            let _ = provider.shutdown();
        } else {
            measure(&mut g);
        }
    }
    g.finish();
}

criterion_group!(benches, telemetry);
criterion_main!(benches);
