//! The conversation history: message types (chat-completions shape) and what happens to the
//! history before each model request: dangling-call repair (P1-P2) and, with reduction on, the
//! offload of older tool rounds once the token budget is reached (R5-R6). See
//! [`crate::Engine::prepare`]. Which calls wait for an answer and where answers go: [`turn`],
//! used by [`crate::Engine::run_turn`].

pub mod budget;
pub mod message;
pub mod repair;
pub mod turn;

pub use budget::{ByteEstimator, OffloadReport, TokenEstimator};
pub use message::{FunctionCall, Message, ToolCall, answer_messages, content_json};
pub use repair::{RepairReport, repair, repair_for};
pub use turn::{Pending, Turn, pending, unique_call_ids};

/// A history ready to send, and what was done to it.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub messages: Vec<Message>,
    pub repair: RepairReport,
    pub offload: OffloadReport,
}
