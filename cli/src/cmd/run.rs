//! `toolgate run`: run the waiting tool calls of a conversation's last assistant message and
//! print the conversation with their answers in place.

use crate::app::{load_engine, read_input, session};
use crate::args::RunArgs;
use crate::conversation::Conversation;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

pub async fn run_turn(args: RunArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (text, input_name) = read_input(args.file.as_deref())?;
    let mut conversation = Conversation::parse(&text, &input_name)?;
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let session = session(&engine, args.session.as_deref())?;

    let turn = engine
        .run_turn(&session, &conversation.messages)
        .await
        .map_err(CliError::TurnAborted)?;
    if turn.pending.calls.is_empty() {
        tracing::warn!(
            "nothing to run: the last assistant message has no tool calls waiting for an answer"
        );
    } else {
        tracing::info!(
            calls = turn.pending.calls.len(),
            renamed_call_ids = turn.pending.renamed_calls.len(),
            "turn finished"
        );
    }
    conversation.apply(&turn);
    out.json(&conversation.into_json(), !args.compact)?;
    Ok(EXIT_OK)
}
