//! SPEC "History before each model request" (P1-P2).

use serde_json::{Value, json};
use toolgate::history::{Message, ToolCall, repair};
use toolgate_policy::NameProfile;

fn assistant(calls: &[(&str, &str)]) -> Message {
    Message::assistant_calls(
        calls
            .iter()
            .map(|(id, name)| ToolCall::new(*id, *name, "{}"))
            .collect(),
    )
}

fn tool(id: &str, text: &str) -> Message {
    Message::tool(id, None, Value::String(text.into()))
}

fn ids(h: &[Message]) -> Vec<String> {
    h.iter()
        .map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => {
                let synthetic = content
                    .as_str()
                    .is_some_and(|c| c.starts_with("Error: the call"));
                format!("tool:{tool_call_id}{}", if synthetic { "*" } else { "" })
            }
            other => other.role().to_string(),
        })
        .collect()
}

#[test]
fn p1_a_dangling_call_gets_a_synthetic_answer_after_the_existing_answers() {
    let h = vec![
        Message::user("hi"),
        assistant(&[("a", "x"), ("b", "y"), ("c", "z")]),
        tool("a", "A"),
        Message::user("next"),
    ];
    let (out, report) = repair(&h);
    assert_eq!(
        ids(&out),
        ["user", "assistant", "tool:a", "tool:b*", "tool:c*", "user"]
    );
    assert_eq!(report.added, ["b", "c"]);
}

#[test]
fn p1_the_synthetic_answer_has_the_call_id_and_tool_name_and_is_marked_as_an_error() {
    let (out, _) = repair(&[assistant(&[("a", "search")])]);
    match &out[1] {
        Message::Tool {
            tool_call_id,
            name,
            content,
            ..
        } => {
            assert_eq!(tool_call_id, "a");
            assert_eq!(name.as_deref(), Some("search"));
            let text = content.as_str().unwrap();
            assert!(text.starts_with("Error:"), "{text}");
            assert!(
                text.contains("search") && text.contains("interrupted"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn p1_orphan_tool_messages_are_removed() {
    let h = vec![
        Message::user("hi"),
        tool("ghost", "?"),
        assistant(&[("a", "x")]),
        tool("a", "A"),
        tool("zzz", "?"),
    ];
    let (out, report) = repair(&h);
    assert_eq!(ids(&out), ["user", "assistant", "tool:a"]);
    assert_eq!(report.removed_orphans, ["ghost", "zzz"]);
}

#[test]
fn p1_duplicate_answers_are_removed() {
    let h = vec![
        assistant(&[("a", "x")]),
        tool("a", "first"),
        tool("a", "second"),
    ];
    let (out, report) = repair(&h);
    assert_eq!(out.len(), 2);
    assert_eq!(report.removed_duplicates, ["a"]);
    assert!(matches!(&out[1], Message::Tool { content, .. } if content == "first"));
}

#[test]
fn p1_a_call_id_reused_across_turns_is_matched_by_position() {
    // The provider reuses "call_0" in the second turn; the first turn's answer must not count
    // for it.
    let h = vec![
        assistant(&[("call_0", "x")]),
        tool("call_0", "turn 1"),
        Message::user("again"),
        assistant(&[("call_0", "x")]),
    ];
    let (out, report) = repair(&h);
    assert_eq!(
        ids(&out),
        [
            "assistant",
            "tool:call_0",
            "user",
            "assistant",
            "tool:call_0*"
        ]
    );
    assert_eq!(report.added, ["call_0"]);
}

#[test]
fn p1_a_valid_history_is_unchanged() {
    let h = vec![
        Message::user("hi"),
        assistant(&[("a", "x")]),
        tool("a", "A"),
    ];
    let (out, report) = repair(&h);
    assert_eq!(out, h);
    assert!(report.is_clean());
}

#[test]
fn p2_repair_never_changes_the_callers_history() {
    let h = vec![assistant(&[("a", "x")]), tool("zzz", "?")];
    let before = h.clone();
    let _ = repair(&h);
    assert_eq!(h, before);
}

#[test]
fn messages_keep_fields_toolgate_does_not_know() {
    let raw = json!([
        {"role": "user", "content": "hi", "x_custom": 1},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}, "index": 0}], "refusal": null},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "ok"}]}
    ]);
    let msgs: Vec<Message> = serde_json::from_value(raw.clone()).unwrap();
    let back = serde_json::to_value(&msgs).unwrap();
    assert_eq!(back[0]["x_custom"], 1);
    assert_eq!(back[1]["tool_calls"][0]["index"], 0);
    assert_eq!(back[2]["content"][0]["text"], "ok");
}

#[test]
fn arguments_sent_as_an_object_are_read_as_json_text() {
    let raw = json!({"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]});
    let m: Message = serde_json::from_value(raw).unwrap();
    match m {
        Message::Assistant { tool_calls, .. } => {
            assert_eq!(tool_calls[0].function.arguments, r#"{"x":1}"#)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn p1_an_answer_that_comes_after_a_later_message_is_moved_up_to_its_call_not_dropped() {
    let h = vec![
        assistant(&[("a", "x"), ("b", "y")]),
        tool("a", "A"),
        Message::user("meanwhile"),
        tool("b", "B"),
    ];
    let (out, report) = repair(&h);
    assert_eq!(ids(&out), ["assistant", "tool:a", "tool:b", "user"]);
    assert!(matches!(&out[2], Message::Tool { content, .. } if content == "B"));
    assert_eq!(report.moved, ["b"]);
    assert!(report.added.is_empty() && report.removed_orphans.is_empty());
}

#[test]
fn p1_repeated_call_ids_in_one_message_are_made_unique_and_answered_in_order() {
    let h = vec![
        assistant(&[("x", "f"), ("x", "f"), ("x", "f")]),
        tool("x", "one"),
        tool("x", "two"),
    ];
    let (out, report) = repair(&h);
    assert_eq!(ids(&out), ["assistant", "tool:x", "tool:x_2", "tool:x_3*"]);
    assert!(matches!(&out[2], Message::Tool { content, .. } if content == "two"));
    match &out[0] {
        Message::Assistant { tool_calls, .. } => {
            let ids: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(ids, ["x", "x_2", "x_3"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        report.renamed,
        [("x".into(), "x_2".into()), ("x".into(), "x_3".into())]
    );
    assert_eq!(report.added, ["x_3"]);
    assert!(report.removed_duplicates.is_empty());
}

#[test]
fn p1_under_the_openai_profile_a_synthetic_answer_has_no_name() {
    let (out, _) =
        toolgate::history::repair_for(&[assistant(&[("a", "search")])], NameProfile::Openai);
    assert!(
        matches!(&out[1], Message::Tool { name: None, .. }),
        "{:?}",
        out[1]
    );
}

#[test]
fn an_explicit_null_content_is_written_back_and_an_absent_one_stays_absent() {
    let raw = json!([
        {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "tool_calls": [{"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    ]);
    let msgs: Vec<Message> = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(serde_json::to_value(&msgs).unwrap(), raw);
}
