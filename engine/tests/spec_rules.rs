//! SPEC G1 (fix), D4, D5, G8: declarative rules judge the arguments the tool will receive,
//! path arguments in normalised form; unknown names and built-in tools are not hidden by an
//! allow list; the rules of every matching override apply.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::json;
use toolgate::Engine;
use toolgate_policy::{CharCap, ReductionSettings, Rule, Rules, SearchSettings, ToolOverride};

/// Strips one leading `/` from `args.path` (or `args.text`), as a careless rewrite might.
const STRIP_SLASH: &str = r#"
let a = args;
if "path" in a && a.path.starts_with("/") { a.path = a.path.sub_string(1); }
if "text" in a && a.text.starts_with("/") { a.text = a.text.sub_string(1); }
a
"#;

fn paths_rule(arg: &str, pattern: &str) -> Rule {
    Rule {
        paths: BTreeMap::from([(arg.to_string(), pattern.parse().expect("a valid path glob"))]),
        reason: Some("secrets are off limits".into()),
        ..Rule::default()
    }
}

#[tokio::test]
async fn g1_a_rewrite_cannot_turn_a_denied_call_into_an_allowed_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let p = policy_with(|p| {
        p.rules.deny.push(Rule {
            args: BTreeMap::from([("path".into(), glob("secrets/*"))]),
            reason: Some("secrets are off limits".into()),
            ..Rule::default()
        });
        p.scripts.rewrite = Some(script(STRIP_SLASH));
    });
    let engine = Engine::builder(p)
        .tool(counter("count", runs.clone()))
        .build()
        .unwrap();
    let o = one(&engine, "count", json!({"path": "/secrets/id.pem"})).await;
    assert_eq!(o.error_kind(), Some("denied"), "{:?}", o.content);
    assert!(o.content.text().contains("secrets are off limits"));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool did not run");
}

#[tokio::test]
async fn g1_the_before_hook_sees_the_rewritten_arguments() {
    let p = policy_with(|p| {
        p.scripts.rewrite = Some(script(STRIP_SLASH));
        p.scripts.before = Some(script(
            r#"if args.path == "etc/passwd" { "saw the rewritten path" } else { () }"#,
        ));
    });
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    let o = one(&engine, "show", json!({"path": "/etc/passwd"})).await;
    assert_eq!(o.error_kind(), Some("denied"));
    assert!(o.content.text().contains("saw the rewritten path"));
}

#[tokio::test]
async fn g1_a_paths_rule_denies_every_spelling_of_a_protected_path() {
    let p = policy_with(|p| {
        p.rules.deny.push(paths_rule("path", "secrets/*"));
        p.scripts.rewrite = Some(script(STRIP_SLASH));
    });
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    for path in [
        "secrets/x",
        "./secrets/x",
        "docs/../secrets/x",
        "secrets//x/",
        "./secrets/./x/.",
        "secrets/deeper/x",
        // The rewrite turns it into secrets/id.pem, which is what the rule judges.
        "/secrets/id.pem",
    ] {
        let o = one(&engine, "show", json!({ "path": path })).await;
        assert_eq!(o.error_kind(), Some("denied"), "{path:?}: {:?}", o.content);
        assert!(
            o.content.text().contains("secrets are off limits"),
            "{path:?}"
        );
    }
    for path in ["docs/x", "secrets", "docs/secrets/x", "sub/../docs/x"] {
        let o = one(&engine, "show", json!({ "path": path })).await;
        assert!(
            !o.is_error(),
            "{path:?} is not under secrets/: {:?}",
            o.content
        );
    }
}

#[tokio::test]
async fn g1_a_path_that_cannot_be_normalised_denies_the_call_with_its_reason() {
    let p = policy_with(|p| p.rules.deny.push(paths_rule("path", "secrets/*")));
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    for (path, why) in [
        (json!("../secrets/x"), "climbs above"),
        (json!("docs/../../x"), "climbs above"),
        (json!("/secrets/x"), "absolute"),
        (json!("secrets\u{0}/x"), "NUL"),
        (json!("secrets\\x"), "backslash"),
        (json!(42), "must be a path"),
        (json!(["secrets/x"]), "must be a path"),
    ] {
        let o = one(&engine, "show", json!({ "path": path })).await;
        assert_eq!(o.error_kind(), Some("denied"), "{path}: {:?}", o.content);
        assert!(o.content.text().contains(why), "{path}: {:?}", o.content);
    }
    let o = one(&engine, "show", json!({})).await;
    assert!(!o.is_error(), "a missing path argument is not judged");
}

#[tokio::test]
async fn g1_a_path_rule_of_another_tool_does_not_judge_this_one() {
    let p = policy_with(|p| {
        let mut rule = paths_rule("path", "secrets/*");
        rule.tools = vec![glob("fs.*")];
        p.rules.deny.push(rule);
    });
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    let o = one(&engine, "show", json!({"path": "/anything/../.."})).await;
    assert!(!o.is_error(), "{:?}", o.content);
}

#[tokio::test]
async fn g1_an_allow_paths_rule_admits_only_paths_that_stay_inside() {
    let p = policy_with(|p| p.rules.allow.push(paths_rule("path", "docs/**")));
    let engine = Engine::builder(p).tool(show_args("show")).build().unwrap();
    assert!(
        !one(&engine, "show", json!({"path": "./docs//a.md"}))
            .await
            .is_error()
    );
    for path in ["docs/../secrets/x", "docs", "other/docs/a"] {
        let o = one(&engine, "show", json!({ "path": path })).await;
        assert_eq!(o.error_kind(), Some("denied"), "{path:?}");
    }
}

#[tokio::test]
async fn d4_an_allow_list_does_not_turn_an_unknown_name_into_a_denial() {
    let p = policy_with(|p| {
        p.rules.allow.push(Rule {
            tools: vec![glob("echo")],
            ..Rule::default()
        })
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "ecko", json!({})).await;
    assert_eq!(o.error_kind(), Some("unknown_tool"), "{:?}", o.content);
    assert!(
        o.content.text().contains("echo"),
        "suggests: {:?}",
        o.content
    );
}

fn fs_only() -> Rules {
    Rules {
        allow: vec![Rule {
            tools: vec![glob("fs.*")],
            ..Rule::default()
        }],
        deny: vec![Rule {
            tools: vec![glob("*")],
            sessions: vec![glob("guest-*")],
            ..Rule::default()
        }],
    }
}

#[tokio::test]
async fn d5_an_allow_list_does_not_hide_read_tool_result_from_the_offload_notice() {
    let policy = policy_with(|p| {
        p.reduction = Some(ReductionSettings {
            store: Some("memory://".into()),
            max_result_bytes: 100,
            ..ReductionSettings::default()
        });
        p.rules = fs_only();
    });
    let engine = Engine::builder(policy)
        .tool(echo("fs.echo"))
        .build()
        .unwrap();
    let text = "x".repeat(300);
    let o = one(&engine, "fs.echo", json!({ "text": text })).await;
    let id = o.result_id.clone().expect("offloaded");
    assert!(o.content.text().contains("read_tool_result"));
    let read = one(&engine, "read_tool_result", json!({ "id": id })).await;
    assert!(!read.is_error(), "{:?}", read.content);
    assert!(read.content.text().starts_with(&text));
}

#[tokio::test]
async fn d5_an_allow_list_does_not_hide_tool_search() {
    let policy = policy_with(|p| {
        p.search = Some(SearchSettings::default());
        p.rules = fs_only();
    });
    let engine = Engine::builder(policy)
        .tool(echo("fs.echo"))
        .build()
        .unwrap();
    let o = one(&engine, "tool_search", json!({"query": "echo"})).await;
    assert_ne!(o.error_kind(), Some("denied"), "{:?}", o.content);
}

#[tokio::test]
async fn d5_a_rule_that_names_a_built_in_exactly_still_applies_to_it() {
    let policy = policy_with(|p| {
        p.search = Some(SearchSettings::default());
        p.rules.deny.push(Rule {
            tools: vec![glob("tool_search")],
            reason: Some("no searching".into()),
            ..Rule::default()
        });
    });
    let engine = Engine::builder(policy).tool(echo("echo")).build().unwrap();
    let o = one(&engine, "tool_search", json!({"query": "echo"})).await;
    assert_eq!(o.error_kind(), Some("denied"));
    assert!(o.content.text().contains("no searching"));
    assert_eq!(engine.warnings().len(), 1, "{:?}", engine.warnings());
    assert!(engine.warnings()[0].contains("tool_search"));
}

fn over(pattern: &str) -> ToolOverride {
    ToolOverride {
        pattern: glob(pattern),
        timeout: None,
        max_result_chars: None,
        sequential_group: None,
        rules: Rules::default(),
        principals: Vec::new(),
        groups: Vec::new(),
        position: None,
    }
}

#[tokio::test]
async fn g8_a_more_specific_override_adds_to_the_rules_and_never_drops_them() {
    let mut glob = over("fs.*");
    glob.max_result_chars = Some(CharCap::Chars(5));
    glob.rules.deny.push(paths_rule("path", "*.pem"));
    let mut exact = over("fs.show");
    exact.timeout = Some(None);
    exact.rules.deny.push(paths_rule("path", ".env"));
    let p = policy_with(|p| p.tools = vec![glob, exact]);
    let engine = Engine::builder(p)
        .tool(show_args("fs.show"))
        .build()
        .unwrap();
    let e = engine.explain("fs.show");
    assert_eq!(e.timeout, None, "from the exact override");
    assert_eq!(
        e.max_result_chars,
        CharCap::Chars(5),
        "field by field: the glob's cap stays"
    );
    assert_eq!(
        e.rules_from,
        ["tools.\"fs.*\".rules", "tools.\"fs.show\".rules"]
    );
    for path in ["key.pem", "sub/.env"] {
        let o = one(&engine, "fs.show", json!({ "path": path })).await;
        assert_eq!(o.error_kind(), Some("denied"), "{path:?}");
    }
}

#[tokio::test]
async fn g8_explain_under_reduction_names_the_offload_size_not_the_character_cap() {
    let policy = policy_with(|p| {
        p.reduction = Some(ReductionSettings {
            store: Some("memory://".into()),
            max_result_bytes: 1234,
            ..ReductionSettings::default()
        })
    });
    let engine = Engine::builder(policy).tool(echo("echo")).build().unwrap();
    let e = engine.explain("echo");
    assert!(!e.max_result_chars_applies);
    assert_eq!(e.max_result_bytes, Some(1234));
    assert_eq!(
        e.max_result_bytes_from.as_deref(),
        Some("reduction.max_result_bytes")
    );
    let reader = engine.explain("read_tool_result");
    assert_eq!(reader.max_result_bytes, None, "its output is never reduced");
}

#[tokio::test]
async fn d4_explain_lists_no_rules_for_an_unknown_name() {
    let p = policy_with(|p| {
        p.rules.allow.push(Rule {
            tools: vec![glob("echo")],
            ..Rule::default()
        })
    });
    let engine = Engine::builder(p).tool(echo("echo")).build().unwrap();
    assert_eq!(engine.explain("echo").rules_from, ["rules"]);
    assert!(engine.explain("ecko").rules_from.is_empty());
}
