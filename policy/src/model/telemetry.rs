//! The `telemetry:` section: OpenTelemetry traces over OTLP and Prometheus metrics, for what
//! `toolgate serve` does (issue 28). Off by default: without this section (and without the
//! `OTEL_*` variables that turn traces on) nothing is exported and no span attribute is built.

use std::net::SocketAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use crate::error::DiagnosticKind;
use crate::shape::de::checked;
use crate::shape::values::Flag;

/// What `toolgate serve` reports about the calls it runs (`telemetry:`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// Export traces over OTLP/HTTP (protobuf): a span per tool call, resource read and prompt
    /// get, with children for the guard stages that did work, upstream MCP calls and plugin
    /// worker hops. The trace a client started (W3C traceparent, on HTTP or in the request's
    /// _meta) goes on through toolgate into the upstream servers. Default false; the variable
    /// OTEL_TRACES_EXPORTER=otlp turns it on too, OTEL_SDK_DISABLED=true off.
    #[schemars(with = "Flag")]
    pub traces: bool,
    /// The OTLP/HTTP endpoint the spans go to: a base URL (http://127.0.0.1:4318), to which
    /// /v1/traces is added. Default: the variables OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full
    /// URL) or OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318.
    #[schemars(length(min = 1), extend("x-expected" = "an http:// or https:// URL"))]
    pub otlp_endpoint: Option<String>,
    /// The service.name of the spans. Default: the variable OTEL_SERVICE_NAME, else toolgate.
    #[schemars(length(min = 1))]
    pub service_name: Option<String>,
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
}

impl TelemetrySettings {
    /// Whether metrics are collected: `metrics: true`, or an `admin_address`.
    pub fn metrics_on(&self) -> bool {
        self.metrics || self.admin_address.is_some()
    }
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
