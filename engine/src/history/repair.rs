//! Dangling-call repair (P1, P2), always on.
//!
//! Every assistant tool call without a tool message answering it gets a synthetic tool message
//! with the same call id and tool name, right after the existing answers of that assistant
//! message, marked as an error and saying what happened. Answers are matched by position: the
//! tool messages that directly follow an assistant message answer its calls, so a call id that
//! a provider reuses in a later turn is still matched to the right turn. Orphan tool messages
//! (answering no call of the assistant message before them) and duplicate answers are removed.
//! The caller's history is never changed: repair returns a new one.

use std::collections::HashSet;

use serde_json::Value;

use super::message::{Message, ToolCall};

/// What repair changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Call ids that got a synthetic answer.
    pub added: Vec<String>,
    /// Tool messages removed because they answer no call before them.
    pub removed_orphans: Vec<String>,
    /// Tool messages removed because the call already had an answer.
    pub removed_duplicates: Vec<String>,
}

impl RepairReport {
    pub fn is_clean(&self) -> bool {
        self.added.is_empty()
            && self.removed_orphans.is_empty()
            && self.removed_duplicates.is_empty()
    }
}

/// The text of a synthetic answer.
pub fn synthetic_text(call: &ToolCall) -> String {
    format!(
        "Error: the call to {} (id {}) has no result: the turn was interrupted or the result was lost before it answered. Call it again if you still need it.",
        call.function.name, call.id
    )
}

/// Repairs a history (P1) into a new one (P2).
pub fn repair(history: &[Message]) -> (Vec<Message>, RepairReport) {
    let mut out = Vec::with_capacity(history.len() + 4);
    let mut report = RepairReport::default();
    let mut i = 0;
    while i < history.len() {
        match &history[i] {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                out.push(history[i].clone());
                i += 1;
                let wanted: HashSet<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                let mut answered: HashSet<&str> = HashSet::new();
                while let Some(Message::Tool { tool_call_id, .. }) = history.get(i) {
                    if !wanted.contains(tool_call_id.as_str()) {
                        report.removed_orphans.push(tool_call_id.clone());
                    } else if !answered.insert(tool_call_id.as_str()) {
                        report.removed_duplicates.push(tool_call_id.clone());
                    } else {
                        out.push(history[i].clone());
                    }
                    i += 1;
                }
                for call in tool_calls {
                    if !answered.contains(call.id.as_str()) {
                        answered.insert(call.id.as_str());
                        report.added.push(call.id.clone());
                        out.push(Message::tool(
                            call.id.clone(),
                            Some(call.function.name.clone()),
                            Value::String(synthetic_text(call)),
                        ));
                    }
                }
            }
            Message::Tool { tool_call_id, .. } => {
                report.removed_orphans.push(tool_call_id.clone());
                i += 1;
            }
            other => {
                out.push(other.clone());
                i += 1;
            }
        }
    }
    (out, report)
}
