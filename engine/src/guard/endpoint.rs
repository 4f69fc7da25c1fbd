//! The end of the chain: the tool itself, or the unknown-tool answer (D4). A tool's success is
//! checked against the output schema it declares, if any (G10), before any layer sees it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use crate::access::CallKind;
use crate::call::{CallResult, Invocation, Reply, panic_message};
use crate::error::{CallError, cut_name};
use crate::script::{CallView, ScriptSet};
use crate::structured::INVALID_STRUCTURED_CONTENT;
use crate::tool::{BoxFuture, ToolContext, ToolErrorKind, ToolOutput};

/// Names suggested for an unknown name.
pub(crate) type Suggest = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// The end of the chain: the tool, or the unknown-tool answer (D4).
pub(crate) struct Endpoint {
    pub(crate) scripts: Arc<ScriptSet>,
    pub(crate) suggest: Suggest,
    /// Appended to the default unknown-tool message (for example how to search).
    pub(crate) unknown_hint: String,
}

impl Endpoint {
    pub(crate) fn call<'b>(&'b self, inv: &'b mut Invocation) -> BoxFuture<'b, CallResult> {
        Box::pin(async move {
            let Some(tool) = inv.tool.clone() else {
                return match inv.kind {
                    CallKind::Tool => self.unknown(inv).await,
                    kind => Err(unknown_access(kind, &inv.tool_name)),
                };
            };
            let ctx = ToolContext {
                session: inv.session.clone(),
                caller: inv.caller.clone(),
                call_id: inv.call_id.clone(),
                model_name: inv.model_name.clone(),
                cancel: inv.cancel.clone(),
                progress: inv.progress.clone(),
                // The group layer keeps its own handle until the future ends; an adapter that
                // runs the call on a thread keeps this one there until the call returns.
                hold: inv.hold.clone(),
                waited: inv.waited.clone(),
                keep_chars: inv.keep_chars,
            };
            let args = std::mem::take(&mut inv.args);
            let started = std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(ctx, args)));
            let fut = match started {
                Ok(f) => f,
                Err(panic) => {
                    return Err(CallError::ToolExecutionPanic {
                        tool: inv.tool_name.clone(),
                        message: panic_message(&*panic),
                    });
                }
            };
            match AssertUnwindSafe(fut).catch_unwind().await {
                Ok(Ok(output)) => match &inv.output_check {
                    // G10: a tool that declares an output schema is held to it.
                    Some(check) => match check.check(&output) {
                        Ok(()) => Ok(Reply::new(output)),
                        Err(message) => Err(CallError::Store {
                            tool: inv.tool_name.clone(),
                            kind: INVALID_STRUCTURED_CONTENT,
                            message,
                        }),
                    },
                    None => Ok(Reply::new(output)),
                },
                Ok(Err(e)) => Err(match e.kind {
                    ToolErrorKind::Failed => CallError::ToolFailed {
                        tool: inv.tool_name.clone(),
                        message: e.message,
                    },
                    ToolErrorKind::InvalidArguments => CallError::InvalidArguments {
                        tool: inv.tool_name.clone(),
                        reason: e.message,
                    },
                    ToolErrorKind::Panicked => CallError::ToolExecutionPanic {
                        tool: inv.tool_name.clone(),
                        message: e.message,
                    },
                    ToolErrorKind::Overloaded => CallError::Overloaded {
                        tool: inv.tool_name.clone(),
                        message: e.message,
                    },
                    ToolErrorKind::Coded(kind) => CallError::Store {
                        tool: inv.tool_name.clone(),
                        kind,
                        message: e.message,
                    },
                }),
                Err(panic) => Err(CallError::ToolExecutionPanic {
                    tool: inv.tool_name.clone(),
                    message: panic_message(&*panic),
                }),
            }
        })
    }

    /// D4 for tools: the `unknown_tool` script, or the default answer with suggestions.
    async fn unknown(&self, inv: &mut Invocation) -> CallResult {
        let suggestions = (self.suggest)(&inv.model_name);
        let view = CallView::of(inv);
        if let Some(text) = self
            .scripts
            .unknown_tool(view, &suggestions, inv.deadline, &inv.cancel)
            .await
            .map_err(|e| inv.past_deadline(e))?
        {
            return Ok(Reply::new(ToolOutput::Text(text)));
        }
        let mut message = format!("unknown tool {:?}.", cut_name(&inv.model_name));
        if !suggestions.is_empty() {
            message.push_str(&format!(" Did you mean: {}?", suggestions.join(", ")));
        }
        message.push_str(" Call only the tools you were given");
        message.push_str(&self.unknown_hint);
        message.push('.');
        Err(CallError::UnknownTool {
            name: inv.model_name.clone(),
            suggestions,
            message,
        })
    }
}

/// A read or get that the host found no target for (A1): `unknown_resource`, `unknown_prompt`.
fn unknown_access(kind: CallKind, name: &str) -> CallError {
    let (code, what) = match kind {
        CallKind::Resource => ("unknown_resource", "resource"),
        _ => ("unknown_prompt", "prompt"),
    };
    CallError::Store {
        tool: cut_name(name).into_owned(),
        kind: code,
        message: format!("no source offers this {what}"),
    }
}
