//! The `tracing` spans of a call (O1, O2): one for the whole call, named and described after
//! the OpenTelemetry GenAI and MCP semantic conventions, and one for each guard stage that did
//! work (`guard.rules`, `guard.hook`, `guard.offload`).
//!
//! The spans are `info` spans of the target `toolgate::call`. A host that exports traces
//! (toolgate serve with `telemetry.traces`) turns them into OpenTelemetry spans with
//! `tracing-opentelemetry`, which reads the `otel.*` fields as the span's name, kind and status.
//! When no subscriber wants them, a span costs one check of its call site: no field is built,
//! nothing is recorded.

use tracing::Span;
use tracing::field::Empty;

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
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = operation,
        gen_ai.tool.name = %inv.tool_name,
        gen_ai.tool.call.id = %inv.call_id,
        "gen_ai.tool.type" = "function",
        mcp.method.name = method,
        toolgate.kind = inv.kind.as_str(),
        toolgate.model_name = %inv.model_name,
        toolgate.session = inv.session.as_ref().map_or("", SessionId::as_str),
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
pub(crate) fn record_outcome(span: &Span, outcome: &Outcome) {
    if span.is_disabled() {
        return;
    }
    let d = &outcome.decision;
    let decision = match (d.rules, d.before_hook) {
        (Some("deny"), _) | (_, Some("deny")) => "deny",
        (Some(_), _) | (_, Some(_)) => "allow",
        (None, None) => "none",
    };
    span.record("toolgate.decision", decision);
    if let Some(rule) = &d.rule {
        span.record("toolgate.rule", rule.as_str());
    }
    if let Some(hook) = d.before_hook {
        span.record("toolgate.before_hook", hook);
    }
    // As signed integers: OpenTelemetry has no unsigned ones (a u64 would become a string).
    span.record("toolgate.result.chars", signed(outcome.output_chars));
    span.record("toolgate.truncated", outcome.truncated);
    span.record("toolgate.offloaded", outcome.result_id.is_some());
    if let Some(id) = &outcome.result_id {
        span.record("toolgate.result_id", id.as_str());
    }
    span.record("toolgate.redactions", signed(outcome.redactions));
    span.record("toolgate.queued_ms", outcome.queued.as_secs_f64() * 1000.0);
    match &outcome.error {
        Some(err) => {
            span.record("error.type", err.kind());
            span.record("otel.status_code", "error");
            span.record("otel.status_description", tracing::field::display(err));
        }
        None => {
            span.record("otel.status_code", "ok");
        }
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
