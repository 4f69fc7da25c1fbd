//! SPEC G9, G10 and R10: structured results (MCP's `structuredContent`, a plugin's structured
//! part) through the guard: checked against the tool's output schema, held to the result cap,
//! offloaded and paged back like text.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Map, Value, json};
use toolgate::guard::TRUNCATION_MARKER;
use toolgate::store::{
    ListFilter, Listing, NewResult, ObjectResultStore, Page, PruneReport, ResultId, ResultMeta,
    ResultStore, Scope, SessionId, StoreError,
};
use toolgate::tool::{ContentPart, FnTool, FullOutput, ToolOutput, ToolSpec};
use toolgate::{Content, Engine, INVALID_STRUCTURED_CONTENT, Policy};
use toolgate_policy::{CharCap, ReductionSettings};

/// The output schema of `rows`: `{"rows": [string, ...]}`.
fn rows_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "string"}}},
        "required": ["rows"]
    })
}

/// `{"rows": ["row 0", ..., "row n-1"]}`.
fn rows_value(n: u64) -> Value {
    json!({"rows": (0..n).map(|i| format!("row {i}")).collect::<Vec<_>>()})
}

/// A tool named `name` that declares `rows_schema()` and answers with `answer(args)`.
fn declaring(
    name: &str,
    answer: impl Fn(&Value) -> ToolOutput + Send + Sync + 'static,
) -> impl toolgate::tool::Tool {
    let spec = ToolSpec::new(name, "Rows.", obj(json!({"n": {"type": "integer"}})))
        .with_output_schema(rows_schema());
    let answer = Arc::new(answer);
    FnTool::from_spec(spec, move |_ctx, args: Value| {
        let answer = Arc::clone(&answer);
        async move { Ok(answer(&args)) }
    })
}

/// `rows {n}`: the rows as structured content, and their JSON as the text (as MCP servers
/// answer), with a `_meta` key of its own.
fn rows() -> impl toolgate::tool::Tool {
    declaring("rows", |args| {
        let value = rows_value(args["n"].as_u64().unwrap_or(0));
        let mut meta = Map::new();
        meta.insert("example.com/source".into(), json!("test"));
        ToolOutput::Full(FullOutput {
            content: vec![ContentPart::text(value.to_string())],
            structured: Some(value),
            meta: Some(meta),
        })
    })
}

/// `summary {n}`: a short text, and the rows as structured content.
fn summary() -> impl toolgate::tool::Tool {
    declaring("summary", |args| {
        let n = args["n"].as_u64().unwrap_or(0);
        ToolOutput::Full(FullOutput {
            content: vec![ContentPart::text(format!("{n} rows"))],
            structured: Some(rows_value(n)),
            meta: None,
        })
    })
}

/// `long {n}`: `n` characters of text, and a small structured content.
fn long() -> impl toolgate::tool::Tool {
    declaring("long", |args| {
        ToolOutput::Full(FullOutput {
            content: vec![ContentPart::text(
                "x".repeat(args["n"].as_u64().unwrap_or(0) as usize),
            )],
            structured: Some(json!({"rows": ["one"]})),
            meta: None,
        })
    })
}

fn capped(chars: u64) -> Engine {
    let p = policy_with(|p| p.dispatch.max_result_chars = CharCap::Chars(chars));
    Engine::builder(p)
        .tool(rows())
        .tool(long())
        .build()
        .unwrap()
}

fn reducing(max_result_bytes: u64) -> Engine {
    let policy = Policy {
        reduction: Some(ReductionSettings {
            store: Some("memory://".into()),
            max_result_bytes,
            ..Default::default()
        }),
        ..Default::default()
    };
    Engine::builder(policy)
        .tool(rows())
        .tool(summary())
        .tool(long())
        .build()
        .unwrap()
}

async fn call_in(engine: &Engine, session: &str, name: &str, args: Value) -> toolgate::Outcome {
    let s = engine.session(Some(session)).unwrap();
    engine.call(&s, &call("c", name, args)).await
}

/// The whole stored result `id`, read back page by page with `read_tool_result`.
async fn read_back(engine: &Engine, session: &str, id: &str) -> String {
    let mut whole = String::new();
    let mut offset = 0u64;
    loop {
        let page = call_in(
            engine,
            session,
            "read_tool_result",
            json!({"id": id, "offset": offset, "limit": 700}),
        )
        .await;
        assert!(!page.is_error(), "{:?}", page.error);
        let text = page.content.text();
        let (body, footer) = text.rsplit_once("\n\n[tool result ").expect("a footer");
        whole.push_str(body);
        match footer.split_once("next_offset=") {
            Some((_, next)) => offset = next.trim_end_matches(']').parse().unwrap(),
            None => return whole,
        }
    }
}

/// The outcome's content as parts (one bare text part reads as text).
fn parts(o: &toolgate::Outcome) -> Vec<ContentPart> {
    match &o.content {
        Content::Parts(parts) => parts.clone(),
        Content::Text(text) => vec![ContentPart::text(text.clone())],
    }
}

#[tokio::test]
async fn g10_a_matching_structured_result_reaches_the_outcome_with_its_meta() {
    let o = one(&capped(100_000), "rows", json!({"n": 2})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(o.structured_content, Some(rows_value(2)));
    assert_eq!(o.meta.unwrap()["example.com/source"], "test");
    assert_eq!(o.content.text(), rows_value(2).to_string());
}

#[tokio::test]
async fn g10_structured_content_that_does_not_match_the_schema_is_an_invalid_structured_content_error()
 {
    let liar = declaring("liar", |_| {
        ToolOutput::Full(FullOutput {
            structured: Some(json!({"rows": 5})),
            ..FullOutput::default()
        })
    });
    let engine = Engine::builder(Policy::default())
        .tool(liar)
        .build()
        .unwrap();
    let o = one(&engine, "liar", json!({})).await;
    assert_eq!(o.error_kind(), Some(INVALID_STRUCTURED_CONTENT));
    assert_eq!(INVALID_STRUCTURED_CONTENT, "invalid_structured_content");
    let text = o.content.text();
    assert!(
        text.contains("liar: its structured content does not match its outputSchema")
            && text.contains("(at /rows)"),
        "{text}"
    );
    assert_eq!(o.structured_content, None, "a failure carries none");
}

#[tokio::test]
async fn g10_a_tool_that_declares_an_output_schema_and_returns_only_text_fails() {
    let silent = declaring("silent", |_| ToolOutput::text("no rows"));
    let engine = Engine::builder(Policy::default())
        .tool(silent)
        .build()
        .unwrap();
    let o = one(&engine, "silent", json!({})).await;
    assert_eq!(o.error_kind(), Some(INVALID_STRUCTURED_CONTENT));
    assert!(
        o.content.text().contains("has no structured content"),
        "{:?}",
        o.content
    );
}

#[tokio::test]
async fn g9_structured_content_within_the_cap_is_kept_whole_while_its_text_is_cut() {
    // 30 characters of text are cut at 20; the JSON {"rows":["one"]} (16 characters) is
    // measured on its own and kept.
    let o = one(&capped(20), "long", json!({"n": 30})).await;
    assert_eq!(
        o.content.text(),
        format!("{}{TRUNCATION_MARKER}", "x".repeat(20))
    );
    assert!(o.truncated);
    assert_eq!(o.structured_content, Some(json!({"rows": ["one"]})));
}

#[tokio::test]
async fn g9_structured_content_over_the_cap_is_left_out_with_a_line_and_counts_as_cut() {
    let engine = capped(100);
    let o = one(&engine, "rows", json!({"n": 50})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(o.structured_content, None);
    assert!(o.truncated);
    let chars = rows_value(50).to_string().chars().count();
    let parts = parts(&o);
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(
        parts[0].text_content().unwrap().chars().count(),
        100 + TRUNCATION_MARKER.chars().count()
    );
    assert_eq!(
        parts[1].text_content().unwrap(),
        format!(
            "[The structured content of this result ({chars} characters of JSON) is over the \
             100-character cap for this tool's results and was left out.]"
        )
    );
    assert_eq!(o.output_chars, 100, "the line is not counted");
}

#[tokio::test]
async fn g9_embedded_text_resources_count_against_the_cap_and_audio_is_kept() {
    let mixed = FnTool::new(
        "mixed",
        "Mixed.",
        obj(json!({})),
        |_ctx, _args| async move {
            let resource =
                json!({"uri": "file:///a.txt", "mimeType": "text/plain", "text": "0123456789"});
            Ok(ToolOutput::Parts(vec![
                ContentPart::Resource {
                    resource: resource.as_object().unwrap().clone(),
                    extra: Map::new(),
                },
                ContentPart::Audio {
                    mime_type: "audio/wav".into(),
                    data: "UklGRg==".into(),
                    extra: Map::new(),
                },
                ContentPart::text("later"),
            ]))
        },
    );
    let p = policy_with(|p| p.dispatch.max_result_chars = CharCap::Chars(4));
    let engine = Engine::builder(p).tool(mixed).build().unwrap();
    let o = one(&engine, "mixed", json!({})).await;
    let parts = parts(&o);
    assert_eq!(
        parts.len(),
        2,
        "the text after the cut is dropped: {parts:?}"
    );
    assert_eq!(
        parts[0].text_content(),
        Some(format!("0123{TRUNCATION_MARKER}").as_str())
    );
    assert!(matches!(&parts[1], ContentPart::Audio { data, .. } if data == "UklGRg=="));
    assert!(o.truncated);
}

#[tokio::test]
async fn r10_structured_content_over_the_threshold_is_offloaded_and_paged_back_as_json() {
    let engine = reducing(500);
    let o = call_in(&engine, "s1", "rows", json!({"n": 100})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(o.structured_content, None, "left out of the result");
    let id = o.result_id.clone().expect("offloaded");
    let parts = parts(&o);
    assert_eq!(
        parts.len(),
        1,
        "the notice takes the place of the text: {parts:?}"
    );
    let notice = parts[0].text_content().unwrap();
    assert!(
        notice.contains(&id) && notice.contains("read_tool_result"),
        "{notice}"
    );
    assert!(
        notice.contains("characters ---\n{\"rows\":[\"row 0\""),
        "{notice}"
    );
    // The text repeated the JSON: stored once, and it reads back as the structured content.
    let whole = read_back(&engine, "s1", &id).await;
    assert_eq!(
        serde_json::from_str::<Value>(&whole).unwrap(),
        rows_value(100)
    );
}

#[tokio::test]
async fn r10_structured_content_beside_a_short_text_is_offloaded_after_the_text() {
    let engine = reducing(500);
    let o = call_in(&engine, "s1", "summary", json!({"n": 100})).await;
    assert_eq!(o.structured_content, None);
    let id = o.result_id.clone().expect("offloaded");
    let parts = parts(&o);
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[0].text_content(), Some("100 rows"), "the text stays");
    assert!(parts[1].text_content().unwrap().contains(&id));
    let whole = read_back(&engine, "s1", &id).await;
    assert_eq!(
        whole,
        rows_value(100).to_string(),
        "the document is the JSON"
    );
}

#[tokio::test]
async fn r10_a_long_text_beside_small_structured_content_keeps_the_structured_content() {
    let engine = reducing(500);
    let o = call_in(&engine, "s1", "long", json!({"n": 2000})).await;
    assert_eq!(o.structured_content, Some(json!({"rows": ["one"]})));
    let id = o.result_id.clone().expect("the text is offloaded");
    assert_eq!(read_back(&engine, "s1", &id).await, "x".repeat(2000));
}

#[tokio::test]
async fn r10_a_result_within_the_threshold_passes_unchanged() {
    let o = call_in(&reducing(50_000), "s1", "rows", json!({"n": 100})).await;
    assert_eq!(o.result_id, None);
    assert_eq!(o.structured_content, Some(rows_value(100)));
}

/// A store whose every save fails (R9).
struct Broken(ObjectResultStore);

#[toolgate::async_trait]
impl ResultStore for Broken {
    async fn save(&self, _new: NewResult, _content: &str) -> Result<ResultMeta, StoreError> {
        Err(StoreError::Backend {
            op: "save the result data",
            error: "the disk is on fire".into(),
        })
    }
    async fn meta(&self, id: &ResultId) -> Result<ResultMeta, StoreError> {
        self.0.meta(id).await
    }
    async fn read_chars(&self, id: &ResultId, offset: u64, limit: u64) -> Result<Page, StoreError> {
        self.0.read_chars(id, offset, limit).await
    }
    async fn list(&self, filter: &ListFilter) -> Result<Vec<ResultMeta>, StoreError> {
        self.0.list(filter).await
    }
    async fn listing(&self, filter: &ListFilter) -> Result<Listing, StoreError> {
        self.0.listing(filter).await
    }
    async fn delete(&self, id: &ResultId) -> Result<(), StoreError> {
        self.0.delete(id).await
    }
    async fn delete_session(&self, session: &SessionId) -> Result<u64, StoreError> {
        self.0.delete_session(session).await
    }
    async fn prune(&self, before: u64, scope: &Scope) -> Result<PruneReport, StoreError> {
        self.0.prune(before, scope).await
    }
}

#[tokio::test]
async fn r10_when_the_store_fails_structured_content_over_the_fallback_cap_is_left_out_and_said() {
    let policy = Policy {
        reduction: Some(ReductionSettings {
            max_result_bytes: 500,
            ..Default::default()
        }),
        ..policy_with(|p| p.dispatch.max_result_chars = CharCap::Chars(300))
    };
    let engine = Engine::builder(policy)
        .result_store(Broken(
            ObjectResultStore::from_url_opts("memory://", Vec::<(String, String)>::new()).unwrap(),
        ))
        .tool(summary())
        .build()
        .unwrap();
    let o = one(&engine, "summary", json!({"n": 100})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(
        (o.structured_content.as_ref(), o.result_id.as_ref()),
        (None, None)
    );
    assert!(o.truncated);
    let text = o.content.text();
    assert!(text.starts_with("100 rows\n"), "{text}");
    assert!(text.contains("300-character cap"), "{text}");
    assert!(
        text.contains("could not be saved for reading later") && text.contains("disk is on fire"),
        "{text}"
    );
}

/// `media`: audio, an embedded text resource, a binary one and a link; no structured content.
fn media() -> impl toolgate::tool::Tool {
    FnTool::new(
        "media",
        "Media.",
        obj(json!({})),
        |_ctx, _args| async move {
            let text =
                json!({"uri": "file:///a.txt", "mimeType": "text/plain", "text": "the note"});
            let blob = json!({"uri": "file:///b.bin", "blob": "AAEC"});
            let mut link = Map::new();
            link.insert("description".into(), json!("read it later"));
            Ok(ToolOutput::Parts(vec![
                ContentPart::Audio {
                    mime_type: "audio/wav".into(),
                    data: "UklGRg==".into(),
                    extra: Map::new(),
                },
                ContentPart::Resource {
                    resource: text.as_object().unwrap().clone(),
                    extra: Map::new(),
                },
                ContentPart::Resource {
                    resource: blob.as_object().unwrap().clone(),
                    extra: Map::new(),
                },
                ContentPart::ResourceLink {
                    uri: "file:///c.txt".into(),
                    name: "c".into(),
                    extra: link,
                },
            ]))
        },
    )
}

#[tokio::test]
async fn providers_are_told_in_text_of_the_parts_a_tool_message_cannot_carry() {
    use toolgate::history::{Message, answer_messages};
    use toolgate_policy::NameProfile;
    let engine = Engine::builder(Policy::default())
        .tool(media())
        .build()
        .unwrap();
    let o = one(&engine, "media", json!({})).await;
    for profile in [
        NameProfile::Openai,
        NameProfile::Anthropic,
        NameProfile::Mcp,
    ] {
        let messages = answer_messages(std::slice::from_ref(&o), profile);
        assert_eq!(
            messages.len(),
            1,
            "no images, so no user message: {messages:?}"
        );
        let Message::Tool { content, .. } = &messages[0] else {
            panic!("a tool message: {messages:?}");
        };
        let texts: Vec<&str> = content
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                assert_eq!(p["type"], "text", "{profile:?}: {p}");
                p["text"].as_str().unwrap()
            })
            .collect();
        assert_eq!(
            texts,
            [
                "[An audio clip (audio/wav, 8 base64 characters) is not shown: tool messages carry text and images only.]",
                "[resource file:///a.txt (text/plain)]\nthe note",
                "[A binary resource file:///b.bin, 4 base64 characters, is not shown: tool messages carry text and images only.]",
                "[resource link c <file:///c.txt>: read it later]",
            ],
            "{profile:?}"
        );
    }
}

#[tokio::test]
async fn structured_content_without_text_reaches_the_model_as_its_json() {
    use toolgate::history::model_content;
    let bare = declaring("bare", |_| {
        ToolOutput::Full(FullOutput {
            structured: Some(rows_value(1)),
            ..FullOutput::default()
        })
    });
    let engine = Engine::builder(Policy::default())
        .tool(bare)
        .tool(rows())
        .build()
        .unwrap();
    let o = one(&engine, "bare", json!({})).await;
    assert_eq!(
        o.content.text(),
        "",
        "the client gets the content as it came"
    );
    assert_eq!(model_content(&o).text(), rows_value(1).to_string());
    let o = one(&engine, "rows", json!({"n": 1})).await;
    assert_eq!(
        model_content(&o).text(),
        o.content.text(),
        "text that repeats it is read once"
    );
}
