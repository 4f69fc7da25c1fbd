//! `toolgate run`: run the waiting tool calls of a conversation's last assistant message and
//! print the conversation with their answers in place.

use crate::app::{load_engine, read_input};
use crate::args::RunArgs;
use crate::conversation::Conversation;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;
use crate::stored_session::StoredSession;

pub async fn run_turn(args: RunArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (text, input_name) = read_input(args.file.as_deref())?;
    let mut conversation = Conversation::parse(&text, &input_name)?;
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let stored = StoredSession::open(&engine, args.session.as_deref()).await?;
    let session = stored.session();

    let turn = engine.run_turn(session, &conversation.messages).await;
    // What the session found is kept even when the turn is aborted.
    stored.save().await;
    let turn = turn.map_err(CliError::TurnAborted)?;
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
