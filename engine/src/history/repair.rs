//! Dangling-call repair (P1, P2), always on.
//!
//! Every assistant tool call without a tool message answering it gets a synthetic tool message
//! with the same call id and tool name, right after the existing answers of that assistant
//! message, marked as an error and saying what happened.
//!
//! A tool message belongs to the latest assistant message before it that made a call with its
//! id, so a call id that a provider reuses in a later turn is matched to the right turn. Answers
//! are placed right after their assistant message, in the order they came: an answer that came
//! later (after a user message, as older versions of `toolgate run` wrote them) is moved up to its
//! call, never dropped. Orphan tool messages (no assistant message before them made that call)
//! and extra answers to a call that already has one are removed. Call ids repeated within one
//! assistant message are made unique and their answers matched in order (see [`super::turn`]).
//! The caller's history is never changed: repair returns a new one.

use serde_json::Value;
use toolgate_policy::NameProfile;

use super::message::{Message, ToolCall, tool_messages_carry_images};
use super::turn::Slots;

/// What repair changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Call ids that got a synthetic answer.
    pub added: Vec<String>,
    /// Tool messages removed because they answer no call before them.
    pub removed_orphans: Vec<String>,
    /// Tool messages removed because the call already had an answer.
    pub removed_duplicates: Vec<String>,
    /// Call ids of answers moved up to their assistant message from further down the history.
    pub moved: Vec<String>,
    /// `(from, to)` of each call id changed because it repeated an earlier call's id in the same
    /// assistant message; its answer, if any, carries the new id too.
    pub renamed: Vec<(String, String)>,
}

impl RepairReport {
    /// Whether repair changed nothing.
    pub fn is_clean(&self) -> bool {
        self.added.is_empty()
            && self.removed_orphans.is_empty()
            && self.removed_duplicates.is_empty()
            && self.moved.is_empty()
            && self.renamed.is_empty()
    }
}

/// The text of a synthetic answer.
pub fn synthetic_text(call: &ToolCall) -> String {
    format!(
        "Error: the call to {} (id {}) has no result: the turn was interrupted or the result was lost before it answered. Call it again if you still need it.",
        call.function.name, call.id
    )
}

/// Repairs a history (P1) into a new one (P2), with synthetic answers in the `mcp` shape.
pub fn repair(history: &[Message]) -> (Vec<Message>, RepairReport) {
    repair_for(history, NameProfile::Mcp)
}

/// One assistant message with calls, and its answers as `(index in the history, call)`.
struct TurnAnswers<'a> {
    at: usize,
    slots: Slots<'a>,
    answers: Vec<(usize, usize)>,
}

/// Repairs a history (P1) into a new one (P2); synthetic answers are shaped for `profile` (no
/// `name` under `openai`).
pub fn repair_for(history: &[Message], profile: NameProfile) -> (Vec<Message>, RepairReport) {
    let mut report = RepairReport::default();
    // Pass 1: the calls of each assistant message, and which of them each tool message answers.
    let mut turns: Vec<TurnAnswers<'_>> = Vec::new();
    // The end of the run of tool messages right after the latest assistant message with calls.
    let mut block_end = 0;
    for (i, m) in history.iter().enumerate() {
        match m {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                let slots = Slots::new(tool_calls);
                for (k, to) in slots.renamed() {
                    report.renamed.push((tool_calls[k].id.clone(), to));
                }
                turns.push(TurnAnswers {
                    at: i,
                    slots,
                    answers: Vec::new(),
                });
                block_end = i + 1;
            }
            Message::Tool { tool_call_id, .. } => {
                let in_block = i == block_end;
                if in_block {
                    block_end += 1;
                }
                let latest = turns.len().saturating_sub(1);
                let owner = turns
                    .iter_mut()
                    .enumerate()
                    .rev()
                    .find(|(_, t)| t.slots.knows(tool_call_id));
                match owner {
                    None => report.removed_orphans.push(tool_call_id.clone()),
                    Some((n, turn)) => match turn.slots.claim(tool_call_id) {
                        None => report.removed_duplicates.push(tool_call_id.clone()),
                        Some(call) => {
                            if !(in_block && n == latest) {
                                report.moved.push(tool_call_id.clone());
                            }
                            turn.answers.push((i, call));
                        }
                    },
                }
            }
            _ => {}
        }
    }

    // Pass 2: each assistant message, then its answers in the order they came, then a synthetic
    // answer for each call without one. Tool messages are only ever written as answers.
    let mut out = Vec::with_capacity(history.len() + 4);
    let mut turns = turns.into_iter().peekable();
    for (i, m) in history.iter().enumerate() {
        match m {
            Message::Tool { .. } => {}
            Message::Assistant {
                content,
                tool_calls,
                extra,
            } if turns.peek().is_some_and(|t| t.at == i) => {
                let Some(turn) = turns.next() else {
                    continue;
                };
                let calls: Vec<ToolCall> = tool_calls
                    .iter()
                    .zip(&turn.slots.ids)
                    .map(|(c, id)| ToolCall {
                        id: id.clone(),
                        ..c.clone()
                    })
                    .collect();
                out.push(Message::Assistant {
                    content: content.clone(),
                    tool_calls: calls.clone(),
                    extra: extra.clone(),
                });
                for &(j, call) in &turn.answers {
                    let mut answer = history[j].clone();
                    if let Message::Tool { tool_call_id, .. } = &mut answer {
                        tool_call_id.clone_from(&calls[call].id);
                    }
                    out.push(answer);
                }
                for (call, answered) in calls.iter().zip(&turn.slots.answered) {
                    if !answered {
                        report.added.push(call.id.clone());
                        let name =
                            tool_messages_carry_images(profile).then(|| call.function.name.clone());
                        out.push(Message::tool(
                            call.id.clone(),
                            name,
                            Value::String(synthetic_text(call)),
                        ));
                    }
                }
            }
            other => out.push(other.clone()),
        }
    }
    (out, report)
}
