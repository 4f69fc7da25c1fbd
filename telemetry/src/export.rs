//! The OTLP exporters of spans and metrics: HTTP with protobuf bodies, or gRPC (tonic) in a
//! build with the cargo feature `otlp-grpc`.
//!
//! Both come from `opentelemetry-otlp`; nothing here encodes a payload. The HTTP exporters use
//! a blocking client on the SDK's own threads. tonic's channel needs a Tokio runtime: a small
//! one ([`Transport`], one worker thread) is made for it, apart from the runtime `serve` runs
//! on, because the exporters are built before that one starts and flush after it stopped.

use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;

use crate::TelemetryError;
use crate::config::{MetricSettings, Protocol, TraceSettings, endpoint_text};

/// What the gRPC exporters run on; empty over HTTP. Dropped after the providers that use it
/// were shut down (see [`crate::Installed`]).
#[derive(Debug, Default)]
pub(crate) struct Transport {
    #[cfg(feature = "otlp-grpc")]
    runtime: Option<tokio::runtime::Runtime>,
}

#[cfg(feature = "otlp-grpc")]
impl Transport {
    /// The runtime of the gRPC channels, started on first use.
    fn runtime(&mut self) -> Result<&tokio::runtime::Runtime, TelemetryError> {
        let runtime = match self.runtime.take() {
            Some(runtime) => runtime,
            None => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("toolgate-otlp")
                .enable_all()
                .build()
                .map_err(TelemetryError::GrpcRuntime)?,
        };
        Ok(self.runtime.insert(runtime))
    }
}

/// The `service.name` of what toolgate exports; `None` leaves it to `OTEL_SERVICE_NAME`.
pub(crate) fn resource(service_name: Option<&str>) -> Resource {
    let mut resource = Resource::builder();
    if let Some(name) = service_name {
        resource = resource.with_service_name(name.to_owned());
    }
    resource.build()
}

/// The span exporter `settings` ask for.
pub(crate) fn spans(
    settings: &TraceSettings,
    transport: &mut Transport,
) -> Result<SpanExporter, TelemetryError> {
    let built = match settings.protocol {
        Protocol::HttpProtobuf => {
            let mut exporter = SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
            if let Some(endpoint) = &settings.endpoint {
                exporter = exporter.with_endpoint(endpoint.clone());
            }
            exporter.build()
        }
        Protocol::Grpc => return grpc_spans(settings, transport),
    };
    built.map_err(|source| TelemetryError::Exporter {
        endpoint: endpoint_text(settings.endpoint.as_deref(), "traces"),
        source,
    })
}

/// The metric exporter `settings` ask for.
pub(crate) fn metrics(
    settings: &MetricSettings,
    transport: &mut Transport,
) -> Result<MetricExporter, TelemetryError> {
    let built = match settings.protocol {
        Protocol::HttpProtobuf => {
            let mut exporter = MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
            if let Some(endpoint) = &settings.endpoint {
                exporter = exporter.with_endpoint(endpoint.clone());
            }
            exporter.build()
        }
        Protocol::Grpc => return grpc_metrics(settings, transport),
    };
    built.map_err(|source| TelemetryError::MetricExporter {
        endpoint: endpoint_text(settings.endpoint.as_deref(), "metrics"),
        source,
    })
}

#[cfg(feature = "otlp-grpc")]
fn grpc_spans(
    settings: &TraceSettings,
    transport: &mut Transport,
) -> Result<SpanExporter, TelemetryError> {
    // tonic's lazy channel spawns its worker on the runtime it is made in.
    let _entered = transport.runtime()?.enter();
    let mut exporter = SpanExporter::builder().with_tonic();
    if let Some(endpoint) = &settings.endpoint {
        exporter = exporter.with_endpoint(endpoint.clone());
    }
    exporter.build().map_err(|source| TelemetryError::Exporter {
        endpoint: endpoint_text(settings.endpoint.as_deref(), "traces"),
        source,
    })
}

#[cfg(feature = "otlp-grpc")]
fn grpc_metrics(
    settings: &MetricSettings,
    transport: &mut Transport,
) -> Result<MetricExporter, TelemetryError> {
    let _entered = transport.runtime()?.enter();
    let mut exporter = MetricExporter::builder().with_tonic();
    if let Some(endpoint) = &settings.endpoint {
        exporter = exporter.with_endpoint(endpoint.clone());
    }
    exporter
        .build()
        .map_err(|source| TelemetryError::MetricExporter {
            endpoint: endpoint_text(settings.endpoint.as_deref(), "metrics"),
            source,
        })
}

#[cfg(not(feature = "otlp-grpc"))]
fn grpc_spans(_: &TraceSettings, _: &mut Transport) -> Result<SpanExporter, TelemetryError> {
    Err(TelemetryError::GrpcNotBuilt)
}

#[cfg(not(feature = "otlp-grpc"))]
fn grpc_metrics(_: &MetricSettings, _: &mut Transport) -> Result<MetricExporter, TelemetryError> {
    Err(TelemetryError::GrpcNotBuilt)
}
