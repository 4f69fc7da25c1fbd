//! Whether traces are exported, and where to: the policy's `telemetry:` section and the
//! standard `OTEL_*` environment variables (O4).

use toolgate_policy::TelemetrySettings;

/// Where spans go, once traces are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSettings {
    /// The full URL spans are posted to (`…/v1/traces`); `None` leaves it to the exporter,
    /// which reads `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, then `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (adding `/v1/traces`), else `http://localhost:4318/v1/traces`.
    pub endpoint: Option<String>,
    /// The `service.name` resource attribute; `None` leaves it to `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
}

impl TraceSettings {
    /// The endpoint as messages name it.
    pub(crate) fn endpoint_text(&self) -> String {
        self.endpoint
            .clone()
            .unwrap_or_else(|| "the endpoint of the OTEL_EXPORTER_OTLP_* variables".into())
    }
}

/// Whether traces are exported, and where: `None` when they are off (the default).
///
/// On when the policy says `telemetry.traces: true` or the environment says
/// `OTEL_TRACES_EXPORTER=otlp`; off whatever else says so when `OTEL_SDK_DISABLED=true`. The
/// policy's `otlp_endpoint` (a base URL, `/v1/traces` added) and `service_name` win over the
/// variables.
pub fn traces_wanted(policy: Option<&TelemetrySettings>) -> Option<TraceSettings> {
    traces_wanted_with(policy, |name| std::env::var(name).ok())
}

fn traces_wanted_with(
    policy: Option<&TelemetrySettings>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<TraceSettings> {
    let env_says = |name: &str, word: &str| {
        env(name).is_some_and(|v| {
            v.split(',')
                .any(|part| part.trim().eq_ignore_ascii_case(word))
        })
    };
    if env_says("OTEL_SDK_DISABLED", "true") {
        return None;
    }
    let on = policy.is_some_and(|p| p.traces) || env_says("OTEL_TRACES_EXPORTER", "otlp");
    if !on {
        return None;
    }
    let endpoint = policy
        .and_then(|p| p.otlp_endpoint.as_deref())
        .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')));
    let service_name =
        policy
            .and_then(|p| p.service_name.clone())
            .or_else(|| match env("OTEL_SERVICE_NAME") {
                Some(name) if !name.trim().is_empty() => None,
                _ => Some("toolgate".to_owned()),
            });
    Some(TraceSettings {
        endpoint,
        service_name,
    })
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
        assert_eq!(traces_wanted_with(None, env(&[])), None);
        let section = TelemetrySettings::default();
        assert_eq!(traces_wanted_with(Some(&section), env(&[])), None);
    }

    #[test]
    fn the_policy_turns_traces_on_with_its_endpoint_and_name() {
        let section = TelemetrySettings {
            traces: true,
            otlp_endpoint: Some("http://127.0.0.1:4318/".into()),
            service_name: Some("gateway".into()),
            ..TelemetrySettings::default()
        };
        let wanted = traces_wanted_with(Some(&section), env(&[("OTEL_SERVICE_NAME", "x")]));
        assert_eq!(
            wanted,
            Some(TraceSettings {
                endpoint: Some("http://127.0.0.1:4318/v1/traces".into()),
                service_name: Some("gateway".into()),
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
        );
        assert_eq!(
            wanted,
            Some(TraceSettings {
                endpoint: None,
                service_name: None,
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
        assert_eq!(wanted, None);
    }
}
