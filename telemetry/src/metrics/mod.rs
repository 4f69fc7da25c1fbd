//! The metrics of the calls an engine runs (O5, O7), fed by its events (E1): read in the
//! Prometheus text format at `/metrics`, and exported over OTLP when the policy or the
//! environment asks for it.
//!
//! | metric (Prometheus; OpenTelemetry) | type | labels |
//! | --- | --- | --- |
//! | `toolgate_calls_total`; `toolgate.calls` | counter | `kind`, `tool`, `outcome` (`ok`, `denied`, `error`) |
//! | `toolgate_call_denials_total`; `toolgate.call.denials` | counter | `kind`, `tool`, `by` (`rule`, `hook`) |
//! | `toolgate_call_errors_total`; `toolgate.call.errors` | counter | `kind`, `tool`, `error_kind` |
//! | `toolgate_call_duration_seconds`; `toolgate.call.duration` (s) | histogram | `kind`, `tool` |
//! | `toolgate_call_queue_seconds`; `toolgate.call.queue` (s) | histogram | `kind`, `tool` |
//! | `toolgate_calls_in_flight`; `toolgate.calls.in_flight` | gauge (up-down counter) | `kind` |
//! | `toolgate_offloaded_results_total`; `toolgate.offloaded.results` | counter | `kind`, `tool` |
//! | `toolgate_offloaded_bytes_total`; `toolgate.offloaded.bytes` (By) | counter | `kind`, `tool` |
//! | `toolgate_rate_limit_rejections_total`; `toolgate.rate_limit.rejections` | counter | `kind`, `tool` (`http_request` and empty for the HTTP requests `limits.requests` refuses) |
//! | `toolgate_call_retries_total`; `toolgate.call.retries` | counter | `kind`, `tool`, `error_kind` (of the attempt that failed) |
//! | `toolgate_circuit_open`; `toolgate.circuit.open` | gauge | `source` (1 while open or half-open, 0 once closed) |
//! | `toolgate_search_duration_seconds`; `toolgate.search.duration` (s) | histogram | none |
//! | `toolgate_plugin_restarts_total`; `toolgate.plugin.restarts` | counter | none |
//! | `toolgate_upstream_up`; `toolgate.upstream.up` | gauge | `server`, `state` |
//!
//! Label values are bounded: `tool` is the real name of a known tool or prompt, `unknown` for
//! a name no source has, a resource's URI scheme for a resource, and `other` once
//! [`MAX_TOOL_LABELS`] names have been seen; `error_kind` is a stable kind of the engine.
//!
//! # One set of instruments for both
//!
//! The instruments are those of the OpenTelemetry metrics SDK, made once from the definitions
//! in `set.rs` (name, unit, description, kind, labels): that table is the only place a metric
//! is defined. An event updates each instrument once. The meter provider has one reader per
//! way out: a [`ManualReader`](opentelemetry_sdk::metrics::ManualReader) that `/metrics`
//! collects at each scrape, written in the OpenMetrics text format by `prometheus-client`'s
//! encoder (`text.rs`), and, when OTLP export is on, the SDK's periodic reader with
//! `opentelemetry-otlp`'s exporter ([`crate::install`]). The Prometheus names are derived
//! from the OpenTelemetry ones by the rules Prometheus's OTLP receiver applies, so a series has
//! one name however it reaches Prometheus.
//!
//! Why not the other way round? `prometheus-client` keeps its values behind its text encoder
//! (a family's series cannot be listed, a histogram's buckets cannot be read), so an OTLP
//! export from it would mean parsing our own text or a second set of instruments updated beside
//! the first; and the SDK's Prometheus exporter crate (`opentelemetry-prometheus`) is not kept
//! up with the SDK any more. The SDK as the source costs a hash look-up of the attributes per
//! instrument and event (a few hundred nanoseconds a call; `benches/overhead.rs`).
//!
//! Each instrument keeps at most [`MAX_SERIES`] label sets; past that the SDK counts into one
//! series labelled `otel_metric_overflow="true"`.

mod set;
mod text;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{KeyValue, StringValue, Value};
use opentelemetry_sdk::metrics::{MeterProviderBuilder, SdkMeterProvider, Stream};
use prometheus_client::registry::Registry;
use toolgate::events::{Event, EventKind};

use self::set::Instruments;
pub use self::set::{UpstreamHealth, UpstreamProbe};
use self::text::{Pull, Scrape};

/// The `Content-Type` of [`Metrics::encode`]'s text (OpenMetrics, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The most distinct `tool` label values; later names are counted as `other`.
pub const MAX_TOOL_LABELS: usize = 1000;

/// The most label sets one instrument keeps (the SDK's cardinality limit, its default made
/// explicit). The SDK sets the room aside up front, per instrument and reader, so it is not
/// raised to the product of every label's values: a gateway with 1,000 tools in use rarely
/// sees every outcome and error kind of each.
pub const MAX_SERIES: usize = 2_000;

/// The metrics of one process.
pub struct Metrics {
    /// Owns the readers; shut down by [`crate::Installed`] when it exports.
    provider: SdkMeterProvider,
    /// The Prometheus text's registry: one collector, [`Scrape`].
    registry: Registry,
    instruments: Instruments,
    tools_seen: Mutex<HashSet<Arc<str>>>,
    upstreams: Arc<Mutex<Option<UpstreamProbe>>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Arc<Metrics>> = OnceLock::new();

/// Whether [`crate::install`] set up an OTLP export of the global metrics.
static EXPORTED: AtomicBool = AtomicBool::new(false);

impl Metrics {
    /// New metrics, every one at zero, read at `/metrics` only.
    pub fn new() -> Arc<Self> {
        Self::build(SdkMeterProvider::builder())
    }

    /// The metrics on a meter provider made of `builder` (which may hold other readers: an
    /// OTLP export) and the reader of `/metrics`.
    fn build(builder: MeterProviderBuilder) -> Arc<Self> {
        let pull = Pull::default();
        let provider = builder
            .with_reader(pull.clone())
            .with_view(|_: &opentelemetry_sdk::metrics::Instrument| {
                Stream::builder()
                    .with_cardinality_limit(MAX_SERIES)
                    .build()
                    .ok()
            })
            .build();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Scrape(pull)));
        let upstreams = Arc::new(Mutex::new(None));
        let instruments = Instruments::new(&provider.meter("toolgate"), Arc::clone(&upstreams));
        Arc::new(Metrics {
            provider,
            registry,
            instruments,
            tools_seen: Mutex::new(HashSet::new()),
            upstreams,
        })
    }

    /// The process's metrics, made on first use.
    pub fn global() -> Arc<Metrics> {
        Arc::clone(GLOBAL.get_or_init(Metrics::new))
    }

    /// Makes the process's metrics on `builder` (with its OTLP reader) and returns their
    /// provider, for [`crate::install`]; when they were made already (nothing should have asked
    /// before `install`), those stay, without the export, and a warning says so.
    pub(crate) fn install_global(builder: MeterProviderBuilder) -> SdkMeterProvider {
        let mut made = None;
        let global = GLOBAL.get_or_init(|| {
            let metrics = Metrics::build(builder);
            made = Some(metrics.provider.clone());
            metrics
        });
        match made {
            Some(provider) => {
                EXPORTED.store(true, Ordering::Relaxed);
                provider
            }
            None => {
                eprintln!("toolgate: the metrics were made before their OTLP export was set up");
                global.provider.clone()
            }
        }
    }

    /// Whether the process's metrics are exported over OTLP ([`crate::metrics_wanted`]):
    /// then they are counted even when the policy does not serve `/metrics`.
    pub fn exported() -> bool {
        EXPORTED.load(Ordering::Relaxed)
    }

    /// Whether an engine built from a policy with `settings` counts its calls: `/metrics` is
    /// served, or the metrics are exported over OTLP.
    pub fn counting(settings: &toolgate_policy::TelemetrySettings) -> bool {
        settings.metrics_on() || Self::exported()
    }

    /// A listener for [`toolgate::EngineBuilder::on_event`] that counts every call.
    pub fn listener(self: &Arc<Self>) -> impl Fn(&Event) + Send + Sync + 'static {
        let metrics = Arc::clone(self);
        move |event| metrics.observe(event)
    }

    /// Asks `probe` for the upstream servers' states at each collection.
    pub fn set_upstream_probe(&self, probe: UpstreamProbe) {
        *self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(probe);
    }

    /// Counts what `event` says.
    pub fn observe(&self, event: &Event) {
        let m = &self.instruments;
        let kind = event.call_kind.as_str();
        match &event.kind {
            EventKind::Start => {
                m.in_flight.add(event.call_kind, 1);
            }
            EventKind::End { outcome } => {
                let error_kind = outcome.error_kind;
                // A skipped call (D7) never started.
                if error_kind != Some("skipped") {
                    m.in_flight.add(event.call_kind, -1);
                }
                let tool = tool_value(self.tool_label(event, error_kind));
                let labels = [KeyValue::new("kind", kind), KeyValue::new("tool", tool)];
                let denied_by = match (outcome.decision.rules, outcome.decision.before_hook) {
                    (Some("deny"), _) => Some("rule"),
                    (_, Some("deny")) => Some("hook"),
                    _ if error_kind == Some("denied") => Some("rule"),
                    _ => None,
                };
                let result = match (denied_by, error_kind) {
                    (Some(_), _) => "denied",
                    (None, Some(_)) => "error",
                    (None, None) => "ok",
                };
                let with = |key: &'static str, value: &'static str| {
                    [
                        labels[0].clone(),
                        labels[1].clone(),
                        KeyValue::new(key, value),
                    ]
                };
                m.calls.add(1, &with("outcome", result));
                if let Some(by) = denied_by {
                    m.denials.add(1, &with("by", by));
                }
                if let Some(error_kind) = error_kind {
                    m.errors.add(1, &with("error_kind", error_kind));
                    if error_kind == "rate_limited" {
                        m.rate_limited.add(1, &labels);
                    }
                }
                let seconds = outcome.duration_ms / 1000.0;
                m.duration.record(seconds, &labels);
                m.queue.record(outcome.queued_ms / 1000.0, &labels);
                if outcome.result_id.is_some() {
                    m.offloaded.add(1, &labels);
                    m.offloaded_bytes.add(outcome.offloaded_bytes, &labels);
                }
                if event.tool_name == "tool_search" {
                    m.search.record(seconds, &[]);
                }
            }
            EventKind::Retry { error_kind, .. } => {
                let tool = tool_value(self.tool_label(event, Some(error_kind)));
                m.retries.add(
                    1,
                    &[
                        KeyValue::new("kind", kind),
                        KeyValue::new("tool", tool),
                        KeyValue::new("error_kind", *error_kind),
                    ],
                );
            }
            EventKind::Breaker { source, state, .. } => {
                let open = i64::from(*state != "closed");
                m.circuit_open
                    .record(open, &[KeyValue::new("source", source.clone())]);
            }
            EventKind::Update { .. } | EventKind::Error { .. } => {}
        }
    }

    /// Counts a call a rate limit refused (for a limiter that refuses before the engine runs
    /// the call; a `rate_limited` outcome is counted already): `serve --http` counts the
    /// requests `limits.requests` refuses as `kind` `http_request` with an empty `tool` (L8).
    pub fn rate_limited(&self, kind: &'static str, tool: &str) {
        let tool = tool_value(self.bounded(tool));
        self.instruments.rate_limited.add(
            1,
            &[KeyValue::new("kind", kind), KeyValue::new("tool", tool)],
        );
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!("the metrics could not be written: {e}");
        }
        text
    }

    /// The `tool` label of an event (see the module docs).
    fn tool_label(&self, event: &Event, error_kind: Option<&str>) -> Arc<str> {
        if matches!(
            error_kind,
            Some("unknown_tool" | "unknown_resource" | "unknown_prompt")
        ) {
            return Arc::from("unknown");
        }
        if event.call_kind == toolgate::access::CallKind::Resource {
            let scheme = event.tool_name.split(':').next().unwrap_or("");
            return self.bounded(scheme);
        }
        self.bounded(&event.tool_name)
    }

    /// `name`, or `other` once [`MAX_TOOL_LABELS`] other names have been seen; a name seen
    /// before is the same shared string (no allocation per call).
    fn bounded(&self, name: &str) -> Arc<str> {
        let mut seen = self
            .tools_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = seen.get(name) {
            return Arc::clone(known);
        }
        if seen.len() >= MAX_TOOL_LABELS {
            return Arc::from("other");
        }
        let name: Arc<str> = Arc::from(name);
        seen.insert(Arc::clone(&name));
        name
    }
}

/// A label value that shares `name` instead of copying it.
fn tool_value(name: Arc<str>) -> Value {
    Value::String(StringValue::from(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolgate::Engine;
    use toolgate::history::ToolCall;
    use toolgate::tool::{FnTool, ToolOutput};

    /// An engine with `echo`, a rule that refuses `echo {text: "no"}`, and `metrics` listening.
    fn engine(metrics: &Arc<Metrics>) -> Engine {
        let policy = toolgate_policy::load_str(
            "version: 1\nrules:\n  deny:\n    - tools: [echo]\n      args: {text: \"no\"}\n      reason: no\n",
            std::path::Path::new("metrics-test.yaml"),
        )
        .expect("the policy loads");
        Engine::builder(policy)
            .tool(FnTool::new(
                "echo",
                "Echo.",
                json!({"type": "object"}),
                |_ctx, args: serde_json::Value| async move {
                    Ok(ToolOutput::text(
                        args["text"].as_str().unwrap_or("").to_owned(),
                    ))
                },
            ))
            .on_event(metrics.listener())
            .build()
            .expect("the engine builds")
    }

    #[test]
    fn calls_are_counted_by_outcome_with_denials_and_errors_by_kind() {
        let metrics = Metrics::new();
        let engine = engine(&metrics);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let session = engine.session(None).expect("a session");
        for (id, name, text) in [
            ("1", "echo", "a"),
            ("2", "echo", "b"),
            ("3", "echo", "no"),
            ("4", "ehco", "x"),
        ] {
            let args = json!({"text": text}).to_string();
            rt.block_on(engine.call(&session, &ToolCall::new(id, name, args)));
        }
        let text = metrics.encode();
        for line in [
            r#"toolgate_calls_total{kind="tool",tool="echo",outcome="ok"} 2"#,
            r#"toolgate_calls_total{kind="tool",tool="echo",outcome="denied"} 1"#,
            r#"toolgate_calls_total{kind="tool",tool="unknown",outcome="error"} 1"#,
            r#"toolgate_call_denials_total{kind="tool",tool="echo",by="rule"} 1"#,
            r#"toolgate_call_errors_total{kind="tool",tool="unknown",error_kind="unknown_tool"} 1"#,
            r#"toolgate_call_duration_seconds_count{kind="tool",tool="echo"} 3"#,
            r#"toolgate_calls_in_flight{kind="tool"} 0"#,
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }

    #[test]
    fn calls_in_flight_count_a_running_call_under_its_kind_only_once_one_started() {
        let metrics = Metrics::new();
        let in_flight = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("toolgate_calls_in_flight{"))
                .map(str::to_owned)
                .collect()
        };
        assert!(in_flight(&metrics.encode()).is_empty());
        let start = event(EventKind::Start, "echo");
        metrics.observe(&start);
        assert_eq!(
            in_flight(&metrics.encode()),
            [r#"toolgate_calls_in_flight{kind="tool"} 1"#]
        );
        let mut end = start.clone();
        end.kind = EventKind::End {
            outcome: Arc::new(toolgate::events::OutcomeSummary {
                content: toolgate::Content::Text("hi".to_owned()),
                is_error: false,
                error_kind: None,
                error: None,
                truncated: false,
                output_chars: 2,
                duration_ms: 1.0,
                queued_ms: 0.0,
                result_id: None,
                redactions: 0,
                decision: Default::default(),
                offloaded_bytes: 0,
            }),
        };
        metrics.observe(&end);
        assert_eq!(
            in_flight(&metrics.encode()),
            [r#"toolgate_calls_in_flight{kind="tool"} 0"#]
        );
    }

    #[test]
    fn tool_labels_stop_growing_at_the_bound() {
        let metrics = Metrics::new();
        for i in 0..MAX_TOOL_LABELS {
            assert_eq!(&*metrics.bounded(&format!("t{i}")), format!("t{i}"));
        }
        assert_eq!(&*metrics.bounded("one-more"), "other");
        assert_eq!(&*metrics.bounded("t7"), "t7");
    }

    #[test]
    fn a_fresh_registry_describes_every_metric_of_the_set_with_the_toolgate_prefix() {
        // Every metric shows its HELP and TYPE lines from the start; the observed counter its
        // value at once.
        let text = Metrics::new().encode();
        for def in set::ALL {
            let line = format!("# TYPE {} ", def.prometheus_name());
            assert!(text.contains(&line), "{line} missing from:\n{text}");
        }
        for line in [
            "# TYPE toolgate_search_duration_seconds histogram",
            "# TYPE toolgate_plugin_restarts counter",
            "toolgate_plugin_restarts_total 0",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn histograms_have_the_latency_buckets_cumulative_up_to_inf() {
        let metrics = Metrics::new();
        let engine = engine(&metrics);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let session = engine.session(None).expect("a session");
        let args = json!({"text": "a"}).to_string();
        rt.block_on(engine.call(&session, &ToolCall::new("1", "echo", args)));
        let text = metrics.encode();
        let buckets: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("toolgate_call_duration_seconds_bucket{"))
            .collect();
        assert_eq!(buckets.len(), 17, "{text}");
        assert!(
            buckets[0].starts_with(
                r#"toolgate_call_duration_seconds_bucket{le="0.0005",kind="tool",tool="echo"}"#
            ),
            "{text}"
        );
        assert_eq!(
            buckets[16],
            r#"toolgate_call_duration_seconds_bucket{le="+Inf",kind="tool",tool="echo"} 1"#
        );
    }

    fn event(kind: toolgate::events::EventKind, tool: &str) -> Event {
        Event {
            kind,
            call_kind: toolgate::access::CallKind::Tool,
            call_id: "1".to_owned(),
            session: None,
            caller: toolgate::Caller::local(),
            model_name: tool.to_owned(),
            tool_name: tool.to_owned(),
            arguments: "{}".to_owned(),
        }
    }

    #[test]
    fn retries_are_counted_and_a_breaker_shows_open_until_it_closes() {
        use toolgate::events::EventKind;
        let metrics = Metrics::new();
        metrics.observe(&event(
            EventKind::Retry {
                attempt: 1,
                error_kind: "upstream_unavailable",
                backoff_ms: 100.0,
            },
            "gh.get_issue",
        ));
        let breaker = |state| EventKind::Breaker {
            source: "plugin fs".to_owned(),
            state,
            failures: 5,
        };
        metrics.observe(&event(breaker("open"), "gh.get_issue"));
        let text = metrics.encode();
        for line in [
            r#"toolgate_call_retries_total{kind="tool",tool="gh.get_issue",error_kind="upstream_unavailable"} 1"#,
            r#"toolgate_circuit_open{source="plugin fs"} 1"#,
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        metrics.observe(&event(breaker("half_open"), "gh.get_issue"));
        assert!(
            metrics
                .encode()
                .contains(r#"toolgate_circuit_open{source="plugin fs"} 1"#)
        );
        metrics.observe(&event(breaker("closed"), "gh.get_issue"));
        assert!(
            metrics
                .encode()
                .contains(r#"toolgate_circuit_open{source="plugin fs"} 0"#)
        );
    }
}
