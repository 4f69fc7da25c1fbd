//! What a tool returns ([`ToolOutput`]) or fails with ([`ToolError`]).

use std::fmt;

use super::base64::encode_base64;
use crate::part::Part;

/// What a tool returns: text and image parts, in the order the model should see them, and
/// optionally a structured result ([`ToolOutput::with_structured`]) for MCP clients.
///
/// ```
/// use toolgate_plugin_api::{Part, ToolOutput};
///
/// let out = ToolOutput::text("Here is the chart:")
///     .with_image("image/png", &[0x89, b'P', b'N', b'G'])
///     .with_text("Sales doubled.");
/// assert_eq!(out.parts().len(), 3);
/// assert_eq!(out.parts()[1], Part::Image {
///     mime_type: "image/png".into(),
///     data_base64: "iVBORw==".into(),
/// });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    parts: Vec<Part>,
}

impl ToolOutput {
    /// An output with no parts yet.
    pub fn new() -> ToolOutput {
        ToolOutput::default()
    }

    /// An output made of one text part.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            parts: vec![Part::Text(text.into())],
        }
    }

    /// Appends a text part.
    pub fn with_text(mut self, text: impl Into<String>) -> ToolOutput {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Appends an image given as raw bytes; they are base64-encoded for you.
    pub fn with_image(mut self, mime_type: impl Into<String>, bytes: &[u8]) -> ToolOutput {
        self.parts.push(Part::Image {
            mime_type: mime_type.into(),
            data_base64: encode_base64(bytes),
        });
        self
    }

    /// Appends an image whose bytes are already base64-encoded (standard alphabet, padded).
    pub fn with_image_base64(
        mut self,
        mime_type: impl Into<String>,
        data_base64: impl Into<String>,
    ) -> ToolOutput {
        self.parts.push(Part::Image {
            mime_type: mime_type.into(),
            data_base64: data_base64.into(),
        });
        self
    }

    /// Sets the structured result (MCP's `structuredContent`): a JSON value, matching the
    /// tool's `output_schema` when it declares one ([`Tool::output_schema`](crate::Tool::output_schema)).
    /// A second call replaces the first. MCP clients get it beside the content; the model reads
    /// the content, so say the same in text too (or build the output with
    /// [`ToolOutput::structured`], which does).
    ///
    /// ```
    /// use toolgate_plugin_api::{json, Part, ToolOutput};
    ///
    /// let out = ToolOutput::text("21.5 °C").with_structured(json!({"celsius": 21.5}));
    /// assert_eq!(out.parts()[1], Part::Structured(json!({"celsius": 21.5})));
    /// ```
    pub fn with_structured(mut self, value: serde_json::Value) -> ToolOutput {
        self.parts.retain(|p| !matches!(p, Part::Structured(_)));
        self.parts.push(Part::Structured(value));
        self
    }

    /// An output whose structured result is `value` and whose text is that value's JSON, as
    /// MCP servers usually answer.
    pub fn structured(value: serde_json::Value) -> ToolOutput {
        ToolOutput::text(value.to_string()).with_structured(value)
    }

    /// Appends any part.
    pub fn push(&mut self, part: Part) {
        self.parts.push(part);
    }

    /// The parts, after `text` (what the tool emitted to a host that takes no chunks).
    pub(crate) fn after_text(self, text: String) -> Vec<Part> {
        if text.is_empty() {
            return self.parts;
        }
        let mut parts = Vec::with_capacity(self.parts.len() + 1);
        let mut rest = self.parts.into_iter().peekable();
        match rest.next_if(|p| matches!(p, Part::Text(_))) {
            // One text part, as if it had all been returned at once.
            Some(Part::Text(first)) => parts.push(Part::Text(text + &first)),
            _ => parts.push(Part::Text(text)),
        }
        parts.extend(rest);
        parts
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The parts, in order, by value.
    pub fn into_parts(self) -> Vec<Part> {
        self.parts
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> ToolOutput {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> ToolOutput {
        ToolOutput::text(text)
    }
}

/// A tool's failure: a message for the model, saying what went wrong and, where it can, what to
/// do instead.
///
/// Every `std::io::Error`, `String` and `&str` converts into one, so `?` works on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
        }
    }

    /// The failure of a call that stopped because the host cancelled it. Its message is
    /// `cancelled`.
    pub fn cancelled() -> ToolError {
        ToolError::new("cancelled")
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, by value.
    pub(super) fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> ToolError {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> ToolError {
        ToolError::new(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> ToolError {
        ToolError::new(err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_output_keeps_parts_in_the_order_they_were_added() {
        let out = ToolOutput::text("a")
            .with_image_base64("image/png", "QQ==")
            .with_text("b");
        assert_eq!(
            out.into_parts(),
            vec![
                Part::Text("a".into()),
                Part::Image {
                    mime_type: "image/png".into(),
                    data_base64: "QQ==".into()
                },
                Part::Text("b".into()),
            ]
        );
    }
}
