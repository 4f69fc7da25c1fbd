//! The `tracing` spans of a call (O1, O2): one for the whole call, named and described after
//! the OpenTelemetry GenAI and MCP semantic conventions, and one for each guard stage that did
//! work (`guard.rules`, `guard.hook`, `guard.offload`).
//!
//! The spans are `info` spans of the target `toolgate::call`. A host that exports traces
//! (toolgate serve with `telemetry.traces`) turns them into OpenTelemetry spans with
//! `tracing-opentelemetry`, which reads the `otel.*` fields as the span's name, kind and status.
//! When no subscriber wants them, a span costs one check of its call site: no field is built,
//! nothing is recorded.

use std::sync::OnceLock;

use tracing::Span;
use tracing::field::{Empty, Field, FieldSet};

use crate::access::CallKind;
use crate::call::{Invocation, Outcome};
use toolgate_store::SessionId;

/// The span of one call, with what is known when it starts; [`record_outcome`] adds the rest.
pub(crate) fn call_span(inv: &Invocation) -> Span {
    let (method, operation) = match inv.kind {
        CallKind::Tool => ("tools/call", "execute_tool"),
        CallKind::Resource => ("resources/read", "read_resource"),
        CallKind::Prompt => ("prompts/get", "get_prompt"),
    };
    tracing::info_span!(
        target: "toolgate::call",
        "tool_call",
        otel.name = %format_args!("{} {}", span_verb(inv.kind, operation), inv.tool_name),
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = operation,
        gen_ai.tool.name = inv.tool_name.as_str(),
        gen_ai.tool.call.id = inv.call_id.as_str(),
        "gen_ai.tool.type" = "function",
        mcp.method.name = method,
        toolgate.kind = inv.kind.as_str(),
        // Only when they say something: the name the model used when it is an alias, the
        // session when there is one (an attribute costs an allocation per call).
        toolgate.model_name = (inv.model_name != inv.tool_name).then_some(inv.model_name.as_str()),
        toolgate.session = inv.session.as_ref().map(SessionId::as_str),
        toolgate.principal = inv.caller.name(),
        toolgate.decision = Empty,
        toolgate.rule = Empty,
        toolgate.before_hook = Empty,
        "error.type" = Empty,
        toolgate.result.chars = Empty,
        toolgate.truncated = Empty,
        toolgate.offloaded = Empty,
        toolgate.result_id = Empty,
        toolgate.redactions = Empty,
        toolgate.queued_ms = Empty,
    )
}

/// `execute_tool` for a tool (the GenAI convention's span name), the MCP method otherwise.
fn span_verb(kind: CallKind, operation: &'static str) -> &'static str {
    match kind {
        CallKind::Tool => operation,
        CallKind::Resource => "resources/read",
        CallKind::Prompt => "prompts/get",
    }
}

/// Adds to `span` how the call ended: the decision and the rule, the error kind, the size of
/// the result, whether it was offloaded. Nothing is built when the span is disabled.
///
/// All of it goes to the subscriber in one record: `Span::record` per field would look the
/// span up and lock its data once a field (eight times a call), which was a fifth of what
/// traces cost a call (`telemetry/benches/overhead.rs`). The value set is made with
/// `FieldSet::value_set`, what `tracing`'s own macros and `Span::record` expand to.
pub(crate) fn record_outcome(span: &Span, outcome: &Outcome) {
    let Some(meta) = span.metadata() else {
        return;
    };
    let fields = meta.fields();
    let Some(f) = OutcomeFields::of(fields) else {
        return;
    };
    let d = &outcome.decision;
    let decision = match (d.rules, d.before_hook) {
        (Some("deny"), _) | (_, Some("deny")) => "deny",
        (Some(_), _) | (_, Some(_)) => "allow",
        (None, None) => "none",
    };
    let rule = d.rule.as_deref();
    // As signed integers: OpenTelemetry has no unsigned ones (a u64 would become a string).
    let chars = signed(outcome.output_chars);
    let offloaded = outcome.result_id.is_some();
    let result_id = outcome.result_id.as_deref();
    let redactions = signed(outcome.redactions);
    let queued_ms = outcome.queued.as_secs_f64() * 1000.0;
    let error_type = outcome.error.as_ref().map(|err| err.kind());
    let status = if outcome.error.is_some() {
        "error"
    } else {
        "ok"
    };
    let description = outcome.error.as_ref().map(tracing::field::display);
    fn some<T: tracing::Value>(value: &T) -> Option<&dyn tracing::Value> {
        Some(value)
    }
    let values = [
        (&f.decision, some(&decision)),
        (&f.rule, rule.as_ref().map(|v| v as &dyn tracing::Value)),
        (
            &f.before_hook,
            d.before_hook.as_ref().map(|v| v as &dyn tracing::Value),
        ),
        (&f.chars, some(&chars)),
        (&f.truncated, some(&outcome.truncated)),
        (&f.offloaded, some(&offloaded)),
        (
            &f.result_id,
            result_id.as_ref().map(|v| v as &dyn tracing::Value),
        ),
        (&f.redactions, some(&redactions)),
        (&f.queued_ms, some(&queued_ms)),
        (
            &f.error_type,
            error_type.as_ref().map(|v| v as &dyn tracing::Value),
        ),
        (&f.status_code, some(&status)),
        (
            &f.status_description,
            description.as_ref().map(|v| v as &dyn tracing::Value),
        ),
    ];
    span.record_all(&fields.value_set(&values));
}

/// The fields of the call span that [`record_outcome`] fills, looked up once (the span has
/// one call site, so one set of fields).
struct OutcomeFields {
    decision: Field,
    rule: Field,
    before_hook: Field,
    chars: Field,
    truncated: Field,
    offloaded: Field,
    result_id: Field,
    redactions: Field,
    queued_ms: Field,
    error_type: Field,
    status_code: Field,
    status_description: Field,
}

impl OutcomeFields {
    /// The fields in `set`, the call span's; `None` if `set` lacks one (not the call span).
    fn of(set: &FieldSet) -> Option<&'static OutcomeFields> {
        static FIELDS: OnceLock<Option<OutcomeFields>> = OnceLock::new();
        let found = FIELDS
            .get_or_init(|| OutcomeFields::look_up(set))
            .as_ref()?;
        set.contains(&found.decision).then_some(found)
    }

    fn look_up(set: &FieldSet) -> Option<OutcomeFields> {
        Some(OutcomeFields {
            decision: set.field("toolgate.decision")?,
            rule: set.field("toolgate.rule")?,
            before_hook: set.field("toolgate.before_hook")?,
            chars: set.field("toolgate.result.chars")?,
            truncated: set.field("toolgate.truncated")?,
            offloaded: set.field("toolgate.offloaded")?,
            result_id: set.field("toolgate.result_id")?,
            redactions: set.field("toolgate.redactions")?,
            queued_ms: set.field("toolgate.queued_ms")?,
            error_type: set.field("error.type")?,
            status_code: set.field("otel.status_code")?,
            status_description: set.field("otel.status_description")?,
        })
    }
}

/// `n` as an OpenTelemetry integer.
pub(crate) fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The span of one guard stage that does work (`rules`, `rewrite`, `before`, `after`,
/// `offload`), a child of the call's span.
pub(crate) fn stage_span(stage: &'static str) -> Span {
    tracing::info_span!(
        target: "toolgate::call",
        "guard_stage",
        otel.name = %format_args!("guard.{stage}"),
        toolgate.stage = stage,
        toolgate.bytes = Empty,
    )
}
