//! SPEC E1, the tracing half: every call runs inside a `tracing` span with the tool name, call
//! id and session id. In a test binary of its own, because tracing caches callsite interest
//! process-wide and other tests running at the same time would race with the subscriber.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use toolgate::Engine;
use tracing_subscriber::layer::SubscriberExt;

/// The `(name, value)` fields of each span recorded.
type Recorded = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// Records the fields of every `tool_call` span.
#[derive(Clone, Default)]
struct SpanFields(Recorded);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanFields {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() != "tool_call" {
            return;
        }
        struct V(Vec<(String, String)>);
        impl tracing::field::Visit for V {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                self.0.push((f.name().to_string(), format!("{v:?}")));
            }
            fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
                self.0.push((f.name().to_string(), v.to_string()));
            }
        }
        let mut v = V(Vec::new());
        attrs.record(&mut v);
        self.0.lock().unwrap().push(v.0);
    }
}

#[test]
fn e1_every_call_runs_in_a_tracing_span_with_tool_call_id_and_session() {
    let fields = SpanFields::default();
    let subscriber = tracing_subscriber::registry().with(fields.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let engine = Engine::builder(Default::default())
            .tool(echo("echo"))
            .build()
            .unwrap();
        let s = engine.session(Some("sess-9")).unwrap();
        engine.call(&s, &call("id-3", "echo", json!({}))).await;
    });
    let spans = fields.0.lock().unwrap();
    assert_eq!(spans.len(), 1);
    let get = |k: &str| {
        spans[0]
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    // Named after the OpenTelemetry GenAI semantic conventions (O1).
    assert_eq!(get("gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(get("gen_ai.tool.call.id").as_deref(), Some("id-3"));
    assert_eq!(
        get("gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(get("toolgate.session").as_deref(), Some("sess-9"));
}
