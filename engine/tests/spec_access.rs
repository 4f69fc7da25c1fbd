//! SPEC "Resources and prompts" (A1, A2): reads and gets a host hands the engine run through
//! the tool guard. The targets here are native tools standing for a host's reader; the whole
//! path through `toolgate serve` and a real MCP server is in tests/tests/serve_resources.rs.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use toolgate::access::{Access, CallKind};
use toolgate::events::EventKind;
use toolgate::tool::{FnTool, Tool, ToolOutput};
use toolgate::{CancellationToken, Engine, Policy};

/// A reader that answers with `text` and shows what it was given.
fn reader(text: &str) -> Arc<dyn Tool> {
    let text = text.to_owned();
    Arc::new(FnTool::new(
        "reader",
        "",
        json!({"type": "object"}),
        move |_ctx, args: Value| {
            let text = text.clone();
            async move { Ok(ToolOutput::text(format!("{text} {args}"))) }
        },
    ))
}

fn policy(yaml: &str) -> Policy {
    toolgate_policy::load_str(yaml, std::path::Path::new("p.yaml")).expect("a valid policy")
}

async fn read(engine: &Engine, uri: &str, target: Arc<dyn Tool>) -> toolgate::Outcome {
    let session = engine.session(Some("s-1")).unwrap();
    let access = Access::resource("r-1", uri, Some(target));
    engine
        .access(&session, access, &CancellationToken::new())
        .await
}

#[tokio::test]
async fn a1_a_read_emits_start_and_end_events_that_say_it_is_a_resource() {
    let engine = Engine::builder(Policy::default()).build().unwrap();
    let mut rx = engine.subscribe();
    let o = read(&engine, "demo://h/a/../b", reader("body")).await;
    assert!(!o.is_error(), "{o:?}");
    assert_eq!(o.content.text(), r#"body {"uri":"demo://h/b"}"#);
    let events: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(events[0].kind, EventKind::Start));
    assert!(matches!(events[1].kind, EventKind::End { .. }));
    for e in &events {
        assert_eq!(e.call_kind, CallKind::Resource);
        assert_eq!(e.tool_name, "demo://h/b", "judged in normal form");
        assert_eq!(e.model_name, "demo://h/a/../b", "as the client sent it");
        assert_eq!(e.call_id, "r-1");
    }
    let json = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(json["call_kind"], "resource");
}

#[tokio::test]
async fn a1_a_prompt_get_emits_events_with_its_arguments() {
    let engine = Engine::builder(Policy::default()).build().unwrap();
    let mut rx = engine.subscribe();
    let session = engine.session(None).unwrap();
    let mut args = serde_json::Map::new();
    args.insert("city".into(), json!("Paris"));
    let access = Access::prompt("p-1", "srv.weather", args, Some(reader("msg")));
    let o = engine
        .access(&session, access, &CancellationToken::new())
        .await;
    assert_eq!(o.content.text(), r#"msg {"city":"Paris"}"#);
    let end = std::iter::from_fn(|| rx.try_recv().ok()).last().unwrap();
    assert_eq!(end.call_kind, CallKind::Prompt);
    assert_eq!(end.tool_name, "srv.weather");
    assert_eq!(end.arguments, r#"{"city":"Paris"}"#);
}

#[tokio::test]
async fn a1_the_before_hook_sees_the_kind_and_the_uri_in_normal_form() {
    let engine = Engine::builder(policy(
        r#"
version: 1
scripts:
  before:
    code: |
      if kind == "resource" && tool.starts_with("file:///secret/") && args.uri == tool {
        "secrets stay secret"
      }
"#,
    ))
    .build()
    .unwrap();
    let o = read(&engine, "file:///public/%2E%2E/secret/key", reader("k")).await;
    assert_eq!(o.error_kind(), Some("denied"), "{o:?}");
    assert!(o.content.text().contains("secrets stay secret"), "{o:?}");
    let o = read(&engine, "file:///public/key", reader("k")).await;
    assert!(!o.is_error(), "{o:?}");
}

#[tokio::test]
async fn a1_a_uri_without_a_normal_form_is_invalid_arguments() {
    let engine = Engine::builder(Policy::default()).build().unwrap();
    let o = read(&engine, "file:///%zz", reader("x")).await;
    assert_eq!(o.error_kind(), Some("invalid_arguments"), "{o:?}");
    assert!(
        o.content.text().contains("not followed by two hex digits"),
        "{o:?}"
    );
}

#[tokio::test]
async fn a1_a_large_resource_is_offloaded_with_a_notice_that_names_a_resource() {
    let engine = Engine::builder(policy("version: 1\nreduction: {max_result_bytes: 100}\n"))
        .build()
        .unwrap();
    let o = read(&engine, "demo://big", reader(&"x".repeat(500))).await;
    let id = o.result_id.clone().expect("offloaded");
    let text = o.content.text();
    assert!(
        text.starts_with("[This resource is too large to show here"),
        "{text}"
    );
    assert!(
        text.contains(&id) && text.contains("read_tool_result"),
        "{text}"
    );
    let page = engine
        .call(
            &engine.session(Some("s-1")).unwrap(),
            &call("c2", "read_tool_result", json!({"id": id})),
        )
        .await;
    assert!(page.content.text().starts_with("xxxx"), "{page:?}");
}

#[tokio::test]
async fn a1_without_reduction_a_resource_is_cut_at_the_cap() {
    let engine = Engine::builder(policy("version: 1\ndispatch: {max_result_chars: 10}\n"))
        .build()
        .unwrap();
    let o = read(&engine, "demo://long", reader(&"y".repeat(50))).await;
    assert!(o.truncated, "{o:?}");
    assert_eq!(o.output_chars, 10);
}

#[tokio::test]
async fn a1_the_rewrite_script_does_not_touch_a_read() {
    let engine = Engine::builder(policy(
        "version: 1\nscripts:\n  rewrite:\n    code: '#{uri: \"file:///etc/passwd\"}'\n",
    ))
    .build()
    .unwrap();
    let o = read(&engine, "demo://a", reader("r")).await;
    assert_eq!(o.content.text(), r#"r {"uri":"demo://a"}"#);
}

#[tokio::test]
async fn a1_a_read_without_a_target_is_an_unknown_resource() {
    let engine = Engine::builder(Policy::default()).build().unwrap();
    let session = engine.session(None).unwrap();
    let access = Access::resource("r", "demo://none", None);
    let o = engine
        .access(&session, access, &CancellationToken::new())
        .await;
    assert_eq!(o.error_kind(), Some("unknown_resource"), "{o:?}");
}

#[tokio::test]
async fn a2_a_rule_that_names_tools_does_not_judge_a_read() {
    let engine = Engine::builder(policy(
        "version: 1\nrules:\n  deny:\n    - tools: [\"*\"]\n      reason: no tools today\n",
    ))
    .tool(echo("echo"))
    .build()
    .unwrap();
    let o = read(&engine, "demo://a", reader("r")).await;
    assert!(!o.is_error(), "{o:?}");
    let s = engine.session(None).unwrap();
    let o = engine
        .call(&s, &call("c", "echo", json!({"text": "t"})))
        .await;
    assert_eq!(o.error_kind(), Some("denied"));
}

#[tokio::test]
async fn a2_a_rule_that_names_no_tool_judges_every_kind() {
    let engine = Engine::builder(policy(
        "version: 1\nrules:\n  deny:\n    - args: {uri: \"file:///secret/*\"}\n      reason: secret\n",
    ))
    .build()
    .unwrap();
    let o = read(&engine, "file:///secret/../secret/k", reader("r")).await;
    assert_eq!(o.error_kind(), Some("denied"), "{o:?}");
    assert!(o.content.text().contains("secret"), "{o:?}");
}

#[tokio::test]
async fn a2_allow_rules_that_name_only_tools_let_no_read_through() {
    let engine = Engine::builder(policy(
        "version: 1\nrules:\n  allow:\n    - tools: [echo]\n",
    ))
    .tool(echo("echo"))
    .build()
    .unwrap();
    let o = read(&engine, "demo://a", reader("r")).await;
    assert_eq!(o.error_kind(), Some("denied"), "{o:?}");
    assert!(
        o.content
            .text()
            .contains("none of them judges a resource read"),
        "{o:?}"
    );
    let session = engine.session(None).unwrap();
    let judged = engine.judge(&session, &Access::resource("j", "demo://a", None));
    assert_eq!(judged.map_err(|e| e.kind()), Err("denied"));
}

#[tokio::test]
async fn a2_judge_lets_through_what_the_rules_let_through() {
    let engine = Engine::builder(Policy::default()).build().unwrap();
    let session = engine.session(None).unwrap();
    assert_eq!(
        engine.judge(&session, &Access::resource("j", "demo://a", None)),
        Ok(())
    );
    assert_eq!(
        engine
            .judge(&session, &Access::resource("j", "no scheme", None))
            .map_err(|e| e.kind()),
        Err("invalid_arguments")
    );
}

#[tokio::test]
async fn a2_a_rule_that_names_resources_judges_reads_in_normal_form_and_nothing_else() {
    let engine = Engine::builder(policy(
        r#"
version: 1
rules:
  deny:
    - resources: ["file:///secret/*"]
      reason: secret
"#,
    ))
    .tool(show_args("show"))
    .build()
    .unwrap();
    let o = read(&engine, "FILE:///public/../%73ecret/key", reader("r")).await;
    assert_eq!(o.error_kind(), Some("denied"), "{o:?}");
    assert!(o.content.text().contains("secret"), "{o:?}");
    assert!(
        !read(&engine, "file:///public/key", reader("r"))
            .await
            .is_error()
    );
    let s = engine.session(None).unwrap();
    let tool = engine
        .call(&s, &call("c", "show", json!({"uri": "file:///secret/key"})))
        .await;
    assert!(!tool.is_error(), "a tool call is not a read: {tool:?}");
}

#[tokio::test]
async fn a2_a_rule_that_names_prompts_judges_their_arguments() {
    let engine = Engine::builder(policy(
        r#"
version: 1
rules:
  deny:
    - prompts: ["srv.*"]
      args: {city: "Atlantis"}
      reason: no Atlantis
"#,
    ))
    .build()
    .unwrap();
    let session = engine.session(None).unwrap();
    let get = |city: &str| {
        let mut args = serde_json::Map::new();
        args.insert("city".into(), json!(city));
        Access::prompt("p", "srv.weather", args, Some(reader("m")))
    };
    let o = engine
        .access(&session, get("Atlantis"), &CancellationToken::new())
        .await;
    assert_eq!(o.error_kind(), Some("denied"), "{o:?}");
    let o = engine
        .access(&session, get("Rome"), &CancellationToken::new())
        .await;
    assert!(!o.is_error(), "{o:?}");
    assert!(
        !read(&engine, "srv://Atlantis", reader("r"))
            .await
            .is_error()
    );
}

#[tokio::test]
async fn an_allow_rule_that_names_resources_opens_reads_only() {
    let engine = Engine::builder(policy(
        r#"
version: 1
rules:
  allow:
    - tools: [echo]
    - resources: ["demo://public/*"]
"#,
    ))
    .tool(echo("echo"))
    .build()
    .unwrap();
    assert!(
        !read(&engine, "demo://public/a", reader("r"))
            .await
            .is_error()
    );
    let o = read(&engine, "demo://private/a", reader("r")).await;
    assert_eq!(o.error_kind(), Some("denied"), "{o:?}");
    let session = engine.session(None).unwrap();
    let o = engine
        .access(
            &session,
            Access::prompt("p", "srv.x", Default::default(), Some(reader("m"))),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(
        o.error_kind(),
        Some("denied"),
        "no allow rule names prompts: {o:?}"
    );
}

#[test]
fn aliases_resolve_to_the_real_resource_in_any_spelling_and_to_the_real_prompt() {
    let engine = Engine::builder(policy(
        r#"
version: 1
resources:
  aliases:
    "demo://h/real.md": ["docs://guide"]
prompts:
  aliases:
    srv.weather: [weather]
"#,
    ))
    .build()
    .unwrap();
    assert_eq!(
        engine.alias_target(CallKind::Resource, "DOCS://guide/./"),
        None,
        "a trailing slash is another URI"
    );
    assert_eq!(
        engine.alias_target(CallKind::Resource, "DOCS://Guide"),
        Some("demo://h/real.md")
    );
    assert_eq!(
        engine.alias_target(CallKind::Prompt, "weather"),
        Some("srv.weather")
    );
    assert_eq!(engine.alias_target(CallKind::Tool, "weather"), None);
}

#[test]
fn a_resource_alias_that_is_no_uri_fails_the_build_at_its_entry() {
    let Err(e) = Engine::builder(policy(
        "version: 1\nresources:\n  aliases:\n    \"demo://h/a\": [\"not a uri\"]\n",
    ))
    .build() else {
        panic!("the build fails");
    };
    let text = e.to_string();
    assert!(
        text.contains("resources.aliases") && text.contains("not a URI toolgate can judge"),
        "{text}"
    );
    assert!(text.contains("p.yaml:4"), "{text}");
}

#[test]
fn an_alias_of_two_prompts_fails_the_build() {
    let Err(e) = Engine::builder(policy(
        "version: 1\nprompts:\n  aliases:\n    a.x: [same]\n    b.y: [same]\n",
    ))
    .build() else {
        panic!("the build fails");
    };
    assert!(e.to_string().contains("is an alias of both"), "{e}");
}
