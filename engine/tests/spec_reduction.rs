//! SPEC "Large results" (R1-R4, R9) through the engine, run once against each backend:
//! `memory://`, `file://` (a temporary folder) and the real S3 server started by
//! `scripts/s3-server.sh` (skipped with a message when it is not running, a failure on CI).

mod common;

use std::collections::BTreeMap;
#[cfg(feature = "s3")]
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolgate::tool::{FnTool, ToolOutput};
use toolgate::{Engine, Policy};
use toolgate_policy::ReductionSettings;

/// `big {n, unit?}`: `n` copies of `unit` (default "a").
fn big() -> impl toolgate::tool::Tool {
    FnTool::new(
        "big",
        "Big output.",
        obj(json!({"n": {"type": "integer"}, "unit": {"type": "string"}})),
        |_ctx, args: Value| async move {
            let unit = args["unit"].as_str().unwrap_or("a").to_string();
            Ok(ToolOutput::text(
                unit.repeat(args["n"].as_u64().unwrap_or(0) as usize),
            ))
        },
    )
}

/// A store location per backend; the temp dir lives as long as the value.
struct Backend {
    url: String,
    options: BTreeMap<String, String>,
    _dir: Option<tempfile::TempDir>,
}

fn backend(kind: &str) -> Option<Backend> {
    match kind {
        "memory" => Some(Backend {
            url: "memory://".into(),
            options: BTreeMap::new(),
            _dir: None,
        }),
        "file" => {
            let dir = tempfile::tempdir().unwrap();
            Some(Backend {
                url: format!("file://{}", dir.path().display()),
                options: BTreeMap::new(),
                _dir: Some(dir),
            })
        }
        "s3" => {
            // A missing server fails the test or is started, never skipped.
            let server = s3_server();
            let var = |n: &str| server[n].clone();
            let endpoint = var("TOOLGATE_TEST_S3_ENDPOINT");
            let prefix = toolgate::store::ResultId::generate();
            Some(Backend {
                url: format!("s3://{}/engine-{prefix}", var("TOOLGATE_TEST_S3_BUCKET")),
                options: BTreeMap::from([
                    ("endpoint".into(), endpoint),
                    (
                        "access_key_id".into(),
                        var("TOOLGATE_TEST_S3_ACCESS_KEY_ID"),
                    ),
                    (
                        "secret_access_key".into(),
                        var("TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"),
                    ),
                    ("region".into(), var("TOOLGATE_TEST_S3_REGION")),
                    ("allow_http".into(), "true".into()),
                ]),
                _dir: None,
            })
        }
        other => panic!("unknown backend {other}"),
    }
}

fn engine_on(b: &Backend, f: impl FnOnce(&mut ReductionSettings)) -> Engine {
    let mut r = ReductionSettings {
        store: Some(b.url.clone()),
        store_options: b.options.clone(),
        ..Default::default()
    };
    f(&mut r);
    let policy = Policy {
        reduction: Some(r),
        ..Default::default()
    };
    Engine::builder(policy)
        .tool(big())
        .tool(echo("echo"))
        .build()
        .expect("engine with reduction")
}

async fn call_in(
    engine: &Engine,
    session: Option<&str>,
    name: &str,
    args: Value,
) -> toolgate::Outcome {
    let s = engine.session(session).unwrap();
    engine.call(&s, &call("c", name, args)).await
}

/// The `[tool result ...]` footer of a page.
fn footer(text: &str) -> &str {
    text.rsplit("\n\n").next().unwrap()
}

async fn r1_a_result_over_the_threshold_is_stored_whole_and_replaced_by_a_notice(b: Backend) {
    let engine = engine_on(&b, |_| {});
    let o = call_in(&engine, Some("s1"), "big", json!({"n": 60_000})).await;
    let id = o.result_id.clone().expect("offloaded");
    let text = o.content.text();
    assert!(text.contains(&id), "{text}");
    assert!(
        text.contains("60000 bytes"),
        "the size with its unit: {text}"
    );
    assert!(text.contains("read_tool_result"), "{text}");
    assert!(text.contains("--- first 1000 characters ---"), "{text}");
    assert!(text.contains("last 500 characters"), "{text}");
    assert!(!o.truncated);
    let store = engine.result_store().unwrap();
    let rid = toolgate::store::ResultId::parse(&id).unwrap();
    let meta = store.meta(&rid).await.unwrap();
    assert_eq!((meta.bytes, meta.chars), (60_000, 60_000));
    assert_eq!(meta.session.as_ref().map(|s| s.as_str()), Some("s1"));
    let page = store.read_chars(&rid, 0, 60_000).await.unwrap();
    assert_eq!(page.text, "a".repeat(60_000), "stored byte for byte");
}

async fn r1_a_result_at_the_threshold_passes_unchanged(b: Backend) {
    let engine = engine_on(&b, |_| {});
    let o = call_in(&engine, None, "big", json!({"n": 50_000})).await;
    assert_eq!(o.result_id, None);
    assert_eq!(o.content.text().len(), 50_000);
}

async fn r1_previews_are_cut_on_character_boundaries(b: Backend) {
    let engine = engine_on(&b, |r| {
        r.max_result_bytes = 100;
        r.preview_head_chars = 3;
        r.preview_tail_chars = 2;
    });
    let o = call_in(&engine, None, "big", json!({"n": 50, "unit": "é字"})).await;
    let text = o.content.text();
    assert!(text.contains("---\né字é\n---"), "{text}");
    assert!(text.ends_with("---\né字"), "{text}");
}

async fn r1_each_result_gets_a_fresh_id(b: Backend) {
    let engine = engine_on(&b, |_| {});
    let a = call_in(&engine, None, "big", json!({"n": 60_000}))
        .await
        .result_id
        .unwrap();
    let c = call_in(&engine, None, "big", json!({"n": 60_000}))
        .await
        .result_id
        .unwrap();
    assert_ne!(a, c);
    assert!(a.len() >= 20, "unguessable: {a}");
}

async fn r2_the_character_cap_does_not_apply_while_reduction_is_on(b: Backend) {
    let engine = engine_on(&b, |r| r.max_result_bytes = 10_000_000);
    let o = call_in(&engine, None, "big", json!({"n": 150_000})).await;
    assert_eq!((o.output_chars, o.truncated), (150_000, false));
}

async fn r3_read_tool_result_pages_by_characters_with_next_offset(b: Backend) {
    let engine = engine_on(&b, |r| r.max_result_bytes = 100);
    let o = call_in(&engine, Some("s"), "big", json!({"n": 30_000, "unit": "é"})).await;
    let id = o.result_id.unwrap();
    let p1 = call_in(&engine, Some("s"), "read_tool_result", json!({"id": id})).await;
    let t1 = p1.content.text();
    assert_eq!(
        footer(&t1),
        format!("[tool result \"{id}\": characters 0-20000 of 30000; next_offset=20000]")
    );
    assert_eq!(t1.chars().filter(|c| *c == 'é').count(), 20_000);
    let p2 = call_in(
        &engine,
        Some("s"),
        "read_tool_result",
        json!({"id": id, "offset": 20_000, "limit": 50_000}),
    )
    .await;
    assert_eq!(
        footer(&p2.content.text()),
        format!("[tool result \"{id}\": characters 20000-30000 of 30000]")
    );
    assert_eq!(p2.result_id, None, "a page is never reduced again");
}

async fn r3_bad_read_arguments_are_errors(b: Backend) {
    let engine = engine_on(&b, |r| r.max_result_bytes = 100);
    let id = call_in(&engine, None, "big", json!({"n": 200}))
        .await
        .result_id
        .unwrap();
    let kind = |o: toolgate::Outcome| o.error_kind().map(str::to_string);
    assert_eq!(
        kind(
            call_in(
                &engine,
                None,
                "read_tool_result",
                json!({"id": id, "offset": 201})
            )
            .await
        )
        .as_deref(),
        Some("offset_out_of_range")
    );
    assert_eq!(
        kind(
            call_in(
                &engine,
                None,
                "read_tool_result",
                json!({"id": id, "offset": -1})
            )
            .await
        )
        .as_deref(),
        Some("invalid_arguments")
    );
    assert_eq!(
        kind(
            call_in(
                &engine,
                None,
                "read_tool_result",
                json!({"id": id, "limit": -5})
            )
            .await
        )
        .as_deref(),
        Some("invalid_arguments")
    );
    assert_eq!(
        kind(call_in(&engine, None, "read_tool_result", json!({"id": "  "})).await).as_deref(),
        Some("invalid_arguments")
    );
    assert_eq!(
        kind(
            call_in(
                &engine,
                None,
                "read_tool_result",
                json!({"id": "../../etc/passwd"})
            )
            .await
        )
        .as_deref(),
        Some("invalid_id")
    );
    assert_eq!(
        kind(
            call_in(
                &engine,
                None,
                "read_tool_result",
                json!({"id": "r_doesnotexist0000000000000000"})
            )
            .await
        )
        .as_deref(),
        Some("not_found")
    );
    // Offset exactly at the end is an empty last page, not an error.
    let end = call_in(
        &engine,
        None,
        "read_tool_result",
        json!({"id": id, "offset": 200}),
    )
    .await;
    assert!(!end.is_error(), "{:?}", end.error);
}

async fn r4_a_result_is_readable_only_in_its_own_session(b: Backend) {
    let engine = engine_on(&b, |r| r.max_result_bytes = 100);
    let id = call_in(&engine, Some("alice"), "big", json!({"n": 200}))
        .await
        .result_id
        .unwrap();
    assert!(
        !call_in(
            &engine,
            Some("alice"),
            "read_tool_result",
            json!({"id": id})
        )
        .await
        .is_error()
    );
    let other = call_in(&engine, Some("bob"), "read_tool_result", json!({"id": id})).await;
    assert_eq!(other.error_kind(), Some("access_denied"));
    let none = call_in(&engine, None, "read_tool_result", json!({"id": id})).await;
    assert_eq!(none.error_kind(), Some("access_denied"));
}

async fn r4_a_result_saved_without_a_session_is_readable_only_without_one(b: Backend) {
    let engine = engine_on(&b, |r| r.max_result_bytes = 100);
    let id = call_in(&engine, None, "big", json!({"n": 200}))
        .await
        .result_id
        .unwrap();
    assert!(
        !call_in(&engine, None, "read_tool_result", json!({"id": id}))
            .await
            .is_error()
    );
    assert_eq!(
        call_in(&engine, Some("x"), "read_tool_result", json!({"id": id}))
            .await
            .error_kind(),
        Some("access_denied")
    );
}

async fn r4_foreign_results_can_be_hidden_as_not_found(b: Backend) {
    let engine = engine_on(&b, |r| {
        r.max_result_bytes = 100;
        r.hide_foreign_results = true;
    });
    let id = call_in(&engine, Some("alice"), "big", json!({"n": 200}))
        .await
        .result_id
        .unwrap();
    assert_eq!(
        call_in(&engine, Some("bob"), "read_tool_result", json!({"id": id}))
            .await
            .error_kind(),
        Some("not_found")
    );
}

macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {
        mod memory { use super::*; $( #[tokio::test] async fn $name() { super::$name(backend("memory").unwrap()).await } )* }
        mod file { use super::*; $( #[tokio::test] async fn $name() { super::$name(backend("file").unwrap()).await } )* }
        #[cfg(feature = "s3")]
        mod s3 { use super::*; $( #[tokio::test] async fn $name() { if let Some(b) = backend("s3") { super::$name(b).await } } )* }
    };
}

per_backend!(
    r1_a_result_over_the_threshold_is_stored_whole_and_replaced_by_a_notice,
    r1_a_result_at_the_threshold_passes_unchanged,
    r1_previews_are_cut_on_character_boundaries,
    r1_each_result_gets_a_fresh_id,
    r2_the_character_cap_does_not_apply_while_reduction_is_on,
    r3_read_tool_result_pages_by_characters_with_next_offset,
    r3_bad_read_arguments_are_errors,
    r4_a_result_is_readable_only_in_its_own_session,
    r4_a_result_saved_without_a_session_is_readable_only_without_one,
    r4_foreign_results_can_be_hidden_as_not_found,
);

// The failing store is an S3 server that is not there.
#[cfg(feature = "s3")]
#[tokio::test]
async fn r9_an_unreachable_store_never_loses_the_result_silently() {
    // A port nothing listens on: every write fails quickly.
    let policy = Policy {
        reduction: Some(ReductionSettings {
            store: Some("s3://bucket/prefix".into()),
            store_options: BTreeMap::from([
                ("endpoint".into(), "http://127.0.0.1:9".into()),
                ("access_key_id".into(), "x".into()),
                ("secret_access_key".into(), "y".into()),
                ("region".into(), "us-east-1".into()),
                ("allow_http".into(), "true".into()),
                ("max_retries".into(), "0".into()),
                ("retry_timeout".into(), "2s".into()),
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let engine = Engine::builder(policy).tool(big()).build().unwrap();
    let mut events = engine.subscribe();
    let o = tokio::time::timeout(
        Duration::from_secs(60),
        call_in(&engine, None, "big", json!({"n": 120_000})),
    )
    .await
    .expect("the call answers");
    assert!(!o.is_error(), "the call still answers: {:?}", o.error);
    assert_eq!(o.result_id, None);
    let text = o.content.text();
    assert!(text.starts_with(&"a".repeat(1000)), "the text is kept");
    assert!(
        text.contains("could not be saved"),
        "{}",
        &text[text.len() - 300..]
    );
    assert!(o.truncated);
    assert_eq!(o.output_chars, 100_000);
    let errors = std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(&e.kind, toolgate::events::EventKind::Error { kind, .. } if *kind == "store_error"))
        .count();
    assert_eq!(errors, 1, "an error event");
}

#[tokio::test]
async fn d5_read_tool_result_runs_under_the_same_guard() {
    let b = backend("memory").unwrap();
    let mut r = ReductionSettings {
        store: Some(b.url.clone()),
        max_result_bytes: 100,
        ..Default::default()
    };
    r.max_result_bytes = 100;
    let mut policy = Policy {
        reduction: Some(r),
        ..Default::default()
    };
    policy.rules.deny.push(toolgate_policy::Rule {
        tools: vec![glob("read_tool_result")],
        reason: Some("reading is off".into()),
        ..Default::default()
    });
    let engine = Engine::builder(policy).tool(big()).build().unwrap();
    let mut events = engine.subscribe();
    let id = call_in(&engine, None, "big", json!({"n": 200}))
        .await
        .result_id
        .unwrap();
    let o = call_in(&engine, None, "read_tool_result", json!({"id": id})).await;
    assert_eq!(o.error_kind(), Some("denied"));
    let ends = std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| {
            e.tool_name == "read_tool_result"
                && matches!(e.kind, toolgate::events::EventKind::End { .. })
        })
        .count();
    assert_eq!(ends, 1);
}

// The failing store is an S3 server that is not there.
#[cfg(feature = "s3")]
#[tokio::test]
async fn r9_a_failing_store_keeps_the_images_of_a_multimodal_result() {
    let tool = FnTool::new(
        "mm",
        "Multimodal.",
        obj(json!({})),
        |_ctx, _args: Value| async move {
            Ok(ToolOutput::Parts(vec![
                toolgate::tool::ContentPart::text("t".repeat(80_000)),
                toolgate::tool::ContentPart::image("image/png", "iVBORw0KGgo="),
            ]))
        },
    );
    let policy = Policy {
        reduction: Some(ReductionSettings {
            store: Some("s3://bucket/prefix".into()),
            store_options: BTreeMap::from([
                ("endpoint".into(), "http://127.0.0.1:9".into()),
                ("access_key_id".into(), "x".into()),
                ("secret_access_key".into(), "y".into()),
                ("region".into(), "us-east-1".into()),
                ("allow_http".into(), "true".into()),
                ("max_retries".into(), "0".into()),
                ("retry_timeout".into(), "2s".into()),
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let engine = Engine::builder(policy).tool(tool).build().unwrap();
    let o = call_in(&engine, None, "mm", json!({})).await;
    match &o.content {
        toolgate::Content::Parts(parts) => {
            assert!(
                parts
                    .iter()
                    .any(|p| matches!(p, toolgate::tool::ContentPart::Image { .. })),
                "the image is kept"
            );
            assert!(o.content.text().contains("could not be saved"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_store_that_cannot_be_opened_fails_the_build_with_the_store_error_as_its_cause() {
    let policy = Policy {
        reduction: Some(ReductionSettings {
            store: Some("nosuchscheme://bucket".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = Engine::builder(policy).build().unwrap_err();
    let cause = std::error::Error::source(&err).expect("the store error is the source");
    assert!(cause.is::<toolgate::store::StoreError>(), "{cause:?}");
    // The message says what failed; the cause is not repeated in it.
    assert_eq!(err.to_string(), "reduction: cannot open the result store");
    assert_eq!(
        toolgate::error::Chain(&err).to_string(),
        "reduction: cannot open the result store: bad result store configuration: unsupported \
         store URL scheme \"nosuchscheme\" in \"nosuchscheme://bucket\"; use memory://, \
         file:///dir or s3://bucket/prefix"
    );
}
