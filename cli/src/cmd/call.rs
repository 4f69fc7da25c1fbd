//! `toolgate call`: one call through the whole guard, as a model's call would go.

use serde_json::{Value, json};
use toolgate::Outcome;
use toolgate::history::{ToolCall, content_json};

use crate::app::{build, load_policy};
use crate::args::{CallArgs, Timeout};
use crate::error::{CliError, EXIT_CALL_ERROR, EXIT_OK};
use crate::output::Out;
use crate::stored_session::StoredSession;

/// Exit 1 when the call ran and its result is an error; the result is printed all the same.
pub async fn call(args: CallArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (mut policy, name) = load_policy(args.policy.policy.as_deref())?;
    if let Some(Timeout(timeout)) = args.timeout {
        // --timeout wins over the dispatch default and over every per-tool override.
        policy.dispatch.timeout = timeout;
        for o in &mut policy.tools {
            o.timeout = None;
        }
    }
    let engine = build(policy, &name)?;
    let stored = StoredSession::open(&engine, args.session.as_deref()).await?;
    let session = stored.session();
    let call = ToolCall::new(args.call_id, args.tool, args.args);
    let outcome = engine.call(session, &call).await;
    stored.save().await;
    tracing::info!(
        tool = %outcome.tool_name,
        error_kind = outcome.error_kind().unwrap_or("none"),
        duration_ms = outcome.duration.as_millis() as u64,
        "call finished"
    );
    if args.json {
        out.json(&outcome_json(&outcome), false)?;
    } else {
        match content_json(&outcome.content) {
            Value::String(text) => {
                out.text(&text)?;
                if !text.ends_with('\n') {
                    out.text("\n")?;
                }
            }
            parts => out.json(&parts, true)?,
        }
    }
    Ok(if outcome.is_error() {
        EXIT_CALL_ERROR
    } else {
        EXIT_OK
    })
}

/// The `call --json` object.
fn outcome_json(o: &Outcome) -> Value {
    json!({
        "call_id": o.call_id,
        "model_name": o.model_name,
        "tool_name": o.tool_name,
        "known_tool": o.known_tool,
        "content": content_json(&o.content),
        "is_error": o.is_error(),
        "error_kind": o.error_kind(),
        "error": o.error.as_ref().map(|e| e.to_string()),
        "truncated": o.truncated,
        "output_chars": o.output_chars,
        "duration_ms": o.duration.as_secs_f64() * 1000.0,
        "queued_ms": o.queued.as_secs_f64() * 1000.0,
        "result_id": o.result_id,
        "redactions": o.redactions,
    })
}
