//! `toolgate prepare`: the history to send the model next: dangling calls answered, answers
//! put in place, and with reduction on, older results offloaded.

use serde_json::{Value, json};

use crate::app::{load_engine, read_input};
use crate::args::PrepareArgs;
use crate::conversation::Conversation;
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;
use crate::stored_session::StoredSession;

pub async fn prepare(args: PrepareArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (text, input_name) = read_input(args.file.as_deref())?;
    let mut conversation = Conversation::parse(&text, &input_name)?;
    let (engine, _) = load_engine(args.policy.policy.as_deref())?;
    let stored = StoredSession::open(&engine, args.session.as_deref()).await?;
    let session = stored.session();

    let prepared = engine.prepare(session, &conversation.messages).await;
    let (repair, offload) = (&prepared.repair, &prepared.offload);
    tracing::info!(
        synthetic_answers = repair.added.len(),
        removed_orphans = repair.removed_orphans.len(),
        removed_duplicates = repair.removed_duplicates.len(),
        moved_answers = repair.moved.len(),
        renamed_call_ids = repair.renamed.len(),
        offloaded = offload.offloaded.len(),
        tokens_before = offload.tokens_before,
        tokens_after = offload.tokens_after,
        "history prepared"
    );
    for (call_id, why) in &offload.failed {
        tracing::warn!(call_id = %call_id, "a result could not be offloaded and stays in the history: {why}");
    }
    if engine.policy().reduction.is_none() {
        tracing::debug!("the policy has no reduction: section; only repair was done");
    }

    let pretty = !args.compact;
    if args.report {
        let pairs = |list: &[(String, String)], second: &str| -> Value {
            list.iter()
                .map(|(call_id, other)| json!({"call_id": call_id, second: other}))
                .collect()
        };
        let report = json!({
            "messages": prepared.messages,
            "repair": {
                "added": repair.added,
                "removed_orphans": repair.removed_orphans,
                "removed_duplicates": repair.removed_duplicates,
                "moved": repair.moved,
                "renamed": repair
                    .renamed
                    .iter()
                    .map(|(from, to)| json!({"from": from, "to": to}))
                    .collect::<Vec<_>>(),
            },
            "offload": {
                "tokens_before": offload.tokens_before,
                "tokens_after": offload.tokens_after,
                "offloaded": pairs(&offload.offloaded, "result_id"),
                "failed": pairs(&offload.failed, "error"),
            },
        });
        out.json(&report, pretty)?;
        return Ok(EXIT_OK);
    }
    conversation.replace_messages(prepared.messages);
    out.json(&conversation.into_json(), pretty)?;
    Ok(EXIT_OK)
}
