//! The conversation history: message types (chat-completions shape).

pub mod message;

pub use message::{FunctionCall, Message, ToolCall, content_json};
