//! Which calls of a history still wait for an answer, where their answers go, and the rule for
//! call ids that repeat within one assistant message.
//!
//! **Duplicate call ids.** A tool message answers a call by `tool_call_id` alone, so two calls of
//! one assistant message with the same id cannot both be answered distinguishably. They are made
//! unique per message: the first call keeps its id, each later one becomes `<id>_2`, `<id>_3`, ...
//! (skipping ids the message already uses). Tool messages carrying the repeated id answer those
//! calls in order: the first answers the first call, the second the second, and so on. Both
//! [`pending`] (for `run`) and [`super::repair`] (for `prepare`) apply this rule, so every call
//! keeps its answer.
//!
//! **Where answers go.** New answers are inserted right after the existing answers of their
//! assistant message (the tool messages that directly follow it), never at the end of the
//! history, so a message the user added after an interrupted turn stays after the turn's answers.

use std::collections::HashSet;

use super::message::{Message, ToolCall};

/// The call ids of one assistant message, made unique (see the module docs).
pub fn unique_call_ids(calls: &[ToolCall]) -> Vec<String> {
    let taken: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    let mut used: HashSet<String> = HashSet::with_capacity(calls.len());
    let mut out = Vec::with_capacity(calls.len());
    for call in calls {
        let mut id = call.id.clone();
        let mut n = 1u64;
        while used.contains(&id) || (n > 1 && taken.contains(id.as_str())) {
            n += 1;
            id = format!("{}_{n}", call.id);
        }
        used.insert(id.clone());
        out.push(id);
    }
    out
}

/// The calls of one assistant message and which of them have an answer.
pub(crate) struct Slots<'a> {
    calls: &'a [ToolCall],
    pub(crate) ids: Vec<String>,
    pub(crate) answered: Vec<bool>,
}

impl<'a> Slots<'a> {
    pub(crate) fn new(calls: &'a [ToolCall]) -> Self {
        Slots {
            calls,
            ids: unique_call_ids(calls),
            answered: vec![false; calls.len()],
        }
    }

    /// Whether a tool message with this id can belong to this message.
    pub(crate) fn knows(&self, id: &str) -> bool {
        self.ids.iter().any(|u| u == id) || self.calls.iter().any(|c| c.id == id)
    }

    /// The call a tool message with `id` answers, now marked answered: the unanswered call whose
    /// unique id is `id`, else the first unanswered call the model gave that id. `None` when
    /// every such call already has its answer.
    pub(crate) fn claim(&mut self, id: &str) -> Option<usize> {
        let k = (0..self.ids.len())
            .find(|&k| !self.answered[k] && self.ids[k] == id)
            .or_else(|| {
                (0..self.ids.len()).find(|&k| !self.answered[k] && self.calls[k].id == id)
            })?;
        self.answered[k] = true;
        Some(k)
    }

    /// `(index in tool_calls, new id)` of each call whose id changed.
    pub(crate) fn renamed(&self) -> Vec<(usize, String)> {
        self.calls
            .iter()
            .zip(&self.ids)
            .enumerate()
            .filter(|(_, (c, id))| &c.id != *id)
            .map(|(k, (_, id))| (k, id.clone()))
            .collect()
    }

    /// The unanswered calls, with their unique ids.
    pub(crate) fn unanswered(&self) -> Vec<ToolCall> {
        self.calls
            .iter()
            .zip(&self.ids)
            .zip(&self.answered)
            .filter(|(_, answered)| !**answered)
            .map(|((c, id), _)| ToolCall {
                id: id.clone(),
                ..c.clone()
            })
            .collect()
    }
}

/// The tool calls of the last assistant message that have no answer yet, and how to add their
/// answers to the history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pending {
    /// The index of the last assistant message (`None`: the history has none).
    pub assistant: Option<usize>,
    /// Its calls that have no tool message after it, in call order, with unique ids.
    pub calls: Vec<ToolCall>,
    /// `(index in its tool_calls, new id)` of each call whose id repeated an earlier one's.
    pub renamed_calls: Vec<(usize, String)>,
    /// `(index in the history, new id)` of each existing answer to a renamed call.
    pub renamed_answers: Vec<(usize, String)>,
    /// Where new answers go: right after the tool messages that directly follow the assistant
    /// message.
    pub insert_at: usize,
}

/// What [`crate::Engine::run_turn`] did: the answers to the pending calls and where they go.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// The pending calls that ran, and the places in the history they change.
    pub pending: Pending,
    /// The new messages, to insert at `pending.insert_at`: a tool message per call in call order
    /// (under the `openai` profile, then a user message with the results' images).
    pub messages: Vec<Message>,
}

impl Turn {
    /// Applies the turn to the history it was computed from: renames, then inserts the answers.
    pub fn apply(&self, history: &mut Vec<Message>) {
        let p = &self.pending;
        if let Some(Message::Assistant { tool_calls, .. }) =
            p.assistant.and_then(|i| history.get_mut(i))
        {
            for (k, id) in &p.renamed_calls {
                if let Some(call) = tool_calls.get_mut(*k) {
                    call.id = id.clone();
                }
            }
        }
        for (i, id) in &p.renamed_answers {
            if let Some(Message::Tool { tool_call_id, .. }) = history.get_mut(*i) {
                *tool_call_id = id.clone();
            }
        }
        let at = p.insert_at.min(history.len());
        history.splice(at..at, self.messages.iter().cloned());
    }
}

/// The calls of the last assistant message that no tool message after it answers yet (see the
/// module docs for duplicate ids and where answers go).
pub fn pending(history: &[Message]) -> Pending {
    let last_assistant = history.iter().enumerate().rev().find_map(|(i, m)| match m {
        Message::Assistant { tool_calls, .. } => Some((i, tool_calls)),
        _ => None,
    });
    let Some((last, tool_calls)) = last_assistant else {
        return Pending {
            insert_at: history.len(),
            ..Pending::default()
        };
    };
    let mut slots = Slots::new(tool_calls);
    let mut renamed_answers = Vec::new();
    for (i, m) in history.iter().enumerate().skip(last + 1) {
        if let Message::Tool { tool_call_id, .. } = m
            && let Some(k) = slots.claim(tool_call_id)
            && &slots.ids[k] != tool_call_id
        {
            renamed_answers.push((i, slots.ids[k].clone()));
        }
    }
    let answers = history[last + 1..]
        .iter()
        .take_while(|m| matches!(m, Message::Tool { .. }))
        .count();
    Pending {
        assistant: Some(last),
        calls: slots.unanswered(),
        renamed_calls: slots.renamed(),
        renamed_answers,
        insert_at: last + 1 + answers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter()
            .map(|id| ToolCall::new(*id, "echo", "{}"))
            .collect()
    }

    #[test]
    fn repeated_call_ids_get_a_numbered_suffix() {
        assert_eq!(
            unique_call_ids(&calls(&["x", "x", "y", "x"])),
            ["x", "x_2", "y", "x_3"]
        );
    }

    #[test]
    fn a_suffix_never_takes_an_id_the_message_already_uses() {
        assert_eq!(
            unique_call_ids(&calls(&["x", "x", "x_2"])),
            ["x", "x_3", "x_2"]
        );
    }

    #[test]
    fn only_unanswered_calls_of_the_last_assistant_message_are_pending() {
        let history = vec![
            Message::user("hi"),
            Message::assistant_calls(calls(&["old"])),
            Message::tool("old", None, json!("done")),
            Message::assistant_calls(calls(&["a", "b"])),
            Message::tool("a", None, json!("answered")),
            Message::user("more"),
        ];
        let p = pending(&history);
        let ids: Vec<String> = p.calls.into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["b"]);
        assert_eq!(
            p.insert_at, 5,
            "after the answer to a, before the user message"
        );
    }
}
