//! The conversation `toolgate run` reads and writes: a chat-completions message list, either a
//! bare JSON array or an object with a `messages` array (a request body). Other fields of the
//! object are written back unchanged.

use serde::Deserialize;
use serde_json::Value;
use toolgate::history::Message;

use crate::error::CliError;

/// A parsed conversation, remembering its outer shape so it is written back the same way.
#[derive(Debug)]
pub struct Conversation {
    pub messages: Vec<Message>,
    /// `Some(object)` when the input was an object: every field but `messages`.
    envelope: Option<serde_json::Map<String, Value>>,
}

#[derive(Deserialize)]
struct Envelope {
    messages: Vec<Message>,
}

impl Conversation {
    /// Parses `text`; `name` is how errors refer to the input (a path, or `<stdin>`).
    pub fn parse(text: &str, name: &str) -> Result<Conversation, CliError> {
        // First the syntax, then the shape; both errors carry serde_json's line and column.
        let value: Value = serde_json::from_str(text).map_err(|e| json_error(name, &e, ""))?;
        match value {
            Value::Array(_) => {
                let messages: Vec<Message> = serde_json::from_str(text)
                    .map_err(|e| json_error(name, &e, "not a valid message list: "))?;
                Ok(Conversation {
                    messages,
                    envelope: None,
                })
            }
            Value::Object(mut object) => {
                if !object.contains_key("messages") {
                    return Err(CliError::Input(format!(
                        "{name}: expected a JSON array of messages, or an object with a \
                         \"messages\" array; this object has no \"messages\" field"
                    )));
                }
                let Envelope { messages } = serde_json::from_str(text)
                    .map_err(|e| json_error(name, &e, "not a valid message list: "))?;
                object.remove("messages");
                Ok(Conversation {
                    messages,
                    envelope: Some(object),
                })
            }
            other => Err(CliError::Input(format!(
                "{name}: expected a JSON array of messages, or an object with a \"messages\" \
                 array, found {}",
                kind_of(&other)
            ))),
        }
    }

    /// The conversation as JSON, in the shape it was read in.
    pub fn to_json(&self) -> Value {
        let messages = serde_json::to_value(&self.messages).unwrap_or(Value::Null);
        match &self.envelope {
            None => messages,
            Some(object) => {
                let mut object = object.clone();
                object.insert("messages".into(), messages);
                Value::Object(object)
            }
        }
    }
}

/// `name:line:col: message`, with serde_json's own ` at line L column C` suffix removed.
fn json_error(name: &str, e: &serde_json::Error, what: &str) -> CliError {
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    let what = if what.is_empty() && e.is_eof() {
        "unexpected end of input: "
    } else if what.is_empty() {
        "invalid JSON: "
    } else {
        what
    };
    CliError::Input(format!(
        "{name}:{}:{}: {what}{message}",
        e.line(),
        e.column()
    ))
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
        assert!(c.to_json().is_array());
    }

    #[test]
    fn an_object_keeps_its_other_fields() {
        let c = Conversation::parse(
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
            "x",
        )
        .unwrap();
        let json = c.to_json();
        assert_eq!(json["model"], "m");
        assert_eq!(json["messages"][0]["content"], "hi");
    }

    #[test]
    fn a_syntax_error_names_the_line_and_column() {
        let err = Conversation::parse("[\n  {\"role\": }\n]", "conv.json").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("error: conv.json:2:12: invalid JSON: "),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_role_names_its_position() {
        let err =
            Conversation::parse("[{\"role\": \"robot\", \"content\": \"x\"}]", "c").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("error: c:1:"), "{text}");
        assert!(text.contains("robot"), "{text}");
    }

    #[test]
    fn an_object_without_messages_is_refused() {
        let err = Conversation::parse(r#"{"model":"m"}"#, "c").unwrap_err();
        assert!(err.to_string().contains("no \"messages\" field"), "{err}");
    }
}
