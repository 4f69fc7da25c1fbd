//! # toolgate-telemetry
//!
//! What toolgate tells the systems that watch it (issue 28):
//! - **traces** ([`install`] with [`TraceSettings`]): the engine's and serve's `tracing` spans
//!   become OpenTelemetry spans (`tracing-opentelemetry`) exported over OTLP/HTTP with protobuf
//!   bodies (`opentelemetry-otlp`); the W3C trace context comes in and goes out through
//!   [`propagation`];
//! - **metrics** ([`metrics::Metrics`]): Prometheus counters, gauges and histograms fed by the
//!   engine's events, in the Prometheus text format for `/metrics`;
//! - **logs** ([`LogFormat`]): text as ever, or one JSON object a line with the trace and span
//!   ids of the span it happened in.
//!
//! Off by default, and free when off: without [`TraceSettings`] no exporter exists and the
//! spans of the engine are disabled at their call sites (no attribute is built); without
//! metrics no listener is registered.
//!
//! Data flows one way: `cli -> toolgate-mcp -> toolgate-telemetry -> toolgate`.

#![warn(missing_docs)]

mod config;
mod json;
mod logs;
pub mod metrics;
pub mod propagation;

pub use config::{TraceSettings, traces_wanted};
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
    /// A global `tracing` subscriber was installed already.
    #[error("cannot install the log and trace subscriber")]
    Subscriber(#[source] tracing_subscriber::util::TryInitError),
}
