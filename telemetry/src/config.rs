//! Whether traces and metrics are exported, where to and how: the policy's `telemetry:`
//! section and the standard `OTEL_*` environment variables (O4, O7, O8).

use std::time::Duration;

use toolgate_policy::{OtlpProtocol, TelemetrySettings};

use crate::TelemetryError;

/// How OTLP data is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Protobuf bodies posted over HTTP (`/v1/traces`, `/v1/metrics`; port 4318).
    #[default]
    HttpProtobuf,
    /// gRPC (port 4317): only in a build with the cargo feature `otlp-grpc`.
    Grpc,
}

impl Protocol {
    /// The protocol as `OTEL_EXPORTER_OTLP_PROTOCOL` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        }
    }
}

/// Where spans go, once traces are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSettings {
    /// The URL spans are sent to: over HTTP the full URL (`…/v1/traces`), over gRPC the
    /// collector's address. `None` leaves it to the exporter, which reads
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, then `OTEL_EXPORTER_OTLP_ENDPOINT` (adding
    /// `/v1/traces` over HTTP), else `http://localhost:4318/v1/traces` (`:4317` over gRPC).
    pub endpoint: Option<String>,
    /// The `service.name` resource attribute; `None` leaves it to `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
    /// How spans are sent.
    pub protocol: Protocol,
}

/// Where metrics go, once their OTLP export is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricSettings {
    /// The URL metrics are sent to, as [`TraceSettings::endpoint`] (`…/v1/metrics` over HTTP;
    /// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` when `None`).
    pub endpoint: Option<String>,
    /// The `service.name` resource attribute; `None` leaves it to `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
    /// How metrics are sent.
    pub protocol: Protocol,
    /// How often; `None` leaves it to `OTEL_METRIC_EXPORT_INTERVAL`, else 60 s.
    pub interval: Option<Duration>,
}

/// The endpoint as messages name it.
pub(crate) fn endpoint_text(endpoint: Option<&str>, signal: &str) -> String {
    endpoint.map(str::to_owned).unwrap_or_else(|| {
        format!("the endpoint of the OTEL_EXPORTER_OTLP_* variables (for {signal})")
    })
}

/// Whether traces are exported, and where: `None` when they are off (the default).
///
/// On when the policy says `telemetry.traces: true` or the environment says
/// `OTEL_TRACES_EXPORTER=otlp`; off whatever else says so when `OTEL_SDK_DISABLED=true`. The
/// policy's `otlp_endpoint` (a base URL, `/v1/traces` added over HTTP), `otlp_protocol` and
/// `service_name` win over the variables.
///
/// # Errors
///
/// An `OTEL_EXPORTER_OTLP_*PROTOCOL` variable names a protocol toolgate does not speak.
pub fn traces_wanted(
    policy: Option<&TelemetrySettings>,
) -> Result<Option<TraceSettings>, TelemetryError> {
    traces_wanted_with(policy, |name| std::env::var(name).ok())
}

/// Whether metrics are exported over OTLP, and where: `None` when they are not (the
/// default; `/metrics` is another matter, see [`TelemetrySettings::metrics_on`]).
///
/// On when the policy says `telemetry.otlp_metrics: true` or the environment says
/// `OTEL_METRICS_EXPORTER=otlp`; off whatever else says so when `OTEL_SDK_DISABLED=true`. The
/// policy's `otlp_endpoint` (`/v1/metrics` added over HTTP), `otlp_protocol`,
/// `metrics_interval` and `service_name` win over the variables.
///
/// # Errors
///
/// An `OTEL_EXPORTER_OTLP_*PROTOCOL` variable names a protocol toolgate does not speak.
pub fn metrics_wanted(
    policy: Option<&TelemetrySettings>,
) -> Result<Option<MetricSettings>, TelemetryError> {
    metrics_wanted_with(policy, |name| std::env::var(name).ok())
}

/// Whether `name`'s comma-separated words include `word`.
fn env_says(env: &impl Fn(&str) -> Option<String>, name: &str, word: &str) -> bool {
    env(name).is_some_and(|v| {
        v.split(',')
            .any(|part| part.trim().eq_ignore_ascii_case(word))
    })
}

/// The endpoint, protocol and service name of `signal` (`traces`, `metrics`).
fn export_target(
    policy: Option<&TelemetrySettings>,
    env: &impl Fn(&str) -> Option<String>,
    signal: &str,
) -> Result<(Option<String>, Option<String>, Protocol), TelemetryError> {
    let protocol = match policy.and_then(|p| p.otlp_protocol) {
        Some(OtlpProtocol::HttpProtobuf) => Protocol::HttpProtobuf,
        Some(OtlpProtocol::Grpc) => Protocol::Grpc,
        None => protocol_from_env(env, signal)?,
    };
    let endpoint = policy
        .and_then(|p| p.otlp_endpoint.as_deref())
        .map(|base| match protocol {
            Protocol::HttpProtobuf => format!("{}/v1/{signal}", base.trim_end_matches('/')),
            Protocol::Grpc => base.to_owned(),
        });
    let service_name =
        policy
            .and_then(|p| p.service_name.clone())
            .or_else(|| match env("OTEL_SERVICE_NAME") {
                Some(name) if !name.trim().is_empty() => None,
                _ => Some("toolgate".to_owned()),
            });
    Ok((endpoint, service_name, protocol))
}

/// The protocol the variables name for `signal`: `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, else
/// `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf.
fn protocol_from_env(
    env: &impl Fn(&str) -> Option<String>,
    signal: &str,
) -> Result<Protocol, TelemetryError> {
    let own = format!(
        "OTEL_EXPORTER_OTLP_{}_PROTOCOL",
        signal.to_ascii_uppercase()
    );
    for variable in [own.as_str(), "OTEL_EXPORTER_OTLP_PROTOCOL"] {
        let Some(value) = env(variable) else { continue };
        match value.trim() {
            "" => continue,
            "http/protobuf" => return Ok(Protocol::HttpProtobuf),
            "grpc" => return Ok(Protocol::Grpc),
            _ => {}
        }
        return Err(TelemetryError::Protocol {
            variable: variable.to_owned(),
            value,
        });
    }
    Ok(Protocol::HttpProtobuf)
}

fn traces_wanted_with(
    policy: Option<&TelemetrySettings>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<TraceSettings>, TelemetryError> {
    if env_says(&env, "OTEL_SDK_DISABLED", "true") {
        return Ok(None);
    }
    let on = policy.is_some_and(|p| p.traces) || env_says(&env, "OTEL_TRACES_EXPORTER", "otlp");
    if !on {
        return Ok(None);
    }
    let (endpoint, service_name, protocol) = export_target(policy, &env, "traces")?;
    Ok(Some(TraceSettings {
        endpoint,
        service_name,
        protocol,
    }))
}

fn metrics_wanted_with(
    policy: Option<&TelemetrySettings>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<MetricSettings>, TelemetryError> {
    if env_says(&env, "OTEL_SDK_DISABLED", "true") {
        return Ok(None);
    }
    let on =
        policy.is_some_and(|p| p.otlp_metrics) || env_says(&env, "OTEL_METRICS_EXPORTER", "otlp");
    if !on {
        return Ok(None);
    }
    let (endpoint, service_name, protocol) = export_target(policy, &env, "metrics")?;
    Ok(Some(MetricSettings {
        endpoint,
        service_name,
        protocol,
        interval: policy.and_then(|p| p.metrics_interval),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn traces_are_off_without_the_section_or_the_variable() {
        assert_eq!(traces_wanted_with(None, env(&[])).unwrap(), None);
        let section = TelemetrySettings::default();
        assert_eq!(traces_wanted_with(Some(&section), env(&[])).unwrap(), None);
    }

    #[test]
    fn the_policy_turns_traces_on_with_its_endpoint_and_name() {
        let section = TelemetrySettings {
            traces: true,
            otlp_endpoint: Some("http://127.0.0.1:4318/".into()),
            service_name: Some("gateway".into()),
            ..TelemetrySettings::default()
        };
        let wanted =
            traces_wanted_with(Some(&section), env(&[("OTEL_SERVICE_NAME", "x")])).unwrap();
        assert_eq!(
            wanted,
            Some(TraceSettings {
                endpoint: Some("http://127.0.0.1:4318/v1/traces".into()),
                service_name: Some("gateway".into()),
                protocol: Protocol::HttpProtobuf,
            })
        );
    }

    #[test]
    fn otel_traces_exporter_turns_traces_on_and_leaves_the_rest_to_the_variables() {
        let wanted = traces_wanted_with(
            None,
            env(&[
                ("OTEL_TRACES_EXPORTER", "otlp"),
                ("OTEL_SERVICE_NAME", "svc"),
            ]),
        )
        .unwrap();
        assert_eq!(
            wanted,
            Some(TraceSettings {
                endpoint: None,
                service_name: None,
                protocol: Protocol::HttpProtobuf,
            })
        );
    }

    #[test]
    fn otel_sdk_disabled_wins_over_the_policy() {
        let section = TelemetrySettings {
            traces: true,
            ..TelemetrySettings::default()
        };
        let wanted = traces_wanted_with(Some(&section), env(&[("OTEL_SDK_DISABLED", "TRUE")]));
        assert_eq!(wanted.unwrap(), None);
    }

    #[test]
    fn metrics_export_is_off_by_default_and_on_by_the_policy_or_the_variable() {
        assert_eq!(metrics_wanted_with(None, env(&[])).unwrap(), None);
        let metrics_only = TelemetrySettings {
            metrics: true,
            ..TelemetrySettings::default()
        };
        assert_eq!(
            metrics_wanted_with(Some(&metrics_only), env(&[])).unwrap(),
            None
        );
        let by_env = metrics_wanted_with(None, env(&[("OTEL_METRICS_EXPORTER", "otlp")]))
            .unwrap()
            .expect("OTEL_METRICS_EXPORTER=otlp turns the export on");
        assert_eq!(by_env.endpoint, None);
        let section = TelemetrySettings {
            otlp_metrics: true,
            otlp_endpoint: Some("http://127.0.0.1:4318".into()),
            metrics_interval: Some(Duration::from_millis(250)),
            ..TelemetrySettings::default()
        };
        assert_eq!(
            metrics_wanted_with(Some(&section), env(&[])).unwrap(),
            Some(MetricSettings {
                endpoint: Some("http://127.0.0.1:4318/v1/metrics".into()),
                service_name: Some("toolgate".into()),
                protocol: Protocol::HttpProtobuf,
                interval: Some(Duration::from_millis(250)),
            })
        );
        let disabled = env(&[("OTEL_SDK_DISABLED", "true")]);
        assert_eq!(metrics_wanted_with(Some(&section), disabled).unwrap(), None);
    }

    #[test]
    fn grpc_comes_from_the_signals_variable_then_the_general_one_and_the_policy_wins() {
        let section = TelemetrySettings {
            otlp_metrics: true,
            otlp_endpoint: Some("http://127.0.0.1:4317".into()),
            ..TelemetrySettings::default()
        };
        let grpc = env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        let wanted = metrics_wanted_with(Some(&section), grpc).unwrap().unwrap();
        assert_eq!(wanted.protocol, Protocol::Grpc);
        assert_eq!(wanted.endpoint.as_deref(), Some("http://127.0.0.1:4317"));
        let own_wins = env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"),
        ]);
        let wanted = metrics_wanted_with(Some(&section), own_wins)
            .unwrap()
            .unwrap();
        assert_eq!(wanted.protocol, Protocol::HttpProtobuf);
        let policy_grpc = TelemetrySettings {
            traces: true,
            otlp_protocol: Some(OtlpProtocol::Grpc),
            ..TelemetrySettings::default()
        };
        let http = env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]);
        let wanted = traces_wanted_with(Some(&policy_grpc), http)
            .unwrap()
            .unwrap();
        assert_eq!(wanted.protocol, Protocol::Grpc);
    }

    #[test]
    fn a_protocol_toolgate_does_not_speak_is_an_error_naming_the_variable() {
        let json = env(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ]);
        let error = traces_wanted_with(None, json).expect_err("http/json is refused");
        let message = error.to_string();
        assert!(
            message.contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") && message.contains("http/json"),
            "{message}"
        );
    }
}
