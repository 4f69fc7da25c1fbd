//! Secret masking (`redact:`): secrets in a result, or in a failure's text, are replaced by
//! `[REDACTED:<name>]` before anything outside this layer sees them.
//!
//! The layer runs inside the result cap and the offload (see `builder.rs`), so the cap's cut,
//! the offload's preview and the stored whole result (which `read_tool_result` pages) are all
//! made from masked text, and so is what the after hook and the events see. To see a secret
//! that straddles the cap whole, it asks the tool for [`STRADDLE_CHARS`] characters beyond
//! what the cap keeps, and reads streams itself up to that bound.
//!
//! The patterns are the `regex` crate's (linear in the text, whatever the pattern), each
//! bounded in size at load, so a huge result is scanned in time proportional to its length.
//! Each call's count of masks is its outcome's `redactions`, in events and `call --json`.
//!
//! Everything of a result a client or a model reads is masked: text parts, the text of embedded
//! resources, every string of the structured content and of the result's `_meta`, and every
//! string a part carries besides its content (a link's description, annotations, `_meta`).
//! Base64 data (images, audio, binary resources) is not text and is left alone.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use regex::{Captures, Regex};
use serde_json::Value;
use toolgate_policy::{BuiltinSecret, RedactSettings, SecretRegex};

use super::result_cap::read_stream;
use crate::call::{CallResult, Invocation};
use crate::guard::{Layer, Next};
use crate::tool::{BoxFuture, ContentPart, ProgressFn, ToolOutput};

/// Characters read beyond the cap, so that a secret cut by the cap is still seen (and masked)
/// whole: more than any built-in shape but an unusually long private key block.
pub(crate) const STRADDLE_CHARS: u64 = 16 * 1024;

/// One compiled pattern and the name its masks show.
struct Pattern {
    name: String,
    regex: Regex,
    /// Whether the expression has a group named `secret` (only it is masked).
    has_secret_group: bool,
}

/// The masking layer: the built-in patterns left on, then the policy's.
pub(crate) struct RedactLayer {
    /// Shared with the progress callbacks of calls in flight, which mask each message.
    patterns: Arc<[Pattern]>,
}

impl RedactLayer {
    /// The layer for `settings`, or `None` when it would mask nothing.
    pub(crate) fn new(settings: &RedactSettings) -> Option<Self> {
        let mut patterns = Vec::new();
        if settings.builtin {
            for b in BuiltinSecret::ALL {
                if settings.disable.contains(&b) {
                    continue;
                }
                // The built-ins are constants that a unit test compiles; one that did not would
                // be left out rather than fail every call.
                match SecretRegex::new(b.pattern()) {
                    Ok(r) => patterns.push(Pattern::new(b.name().to_owned(), r.0)),
                    Err(e) => tracing::error!(pattern = b.name(), "built-in pattern: {e}"),
                }
            }
        }
        for p in &settings.patterns {
            patterns.push(Pattern::new(p.name.clone(), p.regex.0.clone()));
        }
        (!patterns.is_empty()).then(|| RedactLayer {
            patterns: patterns.into(),
        })
    }

    /// Masks a part's text and the strings it carries besides; returns the number of masks.
    fn mask_part(&self, part: &mut ContentPart) -> u64 {
        let mut count = part.text_content_mut().map_or(0, |t| self.mask(t));
        for value in part.extra_mut().values_mut() {
            count += self.mask_value(value);
        }
        count
    }

    /// Masks every string in `value` (object keys are names, not data, and stay); returns the
    /// number of masks.
    fn mask_value(&self, value: &mut Value) -> u64 {
        match value {
            Value::String(s) => self.mask(s),
            Value::Array(items) => items.iter_mut().map(|v| self.mask_value(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.mask_value(v)).sum(),
            _ => 0,
        }
    }

    /// Masks `text` in place; returns the number of masks.
    pub(crate) fn mask(&self, text: &mut String) -> u64 {
        mask_with(&self.patterns, text)
    }

    /// The call's progress callback, masking each message before it reaches the client; the
    /// masks are added to `counted`.
    fn masked_progress(&self, inner: ProgressFn, counted: Arc<AtomicU64>) -> ProgressFn {
        let patterns = Arc::clone(&self.patterns);
        Arc::new(move |message: &str| {
            let mut text = message.to_owned();
            let n = mask_with(&patterns, &mut text);
            if n > 0 {
                counted.fetch_add(n, Ordering::Relaxed);
            }
            inner(&text)
        })
    }
}

/// Masks `text` in place with `patterns`, in order; returns the number of masks.
fn mask_with(patterns: &[Pattern], text: &mut String) -> u64 {
    let mut count = 0u64;
    for p in patterns {
        let replaced = p.regex.replace_all(text, |caps: &Captures<'_>| {
            count += 1;
            p.replacement(caps)
        });
        if let Cow::Owned(new) = replaced {
            *text = new;
        }
    }
    count
}

impl Pattern {
    fn new(name: String, regex: Regex) -> Self {
        let has_secret_group = regex.capture_names().any(|n| n == Some("secret"));
        Pattern {
            name,
            regex,
            has_secret_group,
        }
    }

    /// What replaces one match: the mask, with the text around the `secret` group kept.
    fn replacement(&self, caps: &Captures<'_>) -> String {
        let mask = format!("[REDACTED:{}]", self.name);
        let whole = caps.get(0).map_or("", |m| m.as_str());
        match (self.has_secret_group, caps.name("secret"), caps.get(0)) {
            (true, Some(secret), Some(all)) => {
                let start = secret.start() - all.start();
                let end = secret.end() - all.start();
                format!("{}{mask}{}", &whole[..start], &whole[end..])
            }
            _ => mask,
        }
    }
}

impl Layer for RedactLayer {
    fn call<'a>(&'a self, inv: &'a mut Invocation, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let keep = inv.keep_chars.map(|k| k.saturating_add(STRADDLE_CHARS));
            inv.keep_chars = keep;
            // Progress messages reach the client as the tool sends them: masked one by one.
            let in_progress = Arc::new(AtomicU64::new(0));
            if let Some(inner) = inv.progress.take() {
                inv.progress = Some(self.masked_progress(inner, Arc::clone(&in_progress)));
            }
            let result = next.run(inv).await;
            let mut count = in_progress.load(Ordering::Relaxed);
            let result = match result {
                Ok(mut reply) => {
                    let output =
                        std::mem::replace(&mut reply.output, ToolOutput::Text(String::new()));
                    reply.output = match output {
                        ToolOutput::Text(mut t) => {
                            count += self.mask(&mut t);
                            ToolOutput::Text(t)
                        }
                        ToolOutput::Parts(mut parts) => {
                            for part in &mut parts {
                                count += self.mask_part(part);
                            }
                            ToolOutput::Parts(parts)
                        }
                        ToolOutput::Full(mut full) => {
                            for part in &mut full.content {
                                count += self.mask_part(part);
                            }
                            if let Some(structured) = &mut full.structured {
                                count += self.mask_value(structured);
                            }
                            for value in full.meta.iter_mut().flat_map(|m| m.values_mut()) {
                                count += self.mask_value(value);
                            }
                            ToolOutput::Full(full)
                        }
                        ToolOutput::Stream(stream) => {
                            let (mut t, _, _) = read_stream(stream, keep, &inv.tool_name).await?;
                            count += self.mask(&mut t);
                            ToolOutput::Text(t)
                        }
                    };
                    Ok(reply)
                }
                Err(mut err) => {
                    if let Some(text) = err.text_mut() {
                        count += self.mask(text);
                    }
                    Err(err)
                }
            };
            inv.redactions += count;
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer() -> RedactLayer {
        RedactLayer::new(&RedactSettings::default()).expect("built-ins are on")
    }

    fn masked(text: &str) -> (String, u64) {
        let mut t = text.to_owned();
        let n = layer().mask(&mut t);
        (t, n)
    }

    #[test]
    fn each_builtin_shape_is_masked_by_its_name() {
        let cases = [
            (
                "key AKIAIOSFODNN7EXAMPLE here",
                "key [REDACTED:aws_access_key_id] here",
            ),
            (
                "tok ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
                "tok [REDACTED:github_token] end",
            ),
            ("xoxb-123456789012-abcdefABCDEF", "[REDACTED:slack_token]"),
            (
                "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r",
                "Bearer [REDACTED:jwt]",
            ),
            (
                "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb",
                "a\n[REDACTED:private_key]\nb",
            ),
            (
                "password=hunter2 next",
                "password=[REDACTED:key_value] next",
            ),
            (
                r#"{"api_key": "s3cr3t"}"#,
                r#"{"api_key": "[REDACTED:key_value]"}"#,
            ),
        ];
        for (input, want) in cases {
            let (got, n) = masked(input);
            assert_eq!(got, want, "{input}");
            assert_eq!(n, 1, "{input}");
        }
    }

    #[test]
    fn an_unterminated_private_key_block_is_masked_to_the_end() {
        let (got, _) = masked("x -----BEGIN PRIVATE KEY-----\nMIIE\nrest");
        assert_eq!(got, "x [REDACTED:private_key]");
    }

    #[test]
    fn a_mask_is_not_masked_again() {
        let (once, _) = masked("token=ghp_0123456789abcdefghijABCDEFGHIJ012345");
        let (twice, n) = masked(&once);
        assert_eq!(once, twice);
        assert_eq!(n, 0, "{once}");
    }

    #[test]
    fn structured_content_and_the_strings_beside_a_part_are_masked_too() {
        let mut structured = serde_json::json!({"rows": ["password=hunter2"], "n": 1});
        assert_eq!(layer().mask_value(&mut structured), 1);
        assert_eq!(
            structured,
            serde_json::json!({"rows": ["password=[REDACTED:key_value]"], "n": 1})
        );
        let mut link = ContentPart::ResourceLink {
            uri: "file:///a".into(),
            name: "a".into(),
            extra:
                serde_json::json!({"description": "token ghp_0123456789abcdefghijABCDEFGHIJ012345"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
        };
        assert_eq!(layer().mask_part(&mut link), 1);
        assert_eq!(
            link.extra_mut()["description"],
            "token [REDACTED:github_token]"
        );
    }

    #[test]
    fn text_without_secrets_is_left_as_it_is() {
        assert_eq!(
            masked("hello world, tokens are fine"),
            ("hello world, tokens are fine".to_owned(), 0)
        );
    }
}
