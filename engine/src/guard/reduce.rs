//! The reduce layer (R1, R2, R9): a text result over `max_result_bytes` is stored whole in the
//! result store and the model gets a notice with its id, size, a head and tail preview and how
//! to read it with the built-in `read_tool_result` tool.
//!
//! The offload runs outside the call's timeout (the tool's output must not be lost because the
//! store was slow) but under its own store timeout; a store that fails or does not answer in time
//! never loses the result silently (R9): the model gets the capped text and a notice saying the
//! full output could not be saved, and an `error` event is emitted.
//!
//! Error texts are reduced the same way (G3): the free text of an error (a tool's message) over
//! `max_result_bytes` is stored whole and the error carries the notice instead; the call stays
//! an error of the same kind.
//!
//! The output of the built-in tools is never reduced again (R2).
//!
//! A result with structured content (R10) is measured twice against `max_result_bytes`: its text
//! (text parts and embedded text resources, as above) and its structured content as compact JSON.
//! What is over is stored as one document, under one id, read with `read_tool_result` like any
//! other:
//! * only the text is over: the text is stored; the structured content stays;
//! * the structured content is over: it is left out of the result, and the document is its JSON
//!   (or the text alone, when the text is over too and is that same JSON, as MCP servers
//!   usually send it; or the text, a heading line and the JSON, when both are over and differ).
//!
//! The notice takes the place of the stored text, or follows the content when only the
//! structured content was stored; images, audio, binary resources and links always stay.

use std::sync::Arc;
use std::time::Duration;

use toolgate_policy::ReductionSettings;
use toolgate_store::{NewResult, ResultStore};
use tracing::Instrument;

use super::result_cap::{cap_parts, cap_structured, cap_text};
use crate::call::{CallResult, Invocation, Reply};
use crate::error::CallError;
use crate::events::{Event, EventKind, Events};
use crate::guard::span::stage_span;
use crate::guard::{Layer, Next};
use crate::reduction::MAX_PAGE_CHARS;
use crate::structured::json_bytes;
use crate::tool::{BoxFuture, ContentPart, FullOutput, ToolOutput};

/// How long an offload may take before it counts as a store failure.
pub(crate) const STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// The notice that replaces an offloaded result (R1).
pub(crate) fn notice(
    what: &str,
    id: &str,
    text: &str,
    bytes: u64,
    chars: u64,
    head: u64,
    tail: u64,
) -> String {
    let head_text: String = text.chars().take(head as usize).collect();
    let tail_start = chars.saturating_sub(tail).max(head);
    let tail_text: String = if tail_start < chars {
        // Walk from the end: the tail is short, the text may be huge.
        let mut t: Vec<char> = text
            .chars()
            .rev()
            .take((chars - tail_start) as usize)
            .collect();
        t.reverse();
        t.into_iter().collect()
    } else {
        String::new()
    };
    let mut n = format!(
        "[This {what} is too large to show here: {bytes} bytes ({chars} characters). It was saved whole as \"{id}\". \
         Read it in pages with read_tool_result {{\"id\": \"{id}\", \"offset\": 0, \"limit\": {MAX_PAGE_CHARS}}}.]\n\
         --- first {} characters ---\n{head_text}",
        head_text.chars().count()
    );
    if !tail_text.is_empty() {
        let omitted = tail_start - head_text.chars().count() as u64;
        n.push_str(&format!(
            "\n--- {omitted} characters omitted; last {} characters ---\n{tail_text}",
            tail_text.chars().count()
        ));
    }
    n
}

/// The reduce layer.
pub(crate) struct ReduceLayer {
    pub(crate) store: Arc<dyn ResultStore>,
    pub(crate) settings: ReductionSettings,
    /// The dispatch cap, used for the fallback text when the store fails (R9).
    pub(crate) fallback_chars: Option<u64>,
    pub(crate) events: Events,
}

impl Layer for ReduceLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let mut reply = match next.run(inv).await {
                Ok(reply) => reply,
                Err(err) => return Err(self.reduce_error(inv, err).await),
            };
            // R2: the output of the built-ins (the reader's pages, search results) is never
            // reduced again.
            if inv.builtin {
                return Ok(reply);
            }
            if let ToolOutput::Full(full) = &mut reply.output {
                let full = std::mem::take(full);
                return Ok(self.reduce_full(inv, reply, full).await);
            }
            // The text moves out of the reply (no copy of a large result); the reply's output
            // is replaced below by the notice or, if the store fails, the fallback.
            let text = match &mut reply.output {
                ToolOutput::Text(t) if t.len() as u64 > self.settings.max_result_bytes => {
                    std::mem::take(t)
                }
                ToolOutput::Parts(parts) => {
                    let joined = text_of(parts);
                    if joined.len() as u64 <= self.settings.max_result_bytes {
                        return Ok(reply);
                    }
                    joined
                }
                _ => return Ok(reply),
            };
            let (id, n) = match self.store_whole(inv, &text).await {
                Ok(saved) => saved,
                Err(why) => return Ok(self.fallback(inv, reply, text, &why)),
            };
            reply.chars = n.chars().count() as u64;
            reply.output = with_parts_of(&mut reply.output, n);
            reply.truncated = false;
            reply.result_id = Some(id);
            Ok(reply)
        })
    }
}

impl ReduceLayer {
    /// R10: a result with structured content, reduced as the module docs say.
    async fn reduce_full(&self, inv: &Invocation, mut reply: Reply, mut full: FullOutput) -> Reply {
        let limit = self.settings.max_result_bytes;
        let text = text_of(&full.content);
        let text_over = text.len() as u64 > limit;
        let json_over = full
            .structured
            .as_ref()
            .is_some_and(|s| json_bytes(s) > limit);
        if !text_over && !json_over {
            reply.output = ToolOutput::Full(full);
            return reply;
        }
        let doc = match &full.structured {
            Some(s) if json_over && !(text_over && repeats(&text, s)) => {
                let json = s.to_string();
                if text_over {
                    format!("{text}\n\n{STRUCTURED_HEADING}\n{json}")
                } else {
                    json
                }
            }
            _ => text,
        };
        let (id, notice) = match self.store_whole(inv, &doc).await {
            Ok(saved) => saved,
            Err(why) => return self.fallback_full(inv, reply, full, &doc, &why),
        };
        if json_over {
            full.structured = None;
        }
        if text_over {
            full.content.retain(|p| p.text_content().is_none());
            full.content.insert(0, ContentPart::text(notice));
        } else {
            full.content.push(ContentPart::text(notice));
        }
        reply.chars = text_chars(&full.content);
        reply.output = ToolOutput::Full(full);
        reply.truncated = false;
        reply.result_id = Some(id);
        reply
    }

    /// R9 for a result with structured content: the store failed; the content and the
    /// structured content are held to the fallback cap as the result cap holds them (G4, G9),
    /// and a last text part says so.
    fn fallback_full(
        &self,
        inv: &Invocation,
        mut reply: Reply,
        mut full: FullOutput,
        doc: &str,
        why: &str,
    ) -> Reply {
        self.report_store_failure(inv, why);
        let cap = self.fallback_cap();
        let (content, kept, cut) = cap_parts(std::mem::take(&mut full.content), Some(cap));
        full.content = content;
        let left_out = cap_structured(&mut full, Some(cap));
        full.content.push(ContentPart::text(format!(
            "[The full output ({} characters) could not be saved for reading later: {why}. {}]",
            doc.chars().count(),
            if cut || left_out {
                "Only part of it is shown."
            } else {
                "All of it is shown."
            }
        )));
        reply.chars = kept;
        reply.truncated = cut || left_out;
        reply.output = ToolOutput::Full(full);
        reply
    }

    /// The most characters shown when the store failed (R9).
    fn fallback_cap(&self) -> u64 {
        self.fallback_chars
            .unwrap_or(self.settings.preview_head_chars + self.settings.preview_tail_chars)
            .max(1)
    }

    /// Logs a failed offload and emits its `error` event (R9).
    fn report_store_failure(&self, inv: &Invocation, why: &str) {
        tracing::error!(tool = %inv.tool_name, "could not offload a large result: {why}");
        if self.events.active() {
            let mut ev = Event::new(EventKind::Start, inv);
            ev.kind = EventKind::Error {
                message: format!("could not save the full output of {}: {why}", inv.tool_name),
                kind: "store_error",
            };
            self.events.emit(&ev);
        }
    }

    /// G3: an error whose text is over the threshold keeps a notice in its place; the text is
    /// stored whole (or, if the store fails, cut as in R9).
    async fn reduce_error(&self, inv: &mut Invocation, mut err: CallError) -> CallError {
        let text = match err.text_mut() {
            Some(t) if t.len() as u64 > self.settings.max_result_bytes => std::mem::take(t),
            _ => return err,
        };
        let replacement = match self.store_whole(inv, &text).await {
            Ok((id, notice)) => {
                inv.error_sizing.result_id = Some(id);
                notice
            }
            Err(why) => {
                let mut reply =
                    self.fallback(inv, Reply::new(ToolOutput::Text(String::new())), text, &why);
                inv.error_sizing.truncated = reply.truncated;
                match std::mem::replace(&mut reply.output, ToolOutput::Text(String::new())) {
                    ToolOutput::Text(t) => t,
                    _ => String::new(),
                }
            }
        };
        if let Some(t) = err.text_mut() {
            *t = replacement;
        }
        err
    }

    /// Stores `text` whole under a fresh id in the call's session (R1, R4): `Ok((id, notice))`
    /// with the notice that replaces it, `Err(why)` when the store failed or did not answer in
    /// time (the caller falls back, R9).
    async fn store_whole(&self, inv: &Invocation, text: &str) -> Result<(String, String), String> {
        let new = NewResult::new(inv.session.clone()).with_tool(inv.tool_name.clone());
        let id = new.id.to_string();
        if let Some(why) = self.save(new, text).await {
            return Err(why);
        }
        inv.offloaded_bytes
            .fetch_add(text.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let notice = notice(
            inv.kind.result_noun(),
            &id,
            text,
            text.len() as u64,
            text.chars().count() as u64,
            self.settings.preview_head_chars,
            self.settings.preview_tail_chars,
        );
        Ok((id, notice))
    }

    /// Saves a text; `Some(why)` when the store failed or did not answer in time.
    async fn save(&self, new: NewResult, text: &str) -> Option<String> {
        let span = stage_span("offload");
        span.record(
            "toolgate.bytes",
            crate::guard::span::signed(text.len() as u64),
        );
        let saving = tokio::time::timeout(STORE_TIMEOUT, self.store.save(new, text));
        match saving.instrument(span).await {
            Ok(Ok(_meta)) => None,
            Ok(Err(e)) => Some(crate::error::Chain(&e).to_string()),
            Err(_) => Some(format!(
                "the store did not answer within {}s",
                STORE_TIMEOUT.as_secs()
            )),
        }
    }

    /// R9: the store failed; keep what fits and say so.
    fn fallback(&self, inv: &Invocation, mut reply: Reply, mut text: String, why: &str) -> Reply {
        self.report_store_failure(inv, why);
        let total = text.chars().count();
        let cap = self.fallback_cap();
        let (kept, cut) = cap_text(&mut text, Some(cap));
        text.push_str(&format!(
            "\n[The full output ({total} characters) could not be saved for reading later: {why}. \
             {} shown.]",
            if cut {
                format!("Only the first {kept} characters are")
            } else {
                "All of it is".to_string()
            }
        ));
        reply.chars = kept;
        reply.truncated = cut;
        reply.output = with_parts_of(&mut reply.output, text);
        reply
    }
}

/// The line between the text and the structured content's JSON in a document that holds both.
const STRUCTURED_HEADING: &str = "--- structured content (JSON) ---";

/// `text`, followed by the parts of `output` that have no text (images, audio, binary
/// resources, links) when it had any: those are never dropped.
fn with_parts_of(output: &mut ToolOutput, text: String) -> ToolOutput {
    match std::mem::replace(output, ToolOutput::Text(String::new())) {
        ToolOutput::Parts(parts) => {
            let mut kept: Vec<ContentPart> = parts
                .into_iter()
                .filter(|p| p.text_content().is_none())
                .collect();
            kept.insert(0, ContentPart::text(text));
            ToolOutput::Parts(kept)
        }
        _ => ToolOutput::Text(text),
    }
}

/// The text of parts as one document: text parts and embedded text resources, in order.
fn text_of(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(ContentPart::text_content)
        .collect::<Vec<_>>()
        .join("")
}

/// Characters of text in `parts`.
fn text_chars(parts: &[ContentPart]) -> u64 {
    parts
        .iter()
        .filter_map(ContentPart::text_content)
        .map(|t| t.chars().count() as u64)
        .sum()
}

/// Whether `text` is the JSON of `structured` (MCP servers repeat it in a text part).
fn repeats(text: &str, structured: &serde_json::Value) -> bool {
    serde_json::from_str::<serde_json::Value>(text.trim()).is_ok_and(|v| &v == structured)
}
