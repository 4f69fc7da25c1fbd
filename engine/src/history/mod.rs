//! The conversation history: message types (chat-completions shape) and what happens to the
//! history before each model request: dangling-call repair (P1-P2) and, with reduction on, the
//! offload of older tool rounds once the token budget is reached (R5-R6). See
//! [`crate::Engine::prepare`]. Which calls wait for an answer and where answers go ([`pending`],
//! [`Turn`]) is used by [`crate::Engine::run_turn`].
//!
//! One file per concern: `message.rs` (the message types and tool messages for a provider),
//! `turn.rs` (pending calls, duplicate call ids), `repair.rs` (dangling calls, orphan answers),
//! `budget.rs` (the token estimate and the offload of older rounds).

mod budget;
mod message;
mod repair;
mod turn;

pub use budget::{ByteEstimator, IMAGE_TOKENS, OffloadReport, TokenEstimator};
pub use message::{
    FunctionCall, Message, ToolCall, answer_messages, content_json, model_content, part_as_text,
    tool_messages_carry_images,
};
pub use repair::{RepairReport, repair, repair_for};
pub use turn::{Pending, Turn, pending, unique_call_ids};

pub(crate) use budget::{Offload, offload_rounds};

/// A history ready to send, and what was done to it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The history to send.
    pub messages: Vec<Message>,
    /// What the repair did (P1).
    pub repair: RepairReport,
    /// What the offload of older rounds did (R5).
    pub offload: OffloadReport,
}
