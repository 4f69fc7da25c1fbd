//! The process's one `tracing` subscriber: logs to stderr (text or JSON lines) and, when traces
//! are on, the OpenTelemetry layer that exports toolgate's spans.
//!
//! Each layer has a filter of its own: the log filter (`-v`, `RUST_LOG`) decides what is
//! printed, and the trace layer takes only toolgate's call spans (targets `toolgate::call`,
//! `toolgate::serve`, `toolgate::upstream`), whatever the log level. With traces off, a
//! call span no one wants is disabled at its call site.

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry};

use crate::TelemetryError;
use crate::config::{MetricSettings, TraceSettings};
use crate::export::{self, Transport};
use crate::json::JsonLines;
use crate::metrics::Metrics;

/// The targets of the spans that become OpenTelemetry spans (T1).
pub const SPAN_TARGETS: [&str; 3] = ["toolgate::call", "toolgate::serve", "toolgate::upstream"];

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines, coloured on a terminal (the default).
    #[default]
    Text,
    /// One JSON object a line, with the trace and span ids while traces are on (O6).
    Json,
}

/// What is logged, and how.
#[derive(Debug)]
pub struct LogOptions {
    /// Which events are printed.
    pub filter: EnvFilter,
    /// How they look.
    pub format: LogFormat,
}

/// The installed telemetry: dropping it (at the end of the process) sends the spans still
/// waiting in the batch and the metrics' last values, and stops the exporters.
#[derive(Debug)]
pub struct Installed {
    provider: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
    /// Dropped last: the gRPC exporters' runtime, if any.
    _transport: Transport,
}

impl Installed {
    /// Whether spans are exported.
    pub fn traces_on(&self) -> bool {
        self.provider.is_some()
    }

    /// Whether metrics are exported over OTLP.
    pub fn metrics_exported(&self) -> bool {
        self.meters.is_some()
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("toolgate: the last spans may not have been exported: {e}");
        }
        if let Some(meters) = self.meters.take()
            && let Err(e) = meters.shutdown()
        {
            eprintln!("toolgate: the last metrics may not have been exported: {e}");
        }
    }
}

/// Installs the process's subscriber: logs to stderr as `log` says, the OTLP trace exporter
/// when `traces` is `Some`, and the OTLP metric exporter of [`Metrics::global`] when
/// `metrics` is `Some`.
///
/// Call it outside any async runtime (the exporters' blocking HTTP client owns one of its
/// own, which cannot be made or dropped inside another), and before anything asks for
/// [`Metrics::global`].
///
/// # Errors
///
/// An exporter cannot be built (a bad endpoint, gRPC in a build without it), or a subscriber
/// is installed already.
pub fn install(
    log: LogOptions,
    traces: Option<&TraceSettings>,
    metrics: Option<&MetricSettings>,
) -> Result<Installed, TelemetryError> {
    let mut transport = Transport::default();
    let provider = traces
        .map(|settings| provider(settings, &mut transport))
        .transpose()?;
    let meters = metrics
        .map(|settings| meter_provider(settings, &mut transport))
        .transpose()?;
    subscriber(log, provider.as_ref())
        .try_init()
        .map_err(TelemetryError::Subscriber)?;
    crate::propagation::set_traces_on(provider.is_some());
    Ok(Installed {
        provider,
        meters,
        _transport: transport,
    })
}

/// The process's metrics with a periodic OTLP export besides `/metrics` (O7): the same
/// instruments feed both.
fn meter_provider(
    settings: &MetricSettings,
    transport: &mut Transport,
) -> Result<SdkMeterProvider, TelemetryError> {
    let exporter = export::metrics(settings, transport)?;
    let mut reader = PeriodicReader::builder(exporter);
    if let Some(interval) = settings.interval {
        reader = reader.with_interval(interval);
    }
    let builder = SdkMeterProvider::builder()
        .with_reader(reader.build())
        .with_resource(export::resource(settings.service_name.as_deref()));
    Ok(Metrics::install_global(builder))
}

/// The subscriber [`install`] sets up, with spans going to `provider` when there is one: for
/// a program that installs it its own way, or scopes it (a benchmark, a test).
pub fn subscriber(
    log: LogOptions,
    provider: Option<&SdkTracerProvider>,
) -> impl tracing::Subscriber + Send + Sync + use<> {
    let with_ids = provider.is_some();
    let stderr = std::io::stderr;
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match log.format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(log.filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(stderr)
            .event_format(JsonLines { with_ids })
            .with_filter(log.filter)
            .boxed(),
    };
    let spans = provider.map(|provider| {
        let targets = SPAN_TARGETS.iter().fold(Targets::new(), |t, target| {
            t.with_target(*target, Level::INFO)
        });
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("toolgate"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            // Nothing reads `Context::current()`: the trace context goes out from the span
            // itself (`propagation`), so entering a span (each poll of a call's future) need
            // not attach its context.
            .with_context_activation(false)
            .with_target(false)
            .with_filter(targets)
    });
    tracing_subscriber::registry().with(logs).with(spans)
}

/// The tracer provider: spans batched and sent over OTLP (HTTP/protobuf or gRPC).
fn provider(
    settings: &TraceSettings,
    transport: &mut Transport,
) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = export::spans(settings, transport)?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(export::resource(settings.service_name.as_deref()))
        .build())
}
