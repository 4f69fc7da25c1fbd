//! The conversation `toolgate run` and `toolgate prepare` read and write: a chat-completions
//! message list, either a bare JSON array or an object with a `messages` array (a request body).
//!
//! The conversation is written back as it came: the messages and the other fields of the object
//! are kept as the JSON they were read as (key order included, with serde_json's
//! `preserve_order`; `"content": null` included), and only what a command changes is new.

use serde_json::Value;
use toolgate::history::{Message, Turn};

use crate::error::{CliError, JsonError, JsonStage};

/// A parsed conversation, remembering its outer shape so it is written back the same way.
#[derive(Debug)]
pub struct Conversation {
    /// The messages, typed.
    pub messages: Vec<Message>,
    /// The same messages as the JSON they were read as (kept in step with `messages`).
    raw: Vec<Value>,
    /// `Some(object)` when the input was an object: all its fields, `messages` in its place.
    envelope: Option<serde_json::Map<String, Value>>,
}

impl Conversation {
    /// Parses `text`; `name` is how errors refer to the input (a path, or `<stdin>`).
    pub fn parse(text: &str, name: &str) -> Result<Conversation, CliError> {
        // First the syntax, then the shape; both errors carry serde_json's line and column.
        let value: Value =
            serde_json::from_str(text).map_err(|e| json_error(name, e, JsonStage::Syntax))?;
        match value {
            Value::Array(raw) => {
                let messages: Vec<Message> = serde_json::from_str(text)
                    .map_err(|e| json_error(name, e, JsonStage::Messages))?;
                Ok(Conversation {
                    messages,
                    raw,
                    envelope: None,
                })
            }
            Value::Object(mut object) => {
                let raw = match object.get_mut("messages") {
                    None => {
                        return Err(CliError::NoMessages { input: name.into() });
                    }
                    Some(Value::Array(raw)) => std::mem::take(raw),
                    // Not an array: the typed parse below says where and why.
                    Some(_) => Vec::new(),
                };
                #[derive(serde::Deserialize)]
                struct Envelope {
                    messages: Vec<Message>,
                }
                let Envelope { messages } = serde_json::from_str(text)
                    .map_err(|e| json_error(name, e, JsonStage::Messages))?;
                Ok(Conversation {
                    messages,
                    raw,
                    envelope: Some(object),
                })
            }
            other => Err(CliError::NotAConversation {
                input: name.into(),
                found: kind_of(&other),
            }),
        }
    }

    /// Adds a turn's answers ([`toolgate::Engine::run_turn`]): the messages as read stay as they
    /// are, but for the call ids the turn made unique.
    pub fn apply(&mut self, turn: &Turn) {
        let p = &turn.pending;
        if let Some(calls) = p
            .assistant
            .and_then(|i| self.raw.get_mut(i))
            .and_then(|m| m.get_mut("tool_calls"))
        {
            for (k, id) in &p.renamed_calls {
                if let Some(call) = calls.get_mut(*k).and_then(Value::as_object_mut) {
                    call.insert("id".into(), Value::String(id.clone()));
                }
            }
        }
        for (i, id) in &p.renamed_answers {
            if let Some(m) = self.raw.get_mut(*i).and_then(Value::as_object_mut) {
                m.insert("tool_call_id".into(), Value::String(id.clone()));
            }
        }
        let at = p.insert_at.min(self.raw.len());
        self.raw.splice(
            at..at,
            turn.messages
                .iter()
                .map(|m| serde_json::to_value(m).unwrap_or(Value::Null)),
        );
        turn.apply(&mut self.messages);
    }

    /// Replaces every message (`prepare`'s new history).
    pub fn replace_messages(&mut self, messages: Vec<Message>) {
        self.raw = messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
            .collect();
        self.messages = messages;
    }

    /// The conversation as JSON, in the shape it was read in.
    pub fn into_json(self) -> Value {
        let messages = Value::Array(self.raw);
        match self.envelope {
            None => messages,
            Some(mut object) => {
                // An existing key keeps its place.
                object.insert("messages".into(), messages);
                Value::Object(object)
            }
        }
    }
}

fn json_error(name: &str, error: serde_json::Error, stage: JsonStage) -> CliError {
    CliError::Json(JsonError {
        input: name.into(),
        stage,
        error,
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_array_is_written_back_as_an_array() {
        let c = Conversation::parse(r#"[{"role":"user","content":"hi"}]"#, "x").unwrap();
        assert_eq!(c.messages.len(), 1);
        assert!(c.into_json().is_array());
    }

    #[test]
    fn an_object_keeps_its_other_fields() {
        let c = Conversation::parse(
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
            "x",
        )
        .unwrap();
        let json = c.into_json();
        assert_eq!(json["model"], "m");
        assert_eq!(json["messages"][0]["content"], "hi");
    }

    #[test]
    fn a_syntax_error_names_the_line_and_column() {
        let err = Conversation::parse("[\n  {\"role\": }\n]", "conv.json").unwrap_err();
        assert!(
            err.report()
                .starts_with("error: conv.json:2:12: invalid JSON: "),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_role_names_its_position() {
        let err =
            Conversation::parse("[{\"role\": \"robot\", \"content\": \"x\"}]", "c").unwrap_err();
        let text = err.report();
        assert!(text.starts_with("error: c:1:"), "{text}");
        assert!(text.contains("robot"), "{text}");
    }

    #[test]
    fn an_object_without_messages_is_refused() {
        let err = Conversation::parse(r#"{"model":"m"}"#, "c").unwrap_err();
        assert!(err.to_string().contains("no \"messages\" field"), "{err}");
    }
}
