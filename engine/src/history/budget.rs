//! Token estimates and the offload of older tool rounds (R5, R6).
//!
//! The estimate counts, per message, its JSON bytes / 4, except that CJK characters count one
//! token each (they are 3 bytes of UTF-8 but about a token apiece) and each image part counts
//! a fixed [`IMAGE_TOKENS`]; the tool schemas the model sees are added. It is a
//! [`TokenEstimator`], so a real tokenizer can replace it.
//!
//! When the estimate reaches `max_context_tokens`, the tool results of every round older than
//! the last `keep_recent_tool_rounds` are saved to the result store and replaced by a short
//! notice with their id. A round is an assistant message with tool calls and the tool messages
//! that answer it. The id of an offloaded result is derived from the session, the call id and the
//! content, so preparing the same history again reuses it (the save is create-only and an
//! existing id counts as done): each round is offloaded at most once. Results under
//! `min_offload_bytes`, and the outputs of the built-in tools (`tool_search`, `read_tool_result`),
//! stay in place.
//! A result with images is offloaded by its text: the images stay after the notice where the
//! provider profile lets tool messages carry images, and are dropped (the notice says so) where
//! it does not.
//! The caller's history is never changed.

use std::sync::Arc;

use serde_json::Value;
use toolgate_policy::NameProfile;
use toolgate_policy::ReductionSettings;
use toolgate_store::{NewResult, ResultId, ResultStore, SessionId, StoreError};

use super::message::{Message, tool_messages_carry_images};
use crate::tool::ToolSpec;

/// Tokens counted for one image part.
pub const IMAGE_TOKENS: u64 = 765;

/// Estimates how many tokens a request costs.
pub trait TokenEstimator: Send + Sync {
    /// The tokens of one message.
    fn message(&self, m: &Message) -> u64;
    /// The tokens of the tool schemas sent with the request.
    fn tools(&self, tools: &[ToolSpec]) -> u64;
}

/// The default estimate (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteEstimator;

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x2E80..=0x9FFF | 0xA960..=0xA97F | 0xAC00..=0xD7FF |
        0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFFEF | 0x20000..=0x3FFFF)
}

fn text_tokens(s: &str) -> u64 {
    if s.is_ascii() {
        return s.len() as u64 / 4;
    }
    let mut other_bytes = 0u64;
    let mut cjk = 0u64;
    for c in s.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else {
            other_bytes += c.len_utf8() as u64;
        }
    }
    cjk + other_bytes / 4
}

fn value_tokens(v: &Value) -> u64 {
    match v {
        Value::String(s) => text_tokens(s) + 1,
        Value::Array(a) => a.iter().map(value_tokens).sum::<u64>() + 1,
        Value::Object(o) => {
            let image = matches!(
                o.get("type").and_then(Value::as_str),
                Some("image_url" | "image" | "input_image")
            );
            if image {
                return IMAGE_TOKENS;
            }
            o.iter()
                .map(|(k, v)| k.len() as u64 / 4 + value_tokens(v))
                .sum::<u64>()
                + 1
        }
        other => other.to_string().len() as u64 / 4 + 1,
    }
}

fn extra_tokens(extra: &serde_json::Map<String, Value>) -> u64 {
    extra
        .iter()
        .map(|(k, v)| k.len() as u64 / 4 + value_tokens(v))
        .sum()
}

impl TokenEstimator for ByteEstimator {
    fn message(&self, m: &Message) -> u64 {
        // A few tokens of framing per message, then its content, read in place.
        4 + match m {
            Message::System { content, extra }
            | Message::Developer { content, extra }
            | Message::User { content, extra } => value_tokens(content) + extra_tokens(extra),
            Message::Assistant {
                content,
                tool_calls,
                extra,
            } => {
                let calls: u64 = tool_calls
                    .iter()
                    .map(|c| {
                        8 + text_tokens(&c.id)
                            + text_tokens(&c.function.name)
                            + text_tokens(&c.function.arguments)
                            + extra_tokens(&c.extra)
                            + extra_tokens(&c.function.extra)
                    })
                    .sum();
                content.as_ref().map_or(0, value_tokens) + calls + extra_tokens(extra)
            }
            Message::Tool {
                tool_call_id,
                name,
                content,
                extra,
            } => {
                text_tokens(tool_call_id)
                    + name.as_deref().map_or(0, text_tokens)
                    + value_tokens(content)
                    + extra_tokens(extra)
            }
        }
    }

    fn tools(&self, tools: &[ToolSpec]) -> u64 {
        tools
            .iter()
            .map(|t| {
                serde_json::to_string(t)
                    .map(|s| text_tokens(&s))
                    .unwrap_or(0)
            })
            .sum()
    }
}

/// What the offload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffloadReport {
    /// The estimate before the offload.
    pub tokens_before: u64,
    /// The estimate after it.
    pub tokens_after: u64,
    /// `(call id, result id)` of each result replaced by a notice.
    pub offloaded: Vec<(String, String)>,
    /// Results that could not be saved and were left in place, with why.
    pub failed: Vec<(String, String)>,
}

/// A stable 128-bit hash (two FNV-1a passes with different seeds), for ids derived from content.
fn stable_id(parts: &[&[u8]]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x8422_2325_cbf2_9ce4;
    for p in parts {
        for &byte in p.iter().chain(&[0xff]) {
            a = (a ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            b = (b ^ u64::from(byte))
                .wrapping_mul(0x0000_0100_0000_01b3)
                .rotate_left(5);
        }
    }
    format!("h_{a:016x}{b:016x}")
}

/// The notice that replaces an offloaded older result.
pub(crate) fn round_notice(id: &str, bytes: usize) -> String {
    format!(
        "[Older tool result ({bytes} bytes) moved out of the conversation to save space; it was saved whole as \"{id}\". \
         Read it with read_tool_result {{\"id\": \"{id}\"}} if you need it again.]"
    )
}

/// The text of a tool message's content, and its other parts (images) in order. Text parts are
/// joined as they are; `None` for content that is neither a string nor a list of parts.
fn split_content(v: &Value) -> Option<(String, Vec<Value>)> {
    match v {
        Value::String(s) => Some((s.clone(), Vec::new())),
        Value::Array(parts) => {
            let mut text = String::new();
            let mut other = Vec::new();
            for p in parts {
                match (
                    p.get("type").and_then(Value::as_str),
                    p.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    _ => other.push(p.clone()),
                }
            }
            Some((text, other))
        }
        _ => None,
    }
}

/// What replaces an offloaded result: the notice alone, or, when the result had images (or other
/// non-text parts), the notice as a text part followed by them where the profile's tool messages
/// carry images, or the notice saying they were dropped where they do not.
fn offloaded_content(id: &str, bytes: usize, other: Vec<Value>, profile: NameProfile) -> Value {
    let notice = round_notice(id, bytes);
    let n = other.len();
    if n == 0 {
        Value::String(notice)
    } else if tool_messages_carry_images(profile) {
        let mut parts = vec![serde_json::json!({
            "type": "text",
            "text": format!("{notice} Its {n} non-text part(s) (images) are kept below."),
        })];
        parts.extend(other);
        Value::Array(parts)
    } else {
        Value::String(format!(
            "{notice} Its {n} non-text part(s) (images) were dropped: they are not saved, and tool \
             messages of this provider cannot carry them."
        ))
    }
}

/// What [`offload_rounds`] works with besides the history.
pub(crate) struct Offload<'a> {
    /// The tools the model sees (their schemas count toward the estimate).
    pub(crate) tools: &'a [ToolSpec],
    pub(crate) session: Option<&'a SessionId>,
    pub(crate) settings: &'a ReductionSettings,
    pub(crate) store: &'a Arc<dyn ResultStore>,
    pub(crate) estimator: &'a dyn TokenEstimator,
    /// The provider profile: whether tool messages may keep images.
    pub(crate) profile: NameProfile,
    /// Whether a call name (as the model wrote it) names a built-in tool, whose results stay.
    pub(crate) is_builtin: &'a (dyn Fn(&str) -> bool + Sync),
}

/// Offloads older rounds once the estimate reaches the budget (R5). `history` must already be
/// repaired (it is the copy repair made, never the caller's); under the budget it is returned
/// as it is. A result with images has its text offloaded; its images are kept or dropped as
/// the provider profile allows images in tool messages (see [`tool_messages_carry_images`]).
pub(crate) async fn offload_rounds(
    history: Vec<Message>,
    with: Offload<'_>,
) -> (Vec<Message>, OffloadReport) {
    let Offload {
        tools,
        session,
        settings,
        store,
        estimator,
        profile,
        is_builtin,
    } = with;
    let mut report = OffloadReport::default();
    let schema_tokens = estimator.tools(tools);
    let mut per_message: Vec<u64> = history.iter().map(|m| estimator.message(m)).collect();
    let total = |v: &[u64]| schema_tokens + v.iter().sum::<u64>();
    report.tokens_before = total(&per_message);
    if report.tokens_before < settings.max_context_tokens {
        report.tokens_after = report.tokens_before;
        return (history, report);
    }
    let mut out = history.clone();
    // Rounds: indices of assistant messages with calls, oldest first.
    let rounds: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(
            |(_, m)| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
        )
        .map(|(i, _)| i)
        .collect();
    let keep = settings.keep_recent_tool_rounds as usize;
    let old = rounds.len().saturating_sub(keep);
    for &start in &rounds[..old] {
        let Message::Assistant { tool_calls, .. } = &history[start] else {
            continue;
        };
        let mut i = start + 1;
        while let Some(Message::Tool {
            tool_call_id,
            content,
            ..
        }) = history.get(i)
        {
            let name = tool_calls
                .iter()
                .find(|c| &c.id == tool_call_id)
                .map(|c| c.function.name.as_str())
                .unwrap_or("");
            let idx = i;
            i += 1;
            if is_builtin(name) {
                continue;
            }
            let Some((text, other)) = split_content(content) else {
                continue;
            };
            if (text.len() as u64) < settings.min_offload_bytes.max(1) {
                continue;
            }
            let id_text = stable_id(&[
                session.map_or("", SessionId::as_str).as_bytes(),
                tool_call_id.as_bytes(),
                text.as_bytes(),
            ]);
            let id = match ResultId::parse(&id_text) {
                Ok(id) => id,
                Err(e) => {
                    report.failed.push((tool_call_id.clone(), e.to_string()));
                    continue;
                }
            };
            let new = NewResult::new(session.cloned())
                .with_id(id)
                .with_tool(name.to_string());
            match store.save(new, &text).await {
                Ok(_) | Err(StoreError::AlreadyExists { .. }) => {}
                Err(e) => {
                    let why = crate::error::Chain(&e).to_string();
                    report.failed.push((tool_call_id.clone(), why));
                    continue;
                }
            }
            if let Message::Tool { content, .. } = &mut out[idx] {
                *content = offloaded_content(&id_text, text.len(), other, profile);
            }
            per_message[idx] = estimator.message(&out[idx]);
            report.offloaded.push((tool_call_id.clone(), id_text));
        }
    }
    report.tokens_after = total(&per_message);
    (out, report)
}
