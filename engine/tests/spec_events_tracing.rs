//! SPEC E1, the tracing half: every call runs inside a `tracing` span with the tool name, call
//! id and session id, and (O1) how it ended is recorded on that span. In a test binary of its
//! own, because tracing caches callsite interest process-wide and other tests running at the same
//! time would race with the subscriber.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use toolgate::Engine;
use tracing_subscriber::layer::SubscriberExt;

/// The `(name, value)` fields of each span recorded.
type Recorded = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// Records the fields of every `tool_call` span, those it was made with and those recorded
/// later; the second list maps a span's id to its index in the first.
#[derive(Clone, Default)]
struct SpanFields(Recorded, Arc<Mutex<Vec<(tracing::span::Id, usize)>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanFields {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() != "tool_call" {
            return;
        }
        let mut v = V(Vec::new());
        attrs.record(&mut v);
        let mut spans = self.0.lock().unwrap();
        spans.push(v.0);
        self.1.lock().unwrap().push((id.clone(), spans.len() - 1));
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let Some(&(_, index)) = self.1.lock().unwrap().iter().find(|(i, _)| i == id) else {
            return;
        };
        let mut v = V(Vec::new());
        values.record(&mut v);
        self.0.lock().unwrap()[index].extend(v.0);
    }
}

/// Collects a span's fields as text.
struct V(Vec<(String, String)>);

impl tracing::field::Visit for V {
    fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
        self.0.push((f.name().to_string(), format!("{v:?}")));
    }
    fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
        self.0.push((f.name().to_string(), v.to_string()));
    }
}

/// The fields of the one `tool_call` span of a call `id-1` of tool `name`, in session `session`
/// (`None`: a session without an id), on an engine with `echo`, under `policy`.
fn call_span_fields(
    policy: toolgate::Policy,
    session: Option<&str>,
    name: &str,
) -> Vec<(String, String)> {
    let fields = SpanFields::default();
    let subscriber = tracing_subscriber::registry().with(fields.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let engine = Engine::builder(policy).tool(echo("echo")).build().unwrap();
        let s = engine.session(session).unwrap();
        engine
            .call(&s, &call("id-1", name, json!({"text": "hi"})))
            .await;
    });
    let mut spans = fields.0.lock().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    spans.remove(0)
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn o1_a_call_that_ends_well_records_its_decision_size_and_ok_status_on_its_span() {
    let fields = call_span_fields(Default::default(), None, "echo");
    assert_eq!(field(&fields, "toolgate.decision"), Some("allow"));
    assert_eq!(field(&fields, "otel.status_code"), Some("ok"));
    assert_eq!(field(&fields, "toolgate.offloaded"), Some("false"));
    assert_eq!(field(&fields, "toolgate.truncated"), Some("false"));
    assert!(
        field(&fields, "toolgate.result.chars").is_some(),
        "{fields:?}"
    );
    assert!(field(&fields, "toolgate.queued_ms").is_some(), "{fields:?}");
    // Nothing is recorded for what did not happen: no error, no rule, no session, no alias.
    for absent in [
        "error.type",
        "otel.status_description",
        "toolgate.rule",
        "toolgate.session",
        "toolgate.model_name",
    ] {
        assert_eq!(field(&fields, absent), None, "{absent}: {fields:?}");
    }
}

#[test]
fn o1_a_denied_call_records_the_rule_the_error_kind_and_an_error_status_on_its_span() {
    let dir = tempfile::tempdir().unwrap();
    let policy = yaml_policy(
        "version: 1\nrules:\n  deny:\n    - tools: [echo]\n      reason: not today\n",
        dir.path(),
    );
    let fields = call_span_fields(policy, None, "echo");
    assert_eq!(field(&fields, "toolgate.decision"), Some("deny"));
    assert!(
        field(&fields, "toolgate.rule").is_some_and(|r| r.ends_with("deny[0]")),
        "{fields:?}"
    );
    assert_eq!(field(&fields, "error.type"), Some("denied"));
    assert_eq!(field(&fields, "otel.status_code"), Some("error"));
    assert!(
        field(&fields, "otel.status_description").is_some_and(|d| d.contains("not today")),
        "{fields:?}"
    );
}

#[test]
fn e1_every_call_runs_in_a_tracing_span_with_tool_call_id_and_session() {
    let fields = call_span_fields(Default::default(), Some("sess-9"), "echo");
    // Named after the OpenTelemetry GenAI semantic conventions (O1).
    assert_eq!(field(&fields, "gen_ai.tool.name"), Some("echo"));
    assert_eq!(field(&fields, "gen_ai.tool.call.id"), Some("id-1"));
    assert_eq!(
        field(&fields, "gen_ai.operation.name"),
        Some("execute_tool")
    );
    assert_eq!(field(&fields, "toolgate.session"), Some("sess-9"));
}
