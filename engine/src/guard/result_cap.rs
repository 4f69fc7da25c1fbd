//! Result caps by Unicode characters (G3-G5).
//!
//! * Text: at most `max_result_chars` characters are kept; a cut result gets
//!   [`TRUNCATION_MARKER`] appended. The outcome reports the characters kept (the marker is not
//!   counted) and whether the result was cut.
//! * Parts: the cap counts across text parts; image parts are always kept; the text part where
//!   the cap is reached gets the marker and later text parts are dropped.
//! * Streams: chunks are read under the call's timeout; the cap counts across chunks; the chunk
//!   where the cap is reached gets the marker and the stream is dropped (closed) at once.
//! * Errors (G3): the whole text the model reads (`Error: ...`) is held to the same cap; the
//!   error's free text (the tool's message) is cut and marked, its kind stays.

use std::panic::AssertUnwindSafe;

use futures::{FutureExt, StreamExt};

use crate::call::{CallResult, Invocation, TRUNCATION_MARKER, error_text, panic_message};
use crate::error::CallError;
use crate::guard::{Layer, Next};
use crate::tool::{BoxFuture, ContentPart, ToolError, ToolOutput};

/// Caps `text` at `cap` characters (`None` = no cap). Returns the kept characters and whether
/// it was cut; a cut text gets the marker.
pub(crate) fn cap_text(text: &mut String, cap: Option<u64>) -> (u64, bool) {
    let Some(cap) = cap else {
        return (text.chars().count() as u64, false);
    };
    // Fast path: a text of at most `cap` bytes has at most `cap` characters.
    if text.len() as u64 <= cap {
        return (text.chars().count() as u64, false);
    }
    match text.char_indices().nth(cap as usize) {
        None => (text.chars().count() as u64, false),
        Some((cut, _)) => {
            text.truncate(cut);
            text.push_str(TRUNCATION_MARKER);
            (cap, true)
        }
    }
}

/// Caps parts as described in the module docs.
pub(crate) fn cap_parts(
    parts: Vec<ContentPart>,
    cap: Option<u64>,
) -> (Vec<ContentPart>, u64, bool) {
    let mut kept = 0u64;
    let mut cut = false;
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            ContentPart::Image { .. } => out.push(part),
            ContentPart::Text { mut text } => {
                if cut {
                    continue;
                }
                let room = cap.map(|c| c - kept);
                let (n, was_cut) = cap_text(&mut text, room);
                kept += n;
                cut = was_cut;
                out.push(ContentPart::Text { text });
            }
        }
    }
    (out, kept, cut)
}

/// The limit layer: collects streams and applies the character cap. When reduction is on, the
/// cap is off (R2) and streams are collected whole.
pub(crate) struct ResultCapLayer {
    /// Reduction owns result sizing: no cap.
    pub(crate) reduction: bool,
}

impl Layer for ResultCapLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let cap = if self.reduction {
                None
            } else {
                inv.settings.max_result_chars.limit()
            };
            // One character over the cap tells this layer the result was cut; the rest is
            // dropped as it is received instead of being copied and cut here.
            inv.keep_chars = cap.map(|c| c.saturating_add(1));
            let mut reply = match next.run(inv).await {
                Ok(reply) => reply,
                Err(err) => return Err(cap_error(err, cap, inv)),
            };
            let output = std::mem::replace(&mut reply.output, ToolOutput::Text(String::new()));
            let (output, chars, truncated) = match output {
                ToolOutput::Text(mut t) => {
                    let (n, cut) = cap_text(&mut t, cap);
                    (ToolOutput::Text(t), n, cut)
                }
                ToolOutput::Parts(p) => {
                    let (p, n, cut) = cap_parts(p, cap);
                    (ToolOutput::Parts(p), n, cut)
                }
                ToolOutput::Stream(stream) => {
                    let (t, n, cut) = read_stream(stream, cap, &inv.tool_name).await?;
                    (ToolOutput::Text(t), n, cut)
                }
            };
            reply.output = output;
            reply.chars = chars;
            reply.truncated = reply.truncated || truncated;
            Ok(reply)
        })
    }
}

/// More than the fixed words of any error message take, in bytes.
const FIXED_WORDS_BYTES: u64 = 512;

/// Holds the text the model reads for `err` to `cap` characters by cutting the error's free
/// text; the fixed words around it are kept.
fn cap_error(mut err: CallError, cap: Option<u64>, inv: &mut Invocation) -> CallError {
    let Some(cap) = cap else { return err };
    // Fast path: the fixed words around the free text are short (a tool name, a few words),
    // so a free text well under the cap needs no counting.
    let Some(text) = err.text_mut() else {
        return err;
    };
    if (text.len() as u64).saturating_add(FIXED_WORDS_BYTES) <= cap {
        return err;
    }
    let text_chars = text.chars().count() as u64;
    let all_chars = error_text(&err).chars().count() as u64;
    if all_chars <= cap {
        return err;
    }
    let room = cap.saturating_sub(all_chars - text_chars);
    if let Some(text) = err.text_mut() {
        let (_, cut) = cap_text(text, Some(room));
        inv.error_sizing.truncated = cut;
    }
    err
}

pub(super) async fn read_stream(
    mut stream: futures::stream::BoxStream<'static, Result<String, ToolError>>,
    cap: Option<u64>,
    tool: &str,
) -> Result<(String, u64, bool), CallError> {
    let mut out = String::new();
    let mut kept = 0u64;
    loop {
        let item = AssertUnwindSafe(stream.next()).catch_unwind().await;
        let chunk = match item {
            Ok(None) => return Ok((out, kept, false)),
            Ok(Some(Ok(chunk))) => chunk,
            Ok(Some(Err(e))) => {
                return Err(CallError::ToolFailed {
                    tool: tool.to_string(),
                    message: e.message,
                });
            }
            Err(panic) => {
                return Err(CallError::ToolExecutionPanic {
                    tool: tool.to_string(),
                    message: format!("while reading its stream: {}", panic_message(&*panic)),
                });
            }
        };
        let mut chunk = chunk;
        // With no room left, a non-empty chunk is cut to nothing but the marker.
        let (n, cut) = cap_text(&mut chunk, cap.map(|c| c - kept));
        kept += n;
        out.push_str(&chunk);
        if cut {
            // Dropping the stream closes the source.
            drop(stream);
            return Ok((out, kept, true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_counts_characters_not_bytes() {
        let mut t = "ééééé".to_string();
        assert_eq!(cap_text(&mut t, Some(3)), (3, true));
        assert_eq!(t, format!("ééé{TRUNCATION_MARKER}"));
    }

    #[test]
    fn text_at_the_cap_is_not_cut() {
        let mut t = "abc".to_string();
        assert_eq!(cap_text(&mut t, Some(3)), (3, false));
        assert_eq!(t, "abc");
    }

    #[test]
    fn no_cap_keeps_everything() {
        let mut t = "x".repeat(10);
        assert_eq!(cap_text(&mut t, None), (10, false));
    }
}
