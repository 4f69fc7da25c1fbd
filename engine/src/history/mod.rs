//! The conversation history: message types (chat-completions shape) and what happens to the
//! history before each model request (repair, P1-P2).

pub mod message;
pub mod repair;

pub use message::{FunctionCall, Message, ToolCall, content_json};
pub use repair::{RepairReport, repair};
