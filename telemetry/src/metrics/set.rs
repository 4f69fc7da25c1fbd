//! The metric set, defined once: each metric's OpenTelemetry name, unit, description, kind
//! and labels ([`Def`], listed in [`ALL`]); the instruments are made from these definitions,
//! and the Prometheus text (`text.rs`) names and orders what it writes by them.
//!
//! The Prometheus name is not written down: it is derived from the OpenTelemetry name and
//! unit ([`Def::prometheus_name`]) by the rules Prometheus's own OTLP receiver applies
//! (dots become underscores, the unit `s` adds `_seconds` and `By` adds `_bytes` unless the
//! name says it already, a counter gets `_total`; a unit in braces adds nothing). So a
//! series has the same name whether Prometheus scrapes `/metrics` or receives it over OTLP.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{
    Counter, Gauge, Histogram, Meter, ObservableCounter, ObservableGauge, ObservableUpDownCounter,
};
use toolgate::access::CallKind;

/// One upstream server's state, as the metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamHealth {
    /// The server's name in the policy.
    pub server: String,
    /// `up`, `starting`, `down` (waiting to be tried again: the circuit is open), `stopping`
    /// or `stopped`.
    pub state: &'static str,
}

/// What a collection asks for the upstream servers' states.
pub type UpstreamProbe = Box<dyn Fn() -> Vec<UpstreamHealth> + Send + Sync>;

/// What kind of instrument a metric is, and so its Prometheus type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A monotonic sum (Prometheus `counter`).
    Counter,
    /// A sum that goes up and down (Prometheus `gauge`).
    UpDown,
    /// A value set as it is (Prometheus `gauge`).
    Gauge,
    /// A histogram with explicit buckets (Prometheus `histogram`).
    Histogram,
}

/// One metric.
#[derive(Debug)]
pub(crate) struct Def {
    /// The OpenTelemetry name (`toolgate.calls`).
    pub(crate) name: &'static str,
    /// The UCUM unit: `s`, `By`, or a count in braces (`{call}`).
    pub(crate) unit: &'static str,
    /// What it counts.
    pub(crate) help: &'static str,
    pub(crate) shape: Shape,
    /// Its labels (attributes), in the order the Prometheus text writes them.
    pub(crate) labels: &'static [&'static str],
}

impl Def {
    /// The name Prometheus knows the metric by, `_total` aside (the text encoder adds it to a
    /// counter's samples): `toolgate.call.duration` in `s` is `toolgate_call_duration_seconds`.
    pub(crate) fn prometheus_name(&self) -> String {
        let mut name = self.name.replace(['.', '-', '/'], "_");
        let suffix = match self.unit {
            "s" => Some("seconds"),
            "By" => Some("bytes"),
            _ => None,
        };
        if let Some(suffix) = suffix
            && !name.split('_').any(|word| word == suffix)
        {
            name.push('_');
            name.push_str(suffix);
        }
        name
    }
}

pub(crate) const CALLS: Def = Def {
    name: "toolgate.calls",
    unit: "{call}",
    help: "Calls that ended, by outcome (ok, denied, error)",
    shape: Shape::Counter,
    labels: &["kind", "tool", "outcome"],
};
pub(crate) const DENIALS: Def = Def {
    name: "toolgate.call.denials",
    unit: "{call}",
    help: "Calls the rules or the before hook refused",
    shape: Shape::Counter,
    labels: &["kind", "tool", "by"],
};
pub(crate) const ERRORS: Def = Def {
    name: "toolgate.call.errors",
    unit: "{call}",
    help: "Failed calls, by error kind",
    shape: Shape::Counter,
    labels: &["kind", "tool", "error_kind"],
};
pub(crate) const DURATION: Def = Def {
    name: "toolgate.call.duration",
    unit: "s",
    help: "How long calls ran, queue time excluded",
    shape: Shape::Histogram,
    labels: &["kind", "tool"],
};
pub(crate) const QUEUE: Def = Def {
    name: "toolgate.call.queue",
    unit: "s",
    help: "How long calls waited for a slot, a group lock or a plugin thread",
    shape: Shape::Histogram,
    labels: &["kind", "tool"],
};
pub(crate) const IN_FLIGHT: Def = Def {
    name: "toolgate.calls.in_flight",
    unit: "{call}",
    help: "Calls running now",
    shape: Shape::UpDown,
    labels: &["kind"],
};
pub(crate) const OFFLOADED: Def = Def {
    name: "toolgate.offloaded.results",
    unit: "{result}",
    help: "Results saved whole to the result store",
    shape: Shape::Counter,
    labels: &["kind", "tool"],
};
pub(crate) const OFFLOADED_BYTES: Def = Def {
    name: "toolgate.offloaded.bytes",
    unit: "By",
    help: "Bytes of results saved whole to the result store",
    shape: Shape::Counter,
    labels: &["kind", "tool"],
};
pub(crate) const RATE_LIMITED: Def = Def {
    name: "toolgate.rate_limit.rejections",
    unit: "{call}",
    help: "Calls refused by a rate limit",
    shape: Shape::Counter,
    labels: &["kind", "tool"],
};
pub(crate) const RETRIES: Def = Def {
    name: "toolgate.call.retries",
    unit: "{attempt}",
    help: "Attempts of idempotent calls that failed and were tried again (L5)",
    shape: Shape::Counter,
    labels: &["kind", "tool", "error_kind"],
};
pub(crate) const CIRCUIT_OPEN: Def = Def {
    name: "toolgate.circuit.open",
    unit: "",
    help: "1 while the circuit breaker of a plugin or upstream server is open or half-open (L6)",
    shape: Shape::Gauge,
    labels: &["source"],
};
pub(crate) const SEARCH: Def = Def {
    name: "toolgate.search.duration",
    unit: "s",
    help: "How long tool_search calls ran",
    shape: Shape::Histogram,
    labels: &[],
};
pub(crate) const PLUGIN_RESTARTS: Def = Def {
    name: "toolgate.plugin.restarts",
    unit: "{restart}",
    help: "Plugin workers started again after a crash or a kill",
    shape: Shape::Counter,
    labels: &[],
};
pub(crate) const UPSTREAM_UP: Def = Def {
    name: "toolgate.upstream.up",
    unit: "",
    help: "1 for each upstream MCP server in the state named (up: serving; down: waiting to be \
           tried again, the circuit open)",
    shape: Shape::Gauge,
    labels: &["server", "state"],
};

/// Every metric, in the order `/metrics` lists them.
pub(crate) const ALL: [&Def; 14] = [
    &CALLS,
    &DENIALS,
    &ERRORS,
    &DURATION,
    &QUEUE,
    &IN_FLIGHT,
    &OFFLOADED,
    &OFFLOADED_BYTES,
    &RATE_LIMITED,
    &RETRIES,
    &CIRCUIT_OPEN,
    &SEARCH,
    &PLUGIN_RESTARTS,
    &UPSTREAM_UP,
];

/// Latency buckets: 0.5 ms to about 16 s, doubling (16 bounds).
pub(crate) fn latency_bounds() -> Vec<f64> {
    (0..16).map(|i| 0.0005 * f64::from(1u32 << i)).collect()
}

/// The instruments of [`ALL`], made on one meter.
pub(crate) struct Instruments {
    pub(crate) calls: Counter<u64>,
    pub(crate) denials: Counter<u64>,
    pub(crate) errors: Counter<u64>,
    pub(crate) duration: Histogram<f64>,
    pub(crate) queue: Histogram<f64>,
    /// The calls running now, by kind: plain atomics the SDK reads at each collection, so
    /// that a call's start and end cost two atomic additions instead of two look-ups of a
    /// label set.
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) offloaded: Counter<u64>,
    pub(crate) offloaded_bytes: Counter<u64>,
    pub(crate) rate_limited: Counter<u64>,
    pub(crate) retries: Counter<u64>,
    pub(crate) circuit_open: Gauge<i64>,
    pub(crate) search: Histogram<f64>,
    /// Read at each collection: kept so that its callback stays registered.
    _plugin_restarts: ObservableCounter<u64>,
    /// Read at each collection: kept so that its callback stays registered.
    _upstream_up: ObservableGauge<i64>,
    /// Read at each collection: kept so that its callback stays registered.
    _in_flight: ObservableUpDownCounter<i64>,
}

/// The calls running now, one count a [`CallKind`]; a kind is shown once a call of it has
/// started (as the SDK's own up-down counter showed a label set once it was used).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    counts: [AtomicI64; 3],
    seen: [AtomicBool; 3],
}

impl InFlight {
    const KINDS: [CallKind; 3] = [CallKind::Tool, CallKind::Resource, CallKind::Prompt];

    fn index(kind: CallKind) -> usize {
        match kind {
            CallKind::Tool => 0,
            CallKind::Resource => 1,
            CallKind::Prompt => 2,
        }
    }

    /// A call of `kind` started (`1`) or ended (`-1`).
    pub(crate) fn add(&self, kind: CallKind, delta: i64) {
        let i = Self::index(kind);
        if delta > 0 && !self.seen[i].load(Ordering::Relaxed) {
            self.seen[i].store(true, Ordering::Relaxed);
        }
        self.counts[i].fetch_add(delta, Ordering::Relaxed);
    }

    /// The count of `kind`, once a call of it has started.
    fn now(&self, kind: CallKind) -> Option<i64> {
        let i = Self::index(kind);
        self.seen[i]
            .load(Ordering::Relaxed)
            .then(|| self.counts[i].load(Ordering::Relaxed))
    }
}

impl Instruments {
    /// The instruments, on `meter`; the upstream servers' states are asked of `upstreams` at
    /// each collection.
    pub(crate) fn new(meter: &Meter, upstreams: Arc<Mutex<Option<UpstreamProbe>>>) -> Self {
        let counter = |def: &Def| {
            meter
                .u64_counter(def.name)
                .with_unit(def.unit)
                .with_description(def.help)
                .build()
        };
        let histogram = |def: &Def| {
            meter
                .f64_histogram(def.name)
                .with_unit(def.unit)
                .with_description(def.help)
                .with_boundaries(latency_bounds())
                .build()
        };
        let plugin_restarts = meter
            .u64_observable_counter(PLUGIN_RESTARTS.name)
            .with_unit(PLUGIN_RESTARTS.unit)
            .with_description(PLUGIN_RESTARTS.help)
            .with_callback(|observer| observer.observe(toolgate::plugin_worker_restarts(), &[]))
            .build();
        let upstream_up = meter
            .i64_observable_gauge(UPSTREAM_UP.name)
            .with_unit(UPSTREAM_UP.unit)
            .with_description(UPSTREAM_UP.help)
            .with_callback(move |observer| {
                let states = match &*upstreams.lock().unwrap_or_else(PoisonError::into_inner) {
                    Some(probe) => probe(),
                    None => return,
                };
                for health in states {
                    let labels = [
                        KeyValue::new("server", health.server),
                        KeyValue::new("state", health.state),
                    ];
                    observer.observe(1, &labels);
                }
            })
            .build();
        let in_flight = Arc::new(InFlight::default());
        let counts = Arc::clone(&in_flight);
        let in_flight_gauge = meter
            .i64_observable_up_down_counter(IN_FLIGHT.name)
            .with_unit(IN_FLIGHT.unit)
            .with_description(IN_FLIGHT.help)
            .with_callback(move |observer| {
                for kind in InFlight::KINDS {
                    if let Some(now) = counts.now(kind) {
                        observer.observe(now, &[KeyValue::new("kind", kind.as_str())]);
                    }
                }
            })
            .build();
        Instruments {
            calls: counter(&CALLS),
            denials: counter(&DENIALS),
            errors: counter(&ERRORS),
            duration: histogram(&DURATION),
            queue: histogram(&QUEUE),
            in_flight: Arc::clone(&in_flight),
            offloaded: counter(&OFFLOADED),
            offloaded_bytes: counter(&OFFLOADED_BYTES),
            rate_limited: counter(&RATE_LIMITED),
            retries: counter(&RETRIES),
            circuit_open: meter
                .i64_gauge(CIRCUIT_OPEN.name)
                .with_unit(CIRCUIT_OPEN.unit)
                .with_description(CIRCUIT_OPEN.help)
                .build(),
            search: histogram(&SEARCH),
            _plugin_restarts: plugin_restarts,
            _upstream_up: upstream_up,
            _in_flight: in_flight_gauge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prometheus_names_are_derived_as_prometheus_translates_otlp_names() {
        let names: Vec<(String, Shape)> = ALL
            .iter()
            .map(|def| (def.prometheus_name(), def.shape))
            .collect();
        let want = [
            ("toolgate_calls", Shape::Counter),
            ("toolgate_call_denials", Shape::Counter),
            ("toolgate_call_errors", Shape::Counter),
            ("toolgate_call_duration_seconds", Shape::Histogram),
            ("toolgate_call_queue_seconds", Shape::Histogram),
            ("toolgate_calls_in_flight", Shape::UpDown),
            ("toolgate_offloaded_results", Shape::Counter),
            ("toolgate_offloaded_bytes", Shape::Counter),
            ("toolgate_rate_limit_rejections", Shape::Counter),
            ("toolgate_call_retries", Shape::Counter),
            ("toolgate_circuit_open", Shape::Gauge),
            ("toolgate_search_duration_seconds", Shape::Histogram),
            ("toolgate_plugin_restarts", Shape::Counter),
            ("toolgate_upstream_up", Shape::Gauge),
        ];
        let want: Vec<(String, Shape)> = want
            .iter()
            .map(|(name, shape)| ((*name).to_owned(), *shape))
            .collect();
        assert_eq!(names, want);
    }

    #[test]
    fn latency_buckets_double_from_half_a_millisecond() {
        let bounds = latency_bounds();
        assert_eq!(bounds.len(), 16);
        assert!((bounds[0] - 0.0005).abs() < 1e-12);
        assert!((bounds[15] - 16.384).abs() < 1e-9);
    }
}
