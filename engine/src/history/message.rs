//! Chat-completions messages (the OpenAI shape), as `toolgate run` reads and writes them.
//!
//! Fields this crate does not know are kept in `extra` and written back unchanged, so a history
//! passes through toolgate without losing anything.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use toolgate_policy::NameProfile;

use crate::call::{Content, Outcome};
use crate::tool::ContentPart;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// Instructions from the system.
    System {
        /// A string, or a list of parts.
        content: Value,
        /// Fields this crate does not know, kept as they came.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// Instructions from the developer (the newer name of `system`).
    Developer {
        /// A string, or a list of parts.
        content: Value,
        /// Fields this crate does not know, kept as they came.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// The user's message.
    User {
        /// A string, or a list of parts.
        content: Value,
        /// Fields this crate does not know, kept as they came.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// The model's answer, perhaps with tool calls.
    Assistant {
        /// `None` when the message has no `content` key; `Some(Value::Null)` for an explicit
        /// `"content": null`, which is written back as it came.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        content: Option<Value>,
        /// The tool calls, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Fields this crate does not know, kept as they came.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// The answer to one tool call.
    Tool {
        /// The id of the call it answers.
        tool_call_id: String,
        /// The tool's name as the model called it (not under the `openai` profile).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A string, or a list of parts.
        content: Value,
        /// Fields this crate does not know, kept as they came.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
}

impl Message {
    /// A plain assistant message with tool calls.
    pub fn assistant_calls(calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: Some(Value::Null),
            tool_calls: calls,
            extra: Map::new(),
        }
    }

    /// A user message with plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            content: Value::String(text.into()),
            extra: Map::new(),
        }
    }

    /// A tool message answering the call `call_id`.
    pub fn tool(call_id: impl Into<String>, name: Option<String>, content: Value) -> Self {
        Message::Tool {
            tool_call_id: call_id.into(),
            name,
            content,
            extra: Map::new(),
        }
    }

    /// The message's role, as written in the `role` key.
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
/// `{"type":"image_url","image_url":{"url":"data:<mime>;base64,<data>"}}`. Parts a tool message
/// cannot carry become text parts ([`part_as_text`]): nothing is dropped unsaid.
pub fn content_json(c: &Content) -> Value {
    match c {
        Content::Text(t) => Value::String(t.clone()),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|p| match p {
                    ContentPart::Image {
                        mime_type, data, ..
                    } => image_part(mime_type, data),
                    other => text_part(&part_as_text(other)),
                })
                .collect(),
        ),
    }
}

/// What a model provider is given for a part in a tool message, where only text and images go:
/// a text part's text; an embedded text resource's text after a line naming it; for audio, a
/// binary resource or a resource link, a line saying what it is and that it is not shown. An
/// image, which only some tool messages carry, is described the same way.
pub fn part_as_text(part: &ContentPart) -> String {
    match part {
        ContentPart::Text { text, .. } => text.clone(),
        ContentPart::Image {
            mime_type, data, ..
        } => format!(
            "[An image ({mime_type}, {} base64 characters) is not shown here.]",
            data.len()
        ),
        ContentPart::Audio {
            mime_type, data, ..
        } => format!(
            "[An audio clip ({mime_type}, {} base64 characters) is not shown: tool messages carry text and images only.]",
            data.len()
        ),
        ContentPart::Resource { resource, .. } => {
            let field = |key: &str| resource.get(key).and_then(Value::as_str);
            let uri = field("uri").unwrap_or("(no uri)");
            let mime = field("mimeType")
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            match (field("text"), field("blob")) {
                (Some(text), _) => format!("[resource {uri}{mime}]\n{text}"),
                (None, blob) => format!(
                    "[A binary resource {uri}{mime}, {} base64 characters, is not shown: tool messages carry text and images only.]",
                    blob.map_or(0, str::len)
                ),
            }
        }
        ContentPart::ResourceLink { uri, name, extra } => {
            match extra.get("description").and_then(Value::as_str) {
                Some(d) => format!("[resource link {name} <{uri}>: {d}]"),
                None => format!("[resource link {name} <{uri}>]"),
            }
        }
    }
}

/// The content a model is given for an outcome: its content, and after it the structured
/// content as JSON text when the content has no text of its own (MCP servers usually repeat
/// the structured content as text; one that does not still reaches the model).
pub fn model_content(outcome: &Outcome) -> std::borrow::Cow<'_, Content> {
    use std::borrow::Cow;
    let Some(structured) = &outcome.structured_content else {
        return Cow::Borrowed(&outcome.content);
    };
    let has_text = match &outcome.content {
        Content::Text(t) => !t.is_empty(),
        Content::Parts(parts) => parts.iter().any(|p| p.text_content().is_some()),
    };
    if has_text {
        return Cow::Borrowed(&outcome.content);
    }
    let mut parts = match &outcome.content {
        Content::Text(_) => Vec::new(),
        Content::Parts(parts) => parts.clone(),
    };
    parts.push(ContentPart::text(structured.to_string()));
    Cow::Owned(Content::Parts(parts))
}

fn text_part(text: &str) -> Value {
    serde_json::json!({"type": "text", "text": text})
}

fn image_part(mime_type: &str, data: &str) -> Value {
    serde_json::json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{mime_type};base64,{data}")}
    })
}

/// Whether tool messages of this provider may carry `name` and image parts. OpenAI's tool
/// messages have neither (`ChatCompletionToolMessageParam` is `{role, tool_call_id, content}`
/// with text parts only); the other profiles keep both.
pub fn tool_messages_carry_images(profile: NameProfile) -> bool {
    profile != NameProfile::Openai
}

/// The messages that answer a turn's outcomes, shaped for the provider `profile` (the policy's
/// `name_profile`): one tool message per outcome, in call order.
///
/// Under `openai` a tool message has no `name` and only text: each image of a result is replaced
/// by a text part saying where it went, and all the turn's images follow the tool messages in one
/// `user` message, each introduced by the call it came from. Under `mcp` and `anthropic` a tool
/// message has the model's name for the tool and its images as `image_url` parts.
pub fn answer_messages(outcomes: &[Outcome], profile: NameProfile) -> Vec<Message> {
    if tool_messages_carry_images(profile) {
        return outcomes
            .iter()
            .map(|o| {
                Message::tool(
                    o.call_id.clone(),
                    Some(o.model_name.clone()),
                    content_json(&model_content(o)),
                )
            })
            .collect();
    }
    let mut out = Vec::with_capacity(outcomes.len() + 1);
    let mut images: Vec<Value> = Vec::new();
    for o in outcomes {
        let content = match &*model_content(o) {
            Content::Text(t) => Value::String(t.clone()),
            Content::Parts(parts) => {
                let mut n = 0;
                let parts = parts
                    .iter()
                    .map(|p| match p {
                        ContentPart::Image {
                            mime_type, data, ..
                        } => {
                            n += 1;
                            images.push(text_part(&format!(
                                "Image {n} of the result of tool call {} ({}):",
                                o.call_id, o.model_name
                            )));
                            images.push(image_part(mime_type, data));
                            text_part(&format!(
                                "[Image {n} of this result is in the user message after the tool results.]"
                            ))
                        }
                        other => text_part(&part_as_text(other)),
                    })
                    .collect();
                Value::Array(parts)
            }
        };
        out.push(Message::tool(o.call_id.clone(), None, content));
    }
    if !images.is_empty() {
        out.push(Message::User {
            content: Value::Array(images),
            extra: Map::new(),
        });
    }
    out
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which its answer names.
    pub id: String,
    /// The `type` key: `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The tool called and its arguments.
    pub function: FunctionCall,
    /// Fields this crate does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_type() -> String {
    "function".into()
}

impl ToolCall {
    /// A function call `id` of the tool `name` with the JSON `arguments`.
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
    /// The name the model called.
    pub name: String,
    /// The JSON arguments as a string. Some providers send an object; it is read as its JSON
    /// text.
    #[serde(default, deserialize_with = "string_or_json")]
    pub arguments: String,
    /// Fields this crate does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A field that is present, even as `null` (absent fields take the `default`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn string_or_json<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}
