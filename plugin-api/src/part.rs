//! [`Part`]: one part of a tool's result, and its JSON form on the wire.

use serde::{Deserialize, Serialize};

/// One part of a tool's result.
///
/// On the wire (inside the ABI) a list of parts is a JSON array of
/// `{"type": "text", "text": "..."}`,
/// `{"type": "image", "mime_type": "image/png", "data": "<base64>"}` and (from the second JSON
/// revision of ABI 1 on) `{"type": "structured", "value": {...}}` objects. A host of the first
/// revision refuses a result with a structured part as invalid; a plugin that declares no
/// `output_schema` and returns no structured part works with every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text for the model.
    Text(String),
    /// An image: its MIME type (such as `image/png`) and its bytes in standard base64 with
    /// padding.
    Image {
        /// The MIME type, such as `image/png`.
        mime_type: String,
        /// The image bytes, base64-encoded (standard alphabet, padded).
        data_base64: String,
    },
    /// The structured result (MCP's `structuredContent`): any JSON value, usually an object
    /// matching the tool's `output_schema`. At most one per result; it is not shown to the
    /// model as such (MCP clients get it beside the content), so a tool usually repeats it as
    /// text too.
    Structured(serde_json::Value),
}

/// The wire form of a [`Part`], borrowed for writing.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePartRef<'a> {
    Text { text: &'a str },
    Image { mime_type: &'a str, data: &'a str },
    Structured { value: &'a serde_json::Value },
}

/// The wire form of a [`Part`], owned for reading.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart {
    Text { text: String },
    Image { mime_type: String, data: String },
    Structured { value: serde_json::Value },
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Text(text) => WirePartRef::Text { text }.serialize(serializer),
            Part::Image {
                mime_type,
                data_base64,
            } => WirePartRef::Image {
                mime_type,
                data: data_base64,
            }
            .serialize(serializer),
            Part::Structured(value) => WirePartRef::Structured { value }.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Part, D::Error> {
        Ok(match WirePart::deserialize(deserializer)? {
            WirePart::Text { text } => Part::Text(text),
            WirePart::Image { mime_type, data } => Part::Image {
                mime_type,
                data_base64: data,
            },
            WirePart::Structured { value } => Part::Structured(value),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_part_has_the_documented_wire_shape() {
        let json = serde_json::to_value(Part::Text("hi".into())).unwrap();
        assert_eq!(json, serde_json::json!({"type": "text", "text": "hi"}));
    }

    #[test]
    fn image_part_has_the_documented_wire_shape() {
        let part = Part::Image {
            mime_type: "image/png".into(),
            data_base64: "AAAA".into(),
        };
        let json = serde_json::to_value(&part).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "image", "mime_type": "image/png", "data": "AAAA"})
        );
        assert_eq!(serde_json::from_value::<Part>(json).unwrap(), part);
    }

    #[test]
    fn structured_part_has_the_documented_wire_shape() {
        let part = Part::Structured(serde_json::json!({"celsius": 21.5}));
        let json = serde_json::to_value(&part).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "structured", "value": {"celsius": 21.5}})
        );
        assert_eq!(serde_json::from_value::<Part>(json).unwrap(), part);
    }
}
