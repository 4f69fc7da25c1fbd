//! The `telemetry:` section: OpenTelemetry traces and metrics over OTLP and Prometheus metrics,
//! for what `toolgate serve` does (issue 28). Off by default: without this section (and without
//! the `OTEL_*` variables that turn the exports on) nothing is exported and no span attribute
//! is built.

use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use crate::error::DiagnosticKind;
use crate::shape::de::checked;
use crate::shape::values::{self, DurationText, Flag, names_only};

/// How OTLP data is sent (`telemetry.otlp_protocol`), in the words of
/// `OTEL_EXPORTER_OTLP_PROTOCOL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(inline, transform = names_only)]
pub enum OtlpProtocol {
    /// Protobuf bodies posted over HTTP (port 4318; /v1/traces and /v1/metrics).
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// gRPC (port 4317), when this toolgate was built with it (the cargo feature otlp-grpc).
    #[serde(rename = "grpc")]
    Grpc,
}

/// What `toolgate serve` reports about the calls it runs (`telemetry:`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// Export traces over OTLP (HTTP/protobuf, or otlp_protocol): a span per tool call, resource read and prompt
    /// get, with children for the guard stages that did work, upstream MCP calls and plugin
    /// worker hops. The trace a client started (W3C traceparent, on HTTP or in the request's
    /// _meta) goes on through toolgate into the upstream servers. Default false; the variable
    /// OTEL_TRACES_EXPORTER=otlp turns it on too, OTEL_SDK_DISABLED=true off.
    #[schemars(with = "Flag")]
    pub traces: bool,
    /// The OTLP collector spans and metrics go to: a base URL (http://127.0.0.1:4318), to which
    /// /v1/traces and /v1/metrics are added over HTTP (over gRPC it is used as it is). Default:
    /// the variables OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT
    /// (full URLs, each for its signal) or OTEL_EXPORTER_OTLP_ENDPOINT, else
    /// http://localhost:4318 (http://localhost:4317 over gRPC).
    #[schemars(length(min = 1), extend("x-expected" = "an http:// or https:// URL"))]
    pub otlp_endpoint: Option<String>,
    /// The service.name of the spans and exported metrics. Default: the variable
    /// OTEL_SERVICE_NAME, else toolgate.
    #[schemars(length(min = 1))]
    pub service_name: Option<String>,
    /// How spans and metrics are sent: http/protobuf or grpc. Default: the variables
    /// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL and OTEL_EXPORTER_OTLP_METRICS_PROTOCOL (each for its
    /// signal), else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf. With grpc, otlp_endpoint
    /// is used as it is (no path added; the default is http://localhost:4317).
    pub otlp_protocol: Option<OtlpProtocol>,
    /// Serve Prometheus metrics (calls, denials, errors by kind, latencies, in-flight calls,
    /// offloaded bytes, plugin restarts, upstream health) at /metrics: on the MCP HTTP server
    /// (behind its token), and on admin_address when set. Default false.
    #[schemars(with = "Flag")]
    pub metrics: bool,
    /// An address (127.0.0.1:9464) where a small HTTP server answers GET /metrics, apart from
    /// the MCP endpoint: how metrics are read when serving stdio. Setting it turns metrics on.
    /// Anything but a loopback address exposes the metrics to the network. Default none.
    #[serde(deserialize_with = "socket_address")]
    #[schemars(
        with = "String",
        length(min = 1),
        extend("x-expected" = "an address such as 127.0.0.1:9464")
    )]
    pub admin_address: Option<SocketAddr>,
    /// Export the metrics (the same set as /metrics) over OTLP to otlp_endpoint, to which
    /// /v1/metrics is added: to an OpenTelemetry Collector, or to Prometheus 2.47 or later
    /// with its OTLP receiver on. Default false; the variable OTEL_METRICS_EXPORTER=otlp turns
    /// it on too, OTEL_SDK_DISABLED=true off.
    #[schemars(with = "Flag")]
    pub otlp_metrics: bool,
    /// How often the metrics are exported over OTLP (otlp_metrics). Default: the variable
    /// OTEL_METRIC_EXPORT_INTERVAL (milliseconds), else 60s. What is left is sent when serve
    /// stops.
    #[serde(deserialize_with = "positive_interval")]
    #[schemars(with = "DurationText")]
    pub metrics_interval: Option<Duration>,
}

impl TelemetrySettings {
    /// Whether metrics are collected: `metrics: true`, or an `admin_address`.
    pub fn metrics_on(&self) -> bool {
        self.metrics || self.admin_address.is_some()
    }
}

/// A duration above zero, for `metrics_interval`.
fn positive_interval<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    values::positive_duration(deserializer).map(Some)
}

/// `ip:port`, read as a socket address; anything else is reported at its line.
fn socket_address<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let parsed = text
        .parse::<SocketAddr>()
        .map_err(|e| format!("{text:?} is not an address such as 127.0.0.1:9464 ({e})"));
    checked(
        parsed,
        DiagnosticKind::Schema {
            keyword: "format".into(),
        },
    )
}
