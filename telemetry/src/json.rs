//! `--log-format json` (L1): one JSON object a line, with the time, level, target, message and
//! fields of the event, the name of the span it happened in, and, while traces are on, the
//! OpenTelemetry `trace_id` and `span_id` of that span, so a log line finds its trace.

use std::fmt;

use opentelemetry::trace::TraceContextExt;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON line format.
pub(crate) struct JsonLines {
    /// Whether the OpenTelemetry layer is installed (only then are there ids to write).
    pub(crate) with_ids: bool,
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        let mut time = String::new();
        SystemTime.format_time(&mut Writer::new(&mut time))?;
        line.insert("timestamp".into(), Value::String(time));
        let meta = event.metadata();
        line.insert("level".into(), Value::String(meta.level().to_string()));
        line.insert("target".into(), Value::String(meta.target().to_owned()));
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(message) = fields.message {
            line.insert("message".into(), Value::String(message));
        }
        if !fields.map.is_empty() {
            line.insert("fields".into(), Value::Object(fields.map));
        }
        if let Some(span) = ctx.lookup_current() {
            line.insert("span".into(), Value::String(span.name().to_owned()));
        }
        if self.with_ids {
            let cx = tracing::Span::current().context();
            let span = cx.span();
            let ids = span.span_context();
            if ids.is_valid() {
                line.insert("trace_id".into(), Value::String(ids.trace_id().to_string()));
                line.insert("span_id".into(), Value::String(ids.span_id().to_string()));
            }
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// The fields of an event, `message` apart.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    map: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                Value::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.map.insert(field.name().to_owned(), value);
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
}
