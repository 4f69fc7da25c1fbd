//! Prometheus metrics of the calls an engine runs (O5), fed by its events (E1) and read in
//! the Prometheus text format at `/metrics`.
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `toolgate_calls_total` | counter | `kind`, `tool`, `outcome` (`ok`, `denied`, `error`) |
//! | `toolgate_call_denials_total` | counter | `kind`, `tool`, `by` (`rule`, `hook`) |
//! | `toolgate_call_errors_total` | counter | `kind`, `tool`, `error_kind` |
//! | `toolgate_call_duration_seconds` | histogram | `kind`, `tool` |
//! | `toolgate_call_queue_seconds` | histogram | `kind`, `tool` |
//! | `toolgate_calls_in_flight` | gauge | `kind` |
//! | `toolgate_offloaded_results_total` | counter | `kind`, `tool` |
//! | `toolgate_offloaded_bytes_total` | counter | `kind`, `tool` |
//! | `toolgate_rate_limit_rejections_total` | counter | `kind`, `tool` (`http_request` and empty for the HTTP requests `limits.requests` refuses) |
//! | `toolgate_search_duration_seconds` | histogram | none |
//! | `toolgate_plugin_restarts_total` | counter | none |
//! | `toolgate_upstream_up` | gauge | `server`, `state` |
//! | `toolgate_call_retries_total` | counter | `kind`, `tool`, `error_kind` (of the attempt that failed) |
//! | `toolgate_circuit_open` | gauge | `source` (1 while open or half-open, 0 once closed) |
//!
//! Label values are bounded: `tool` is the real name of a known tool or prompt, `unknown` for
//! a name no source has, a resource's URI scheme for a resource, and `other` once
//! [`MAX_TOOL_LABELS`] names have been seen; `error_kind` is a stable kind of the engine.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use toolgate::events::{Event, EventKind};

/// The `Content-Type` of [`Metrics::encode`]'s text (OpenMetrics, which Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The most distinct `tool` label values; later names are counted as `other`.
pub const MAX_TOOL_LABELS: usize = 1000;

/// Labels of a call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    kind: &'static str,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    kind: &'static str,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DenialLabels {
    kind: &'static str,
    tool: String,
    by: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    kind: &'static str,
    tool: String,
    error_kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

type Histograms = Family<CallLabels, Histogram, fn() -> Histogram>;

/// Latency buckets: 0.5 ms to about 16 s, doubling.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// One upstream server's state, as the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamHealth {
    /// The server's name in the policy.
    pub server: String,
    /// `up`, `starting`, `down` (waiting to be tried again: the circuit is open), `stopping`
    /// or `stopped`.
    pub state: &'static str,
}

/// What a scrape asks for the upstream servers' states.
pub type UpstreamProbe = Box<dyn Fn() -> Vec<UpstreamHealth> + Send + Sync>;

/// The metrics of one process.
pub struct Metrics {
    registry: Registry,
    calls: Family<OutcomeLabels, Counter>,
    denials: Family<DenialLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    duration: Histograms,
    queue: Histograms,
    in_flight: Family<KindLabels, Gauge>,
    offloaded: Family<CallLabels, Counter>,
    offloaded_bytes: Family<CallLabels, Counter>,
    rate_limited: Family<CallLabels, Counter>,
    retries: Family<ErrorLabels, Counter>,
    /// One series per breaker source: bounded by the policy's plugins and upstream servers.
    circuit_open: Family<SourceLabels, Gauge>,
    search: Histogram,
    tools_seen: Mutex<HashSet<String>>,
    upstreams: Arc<Mutex<Option<UpstreamProbe>>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Arc<Metrics>> = OnceLock::new();

impl Metrics {
    /// New metrics, every one at zero.
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("toolgate");
        let calls = Family::default();
        registry.register("calls", "Calls that ended, by outcome", calls.clone());
        let denials = Family::default();
        registry.register(
            "call_denials",
            "Calls the rules or the before hook refused",
            denials.clone(),
        );
        let errors = Family::default();
        registry.register("call_errors", "Failed calls, by error kind", errors.clone());
        let duration = Histograms::new_with_constructor(latency);
        registry.register(
            "call_duration_seconds",
            "How long calls ran, queue time excluded",
            duration.clone(),
        );
        let queue = Histograms::new_with_constructor(latency);
        registry.register(
            "call_queue_seconds",
            "How long calls waited for a slot, a group lock or a plugin thread",
            queue.clone(),
        );
        let in_flight = Family::default();
        registry.register("calls_in_flight", "Calls running now", in_flight.clone());
        let offloaded = Family::default();
        registry.register(
            "offloaded_results",
            "Results saved whole to the result store",
            offloaded.clone(),
        );
        let offloaded_bytes = Family::default();
        registry.register(
            "offloaded_bytes",
            "Bytes of results saved whole to the result store",
            offloaded_bytes.clone(),
        );
        let rate_limited = Family::default();
        registry.register(
            "rate_limit_rejections",
            "Calls refused by a rate limit",
            rate_limited.clone(),
        );
        let retries = Family::default();
        registry.register(
            "call_retries",
            "Attempts of idempotent calls that failed and were tried again (L5)",
            retries.clone(),
        );
        let circuit_open = Family::default();
        registry.register(
            "circuit_open",
            "1 while the circuit breaker of a plugin or upstream server is open or half-open (L6)",
            circuit_open.clone(),
        );
        let search = latency();
        registry.register(
            "search_duration_seconds",
            "How long tool_search calls ran",
            search.clone(),
        );
        let upstreams = Arc::new(Mutex::new(None));
        registry.register_collector(Box::new(ProcessCollector {
            upstreams: Arc::clone(&upstreams),
        }));
        Arc::new(Metrics {
            registry,
            calls,
            denials,
            errors,
            duration,
            queue,
            in_flight,
            offloaded,
            offloaded_bytes,
            rate_limited,
            retries,
            circuit_open,
            search,
            tools_seen: Mutex::new(HashSet::new()),
            upstreams,
        })
    }

    /// The process's metrics, made on first use.
    pub fn global() -> Arc<Metrics> {
        Arc::clone(GLOBAL.get_or_init(Metrics::new))
    }

    /// A listener for [`toolgate::EngineBuilder::on_event`] that counts every call.
    pub fn listener(self: &Arc<Self>) -> impl Fn(&Event) + Send + Sync + 'static {
        let metrics = Arc::clone(self);
        move |event| metrics.observe(event)
    }

    /// Asks `probe` for the upstream servers' states at each scrape.
    pub fn set_upstream_probe(&self, probe: UpstreamProbe) {
        *self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(probe);
    }

    /// Counts what `event` says.
    pub fn observe(&self, event: &Event) {
        let kind = event.call_kind.as_str();
        match &event.kind {
            EventKind::Start => {
                self.in_flight.get_or_create(&KindLabels { kind }).inc();
            }
            EventKind::End { outcome } => {
                let error_kind = outcome.error_kind;
                // A skipped call (D7) never started.
                if error_kind != Some("skipped") {
                    self.in_flight.get_or_create(&KindLabels { kind }).dec();
                }
                let tool = self.tool_label(event, error_kind);
                let labels = CallLabels { kind, tool };
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
                self.calls
                    .get_or_create(&OutcomeLabels {
                        kind,
                        tool: labels.tool.clone(),
                        outcome: result,
                    })
                    .inc();
                if let Some(by) = denied_by {
                    self.denials
                        .get_or_create(&DenialLabels {
                            kind,
                            tool: labels.tool.clone(),
                            by,
                        })
                        .inc();
                }
                if let Some(error_kind) = error_kind {
                    self.errors
                        .get_or_create(&ErrorLabels {
                            kind,
                            tool: labels.tool.clone(),
                            error_kind: error_kind.to_owned(),
                        })
                        .inc();
                    if error_kind == "rate_limited" {
                        self.rate_limited.get_or_create(&labels).inc();
                    }
                }
                let seconds = outcome.duration_ms / 1000.0;
                self.duration.get_or_create(&labels).observe(seconds);
                self.queue
                    .get_or_create(&labels)
                    .observe(outcome.queued_ms / 1000.0);
                if outcome.result_id.is_some() {
                    self.offloaded.get_or_create(&labels).inc();
                    self.offloaded_bytes
                        .get_or_create(&labels)
                        .inc_by(outcome.offloaded_bytes);
                }
                if event.tool_name == "tool_search" {
                    self.search.observe(seconds);
                }
            }
            EventKind::Retry { error_kind, .. } => {
                let tool = self.tool_label(event, Some(error_kind));
                self.retries
                    .get_or_create(&ErrorLabels {
                        kind,
                        tool,
                        error_kind: (*error_kind).to_owned(),
                    })
                    .inc();
            }
            EventKind::Breaker { source, state, .. } => {
                let open = i64::from(*state != "closed");
                self.circuit_open
                    .get_or_create(&SourceLabels {
                        source: source.clone(),
                    })
                    .set(open);
            }
            EventKind::Update { .. } | EventKind::Error { .. } => {}
        }
    }

    /// Counts a call a rate limit refused (for a limiter that refuses before the engine runs
    /// the call; a `rate_limited` outcome is counted already): `serve --http` counts the
    /// requests `limits.requests` refuses as `kind` `http_request` with an empty `tool` (L8).
    pub fn rate_limited(&self, kind: &'static str, tool: &str) {
        let tool = self.bounded(tool);
        self.rate_limited
            .get_or_create(&CallLabels { kind, tool })
            .inc();
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
    fn tool_label(&self, event: &Event, error_kind: Option<&str>) -> String {
        if matches!(
            error_kind,
            Some("unknown_tool" | "unknown_resource" | "unknown_prompt")
        ) {
            return "unknown".to_owned();
        }
        if event.call_kind == toolgate::access::CallKind::Resource {
            let scheme = event.tool_name.split(':').next().unwrap_or("");
            return self.bounded(scheme);
        }
        self.bounded(&event.tool_name)
    }

    /// `name`, or `other` once [`MAX_TOOL_LABELS`] other names have been seen.
    fn bounded(&self, name: &str) -> String {
        let mut seen = self
            .tools_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if seen.contains(name) {
            return name.to_owned();
        }
        if seen.len() >= MAX_TOOL_LABELS {
            return "other".to_owned();
        }
        seen.insert(name.to_owned());
        name.to_owned()
    }
}

/// What is read at each scrape: plugin worker restarts and the upstream servers' states.
struct ProcessCollector {
    upstreams: Arc<Mutex<Option<UpstreamProbe>>>,
}

impl std::fmt::Debug for ProcessCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessCollector").finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    server: String,
    state: &'static str,
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let restarts = ConstCounter::new(toolgate::plugin_worker_restarts());
        let metric = encoder.encode_descriptor(
            "plugin_restarts",
            "Plugin workers started again after a crash or a kill",
            None,
            restarts.metric_type(),
        )?;
        restarts.encode(metric)?;
        let states = match &*self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(probe) => probe(),
            None => return Ok(()),
        };
        let gauge = ConstGauge::new(0i64);
        let mut family = encoder.encode_descriptor(
            "upstream_up",
            "1 for each upstream MCP server in the state named (up: serving; down: waiting \
             to be tried again, the circuit open)",
            None,
            gauge.metric_type(),
        )?;
        for health in states {
            let labels = UpstreamLabels {
                server: health.server,
                state: health.state,
            };
            let value = ConstGauge::new(1i64);
            value.encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
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
    fn tool_labels_stop_growing_at_the_bound() {
        let metrics = Metrics::new();
        for i in 0..MAX_TOOL_LABELS {
            assert_eq!(metrics.bounded(&format!("t{i}")), format!("t{i}"));
        }
        assert_eq!(metrics.bounded("one-more"), "other");
        assert_eq!(metrics.bounded("t7"), "t7");
    }

    #[test]
    fn a_fresh_registry_shows_the_process_metrics_with_the_toolgate_prefix() {
        // Families show once they have a sample; the histogram and the collector's counter at
        // once.
        let text = Metrics::new().encode();
        for line in [
            "# TYPE toolgate_search_duration_seconds histogram",
            "# TYPE toolgate_plugin_restarts counter",
            "toolgate_plugin_restarts_total 0",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
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
