//! # toolgate-telemetry
//!
//! What toolgate tells the systems that watch it (issue 28):
//! - **traces** ([`install`] with [`TraceSettings`]): the engine's and serve's `tracing` spans
//!   become OpenTelemetry spans (`tracing-opentelemetry`) exported over OTLP/HTTP with protobuf
//!   bodies (`opentelemetry-otlp`); the W3C trace context comes in and goes out through
//!   [`propagation`];
//! - **metrics** ([`metrics::Metrics`]): counters, gauges and histograms of the OpenTelemetry
//!   metrics SDK fed by the engine's events, read in the Prometheus text format at `/metrics`
//!   and, with [`MetricSettings`], exported over OTLP (`opentelemetry-otlp`) as well: one set of
//!   instruments for both (see [`metrics`]);
//! - **logs** ([`LogFormat`]): text as ever, or one JSON object a line with the trace and span
//!   ids of the span it happened in.
//!
//! Off by default, and free when off: without [`TraceSettings`] no exporter exists and the
//! spans of the engine are disabled at their call sites (no attribute is built); without
//! metrics no listener is registered and no meter provider exists.
//!
//! OTLP goes over HTTP with protobuf bodies; over gRPC too in a build with the cargo feature
//! `otlp-grpc` (see [`Protocol`]).
//!
//! Data flows one way: `cli -> toolgate-mcp -> toolgate-telemetry -> toolgate`.

#![warn(missing_docs)]

mod config;
mod export;
mod json;
mod logs;
pub mod metrics;
pub mod propagation;

pub use config::{MetricSettings, Protocol, TraceSettings, metrics_wanted, traces_wanted};
pub use logs::{Installed, LogFormat, LogOptions, SPAN_TARGETS, install, subscriber};
/// The OpenTelemetry SDK's tracer provider, for [`subscriber`].
pub use opentelemetry_sdk::trace::SdkTracerProvider;

/// What can go wrong while telemetry is set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP span exporter could not be built (a bad endpoint URL, a bad `OTEL_*` value).
    #[error("cannot set up the OTLP trace exporter for {endpoint}")]
    Exporter {
        /// The endpoint it was built for.
        endpoint: String,
        /// Why.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The OTLP metric exporter could not be built (a bad endpoint URL, a bad `OTEL_*` value).
    #[error("cannot set up the OTLP metric exporter for {endpoint}")]
    MetricExporter {
        /// The endpoint it was built for.
        endpoint: String,
        /// Why.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// An `OTEL_EXPORTER_OTLP_*PROTOCOL` variable names a protocol toolgate does not speak.
    #[error("{variable}={value:?} is not a protocol toolgate speaks: use http/protobuf or grpc")]
    Protocol {
        /// The variable.
        variable: String,
        /// What it says.
        value: String,
    },
    /// gRPC was asked for, and this toolgate was built without it.
    #[error(
        "OTLP over gRPC was asked for, and this toolgate was built without it (the cargo \
         feature otlp-grpc); use http/protobuf"
    )]
    GrpcNotBuilt,
    /// The thread that drives the gRPC exporters could not be started.
    #[error("cannot start the thread of the OTLP gRPC exporter")]
    GrpcRuntime(#[source] std::io::Error),
    /// A global `tracing` subscriber was installed already.
    #[error("cannot install the log and trace subscriber")]
    Subscriber(#[source] tracing_subscriber::util::TryInitError),
}
