//! SPEC R5, R6 (offload of older rounds, token estimate) and R8 (results outlive the engine),
//! through `Engine::prepare`.

mod common;

use common::*;
use serde_json::{Value, json};
use toolgate::history::{ByteEstimator, Message, TokenEstimator, ToolCall};
use toolgate::{Engine, Policy};
use toolgate_policy::ReductionSettings;

fn engine_with(store: &str, f: impl FnOnce(&mut ReductionSettings)) -> Engine {
    let mut r = ReductionSettings {
        store: Some(store.into()),
        ..Default::default()
    };
    f(&mut r);
    Engine::builder(Policy {
        reduction: Some(r),
        ..Default::default()
    })
    .tool(echo("echo"))
    .build()
    .unwrap()
}

/// `rounds` tool rounds, each an assistant call to `tool` answered by `size` bytes of text.
fn history(rounds: usize, size: usize, tool: &str) -> Vec<Message> {
    let mut h = vec![Message::user("start")];
    for r in 0..rounds {
        h.push(Message::assistant_calls(vec![ToolCall::new(
            format!("call_{r}"),
            tool,
            "{}",
        )]));
        h.push(Message::tool(
            format!("call_{r}"),
            Some(tool.into()),
            Value::String(format!("{r}:{}", "x".repeat(size))),
        ));
    }
    h
}

fn tool_text(m: &Message) -> String {
    match m {
        Message::Tool { content, .. } => content.as_str().unwrap_or("").to_string(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn r5_past_the_budget_older_rounds_are_offloaded_and_the_recent_round_kept() {
    let engine = engine_with("memory://", |r| r.max_context_tokens = 1_000);
    let s = engine.session(Some("s")).unwrap();
    let h = history(4, 4_000, "echo");
    let p = engine.prepare(&s, &h).await;
    assert_eq!(p.offload.offloaded.len(), 3);
    assert!(p.offload.tokens_after < p.offload.tokens_before);
    for i in [2, 4, 6] {
        let t = tool_text(&p.messages[i]);
        assert!(t.contains("read_tool_result") && t.contains("h_"), "{t}");
    }
    assert_eq!(p.messages[8], h[8], "the last round is unchanged");
    // The offloaded text is readable in the same session.
    let id = &p.offload.offloaded[0].1;
    let o = engine
        .call(&s, &call("r", "read_tool_result", json!({"id": id})))
        .await;
    assert!(
        o.content
            .text()
            .starts_with(&format!("0:{}", "x".repeat(100))),
        "{:?}",
        o.error
    );
}

#[tokio::test]
async fn r5_under_the_budget_nothing_is_offloaded() {
    let engine = engine_with("memory://", |_| {});
    let s = engine.session(None).unwrap();
    let h = history(4, 4_000, "echo");
    let p = engine.prepare(&s, &h).await;
    assert!(p.offload.offloaded.is_empty());
    assert_eq!(p.messages, h);
}

#[tokio::test]
async fn r5_each_round_is_offloaded_at_most_once() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&format!("file://{}", dir.path().display()), |r| {
        r.max_context_tokens = 1_000
    });
    let s = engine.session(Some("s")).unwrap();
    let h = history(3, 4_000, "echo");
    let first = engine.prepare(&s, &h).await;
    let second = engine.prepare(&s, &h).await;
    assert_eq!(
        first.offload.offloaded, second.offload.offloaded,
        "the same ids are reused"
    );
    assert_eq!(first.messages, second.messages);
    // Preparing the already-prepared history offloads nothing new: notices are small.
    let third = engine.prepare(&s, &first.messages).await;
    assert!(third.offload.offloaded.is_empty());
    let stored = engine
        .result_store()
        .unwrap()
        .list(&toolgate::store::ListFilter::all())
        .await
        .unwrap();
    assert_eq!(stored.len(), 2, "one record per offloaded round");
}

#[tokio::test]
async fn r5_small_results_and_search_or_reader_outputs_stay_in_place() {
    let engine = engine_with("memory://", |r| {
        r.max_context_tokens = 10;
        r.keep_recent_tool_rounds = 0;
        r.min_offload_bytes = 2_000;
    });
    let s = engine.session(None).unwrap();
    let mut h = history(1, 100, "echo");
    h.extend(history(1, 5_000, "read_tool_result").into_iter().skip(1));
    h.extend(history(1, 5_000, "tool_search").into_iter().skip(1));
    let p = engine.prepare(&s, &h).await;
    assert!(p.offload.offloaded.is_empty(), "{:?}", p.offload.offloaded);
    assert_eq!(p.messages, h);
}

#[tokio::test]
async fn r5_the_original_history_is_not_mutated() {
    let engine = engine_with("memory://", |r| r.max_context_tokens = 10);
    let s = engine.session(None).unwrap();
    let h = history(3, 4_000, "echo");
    let before = h.clone();
    let p = engine.prepare(&s, &h).await;
    assert!(!p.offload.offloaded.is_empty());
    assert_eq!(h, before);
}

#[tokio::test]
async fn r5_a_history_of_10000_messages_is_prepared_with_each_round_offloaded_once() {
    let engine = engine_with("memory://", |r| r.max_context_tokens = 100_000);
    let s = engine.session(Some("long")).unwrap();
    // 1 user message + 4,999 rounds of two messages + a dangling call at the end.
    let mut h = history(4_999, 2_000, "echo");
    h.push(Message::assistant_calls(vec![ToolCall::new(
        "dangling", "echo", "{}",
    )]));
    assert_eq!(h.len(), 10_000);
    let p = engine.prepare(&s, &h).await;
    assert_eq!(p.repair.added, ["dangling"]);
    assert_eq!(p.messages.len(), 10_001);
    // The last round is the repaired dangling one; all 4,999 earlier rounds are offloaded.
    assert_eq!(p.offload.offloaded.len(), 4_999);
    let mut ids: Vec<&String> = p.offload.offloaded.iter().map(|(_, id)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4_999, "one id per round");
    assert!(
        p.offload.tokens_after * 5 < p.offload.tokens_before,
        "{:?}",
        (p.offload.tokens_before, p.offload.tokens_after)
    );
    let again = engine.prepare(&s, &h).await;
    assert_eq!(again.offload.offloaded, p.offload.offloaded);
}

#[test]
fn r6_the_estimate_counts_bytes_over_four() {
    let m = Message::user("a".repeat(4_000));
    let t = ByteEstimator.message(&m);
    assert!((1_000..1_020).contains(&t), "{t}");
}

#[test]
fn r6_cjk_text_counts_a_token_per_character() {
    let cjk = ByteEstimator.message(&Message::user("中".repeat(1_000)));
    assert!((1_000..1_020).contains(&cjk), "{cjk}");
}

#[test]
fn r6_an_image_part_counts_a_fixed_amount_not_its_base64_length() {
    let m = Message::User {
        content: json!([{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", "A".repeat(400_000))}}]),
        extra: Default::default(),
    };
    let t = ByteEstimator.message(&m);
    assert!(t < 1_000, "{t}");
    assert!(t >= toolgate::history::IMAGE_TOKENS);
}

#[tokio::test]
async fn r6_the_tool_schemas_count_and_the_estimator_can_be_swapped() {
    struct Fixed;
    impl TokenEstimator for Fixed {
        fn message(&self, _: &Message) -> u64 {
            1_000_000
        }
        fn tools(&self, _: &[toolgate::tool::ToolSpec]) -> u64 {
            0
        }
    }
    let engine = engine_with("memory://", |_| {});
    let s = engine.session(None).unwrap();
    let h = history(2, 3_000, "echo");
    let p = engine.prepare_with(&s, &h, &Fixed).await;
    assert_eq!(
        p.offload.offloaded.len(),
        1,
        "the swapped estimator says the budget is reached"
    );
    let schema_only = engine.prepare(&s, &[]).await;
    assert!(
        schema_only.offload.tokens_before > 0,
        "the tool schemas are counted"
    );
}

#[tokio::test]
async fn r8_results_written_by_one_engine_are_readable_by_another_on_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let big = toolgate::tool::FnTool::new(
        "big",
        "Big.",
        obj(json!({})),
        |_ctx, _args: Value| async move { Ok(toolgate::tool::ToolOutput::text("z".repeat(70_000))) },
    );
    let first = Engine::builder(Policy {
        reduction: Some(ReductionSettings {
            store: Some(url.clone()),
            ..Default::default()
        }),
        ..Default::default()
    })
    .tool(big)
    .build()
    .unwrap();
    let s1 = first.session(Some("persist")).unwrap();
    let id = first
        .call(&s1, &call("1", "big", json!({})))
        .await
        .result_id
        .unwrap();
    drop(first);
    let second = engine_with(&url, |_| {});
    let s2 = second.session(Some("persist")).unwrap();
    let o = second
        .call(
            &s2,
            &call("2", "read_tool_result", json!({"id": id, "limit": 10})),
        )
        .await;
    assert!(
        o.content.text().starts_with("zzzzzzzzzz\n\n[tool result"),
        "{:?}",
        o.error
    );
}

/// Two rounds; the old one answered by 20,000 characters of text around an image.
fn multimodal_history() -> (Vec<Message>, String) {
    let text = "t".repeat(20_000);
    let image =
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}});
    let h = vec![
        Message::user("start"),
        Message::assistant_calls(vec![ToolCall::new("old", "echo", "{}")]),
        Message::tool(
            "old",
            Some("echo".into()),
            json!([
                {"type": "text", "text": &text[..10_000]},
                image,
                {"type": "text", "text": &text[10_000..]}
            ]),
        ),
        Message::assistant_calls(vec![ToolCall::new("recent", "echo", "{}")]),
        Message::tool("recent", Some("echo".into()), json!("recent")),
    ];
    (h, text)
}

fn engine_with_profile(profile: toolgate_policy::NameProfile) -> Engine {
    Engine::builder(Policy {
        name_profile: profile,
        reduction: Some(ReductionSettings {
            store: Some("memory://".into()),
            max_context_tokens: 1_000,
            ..Default::default()
        }),
        ..Default::default()
    })
    .tool(echo("echo"))
    .build()
    .unwrap()
}

#[tokio::test]
async fn r5_an_old_multimodal_result_has_its_text_offloaded_and_keeps_its_image_where_tool_messages_carry_images()
 {
    let engine = engine_with_profile(toolgate_policy::NameProfile::Mcp);
    let s = engine.session(Some("s")).unwrap();
    let (h, text) = multimodal_history();
    let p = engine.prepare(&s, &h).await;
    assert_eq!(p.offload.offloaded.len(), 1, "{:?}", p.offload);
    let id = p.offload.offloaded[0].1.clone();
    let Message::Tool { content, .. } = &p.messages[2] else {
        panic!("{:?}", p.messages[2]);
    };
    let parts = content
        .as_array()
        .expect("the notice and the image, as parts");
    assert_eq!(parts.len(), 2, "{content:#}");
    let notice = parts[0]["text"].as_str().unwrap();
    assert!(
        notice.contains(&id) && notice.contains("read_tool_result"),
        "{notice}"
    );
    assert_eq!(parts[1]["type"], "image_url", "the image is kept");
    // The text is saved whole.
    let o = engine
        .call(&s, &call("r", "read_tool_result", json!({"id": id})))
        .await;
    assert!(o.content.text().starts_with(&text), "{:?}", o.error);
}

#[tokio::test]
async fn r5_an_old_multimodal_result_has_its_text_offloaded_and_its_image_dropped_under_the_openai_profile()
 {
    let engine = engine_with_profile(toolgate_policy::NameProfile::Openai);
    let s = engine.session(Some("s")).unwrap();
    let (h, _) = multimodal_history();
    let p = engine.prepare(&s, &h).await;
    assert_eq!(p.offload.offloaded.len(), 1, "{:?}", p.offload);
    let Message::Tool { content, .. } = &p.messages[2] else {
        panic!("{:?}", p.messages[2]);
    };
    let notice = content
        .as_str()
        .expect("only text: openai tool messages carry no images");
    assert!(notice.contains(&p.offload.offloaded[0].1), "{notice}");
    assert!(
        notice.contains("dropped"),
        "the notice says the image is gone: {notice}"
    );
}
