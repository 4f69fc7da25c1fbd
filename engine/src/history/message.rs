//! Chat-completions messages (the OpenAI shape), as `toolgate run` reads and writes them.
//!
//! Fields this crate does not know are kept in `extra` and written back unchanged, so a history
//! passes through toolgate without losing anything.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::guard::{Content, Outcome};
use crate::tool::ContentPart;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: Value,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Developer {
        content: Value,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    User {
        content: Value,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "Value::is_null")]
        content: Value,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Tool {
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A string, or a list of parts.
        content: Value,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
}

impl Message {
    /// A plain assistant message with tool calls.
    pub fn assistant_calls(calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: Value::Null,
            tool_calls: calls,
            extra: Map::new(),
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            content: Value::String(text.into()),
            extra: Map::new(),
        }
    }

    pub fn tool(call_id: impl Into<String>, name: Option<String>, content: Value) -> Self {
        Message::Tool {
            tool_call_id: call_id.into(),
            name,
            content,
            extra: Map::new(),
        }
    }

    /// The tool message that answers a call with this outcome.
    pub fn from_outcome(o: &Outcome) -> Self {
        Message::tool(
            o.call_id.clone(),
            Some(o.model_name.clone()),
            content_json(&o.content),
        )
    }

    pub fn role(&self) -> &'static str {
        match self {
            Message::System { .. } => "system",
            Message::Developer { .. } => "developer",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
        }
    }
}

/// Tool-message content in the chat-completions shape: a string, or parts where images are
/// `{"type":"image_url","image_url":{"url":"data:<mime>;base64,<data>"}}`.
pub fn content_json(c: &Content) -> Value {
    match c {
        Content::Text(t) => Value::String(t.clone()),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text { text } => serde_json::json!({"type": "text", "text": text}),
                    ContentPart::Image { mime_type, data } => serde_json::json!({
                        "type": "image_url",
                        "image_url": {"url": format!("data:{mime_type};base64,{data}")}
                    }),
                })
                .collect(),
        ),
    }
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_type() -> String {
    "function".into()
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
                extra: Map::new(),
            },
            extra: Map::new(),
        }
    }
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The JSON arguments as a string. Some providers send an object; it is read as its JSON
    /// text.
    #[serde(default, deserialize_with = "string_or_json")]
    pub arguments: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn string_or_json<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}
