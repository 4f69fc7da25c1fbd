//! SPEC "Names" (N1-N6): checked when an engine is built, before any call.

mod common;

use std::collections::BTreeMap;

use common::*;
use serde_json::json;
use toolgate::{BuildError, Engine};
use toolgate_policy::{AliasSpec, NameProfile, ReductionSettings, SearchSettings};

fn build_err(policy: toolgate::Policy, tools: Vec<&str>) -> String {
    let mut b = Engine::builder(policy);
    for t in tools {
        b = b.tool(echo(t));
    }
    match b.build() {
        Ok(_) => panic!("the build should fail"),
        Err(e) => e.to_string(),
    }
}

fn aliases(tool: &str, names: &[&str], args: &[(&str, &[&str])]) -> BTreeMap<String, AliasSpec> {
    let mut m = BTreeMap::new();
    m.insert(
        tool.to_string(),
        AliasSpec {
            names: names.iter().map(|s| s.to_string()).collect(),
            arguments: args
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect(),
            position: None,
        },
    );
    m
}

#[test]
fn n1_name_with_a_forbidden_character_fails_naming_the_tool_and_the_character() {
    let e = build_err(Default::default(), vec!["web search"]);
    assert!(e.contains("\"web search\""), "{e}");
    assert!(e.contains("' '"), "{e}");
    assert!(e.contains("a native tool"), "{e}");
}

#[test]
fn n1_name_of_129_bytes_fails_and_128_bytes_passes() {
    let e = build_err(Default::default(), vec![&"a".repeat(129)]);
    assert!(e.contains("at most 128 bytes"), "{e}");
    Engine::builder(Default::default())
        .tool(echo(&"a".repeat(128)))
        .build()
        .expect("128 bytes is fine");
}

#[test]
fn n1_empty_name_fails() {
    let e = build_err(Default::default(), vec![""]);
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn n1_non_ascii_name_fails() {
    let e = build_err(Default::default(), vec!["café"]);
    assert!(e.contains("'é'"), "{e}");
}

#[test]
fn n1_dots_dashes_and_underscores_are_allowed() {
    Engine::builder(Default::default())
        .tool(echo("fs.read-file_v2"))
        .build()
        .expect("valid name");
}

#[test]
fn n2_duplicate_names_fail_naming_both_sources() {
    let e = build_err(Default::default(), vec!["echo", "echo"]);
    assert!(e.contains("duplicate tool name \"echo\""), "{e}");
    assert!(
        e.contains("provided by a native tool and by a native tool"),
        "{e}"
    );
}

#[test]
fn n3_read_tool_result_is_reserved_while_reduction_is_on() {
    let p = policy_with(|p| p.reduction = Some(ReductionSettings::default()));
    let e = build_err(p, vec!["read_tool_result"]);
    assert!(e.contains("reserved"), "{e}");
}

#[test]
fn n3_read_tool_result_is_an_ordinary_name_while_reduction_is_off() {
    Engine::builder(Default::default())
        .tool(echo("read_tool_result"))
        .build()
        .expect("not reserved");
}

#[test]
fn n3_tool_search_is_reserved_while_search_is_on() {
    let p = policy_with(|p| p.search = Some(SearchSettings::default()));
    let e = build_err(p, vec!["tool_search"]);
    assert!(e.contains("reserved"), "{e}");
}

#[test]
fn n3_reserved_names_cannot_be_aliases() {
    let p = policy_with(|p| {
        p.reduction = Some(ReductionSettings::default());
        p.aliases = aliases("echo", &["read_tool_result"], &[]);
    });
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("reserved"), "{e}");
}

#[test]
fn n4_alias_for_an_unknown_tool_fails() {
    let p = policy_with(|p| p.aliases = aliases("ecko", &["say"], &[]));
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("\"ecko\" is not a registered tool"), "{e}");
    assert!(e.contains("did you mean echo"), "{e}");
}

#[test]
fn n4_alias_equal_to_a_tool_name_fails() {
    let p = policy_with(|p| p.aliases = aliases("echo", &["other"], &[]));
    let e = build_err(p, vec!["echo", "other"]);
    assert!(e.contains("already the name of a tool"), "{e}");
}

#[test]
fn n4_alias_equal_to_another_alias_fails() {
    let p = policy_with(|p| {
        let mut a = aliases("echo", &["say"], &[]);
        a.extend(aliases("other", &["say"], &[]));
        p.aliases = a;
    });
    let e = build_err(p, vec!["echo", "other"]);
    assert!(e.contains("already an alias of"), "{e}");
}

#[test]
fn n4_blank_alias_fails() {
    let p = policy_with(|p| p.aliases = aliases("echo", &["  "], &[]));
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("is blank"), "{e}");
}

#[test]
fn n4_whitespace_padded_alias_fails() {
    let p = policy_with(|p| p.aliases = aliases("echo", &[" say"], &[]));
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("surrounding whitespace"), "{e}");
}

#[test]
fn n4_argument_alias_equal_to_a_real_parameter_fails() {
    let p = policy_with(|p| p.aliases = aliases("echo", &[], &[("text", &["text"])]));
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("is itself a parameter"), "{e}");
}

#[test]
fn n4_argument_alias_given_twice_in_one_tool_fails() {
    let p = policy_with(|p| {
        p.aliases = aliases("echo", &[], &[("text", &["t"]), ("other", &["t"])]);
    });
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("given for both"), "{e}");
}

#[test]
fn n4_the_same_argument_alias_under_two_tools_is_fine() {
    let p = policy_with(|p| {
        let mut a = aliases("echo", &[], &[("text", &["t"])]);
        a.extend(aliases("other", &[], &[("text", &["t"])]));
        p.aliases = a;
    });
    Engine::builder(p)
        .tool(echo("echo"))
        .tool(echo("other"))
        .build()
        .expect("fine");
}

#[test]
fn n5_negative_timeout_in_a_policy_file_fails_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let err = toolgate_policy::load_str(
        "version: 1\ndispatch:\n  timeout: -5s\n",
        &dir.path().join("p.yaml"),
    )
    .expect_err("negative timeout");
    let text = err.to_string();
    assert!(text.contains("p.yaml:3:"), "{text}");
}

#[test]
fn n5_negative_reduction_size_in_a_policy_file_fails_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let err = toolgate_policy::load_str(
        "version: 1\nreduction:\n  max_result_bytes: -1\n",
        &dir.path().join("p.yaml"),
    )
    .expect_err("negative size");
    assert!(err.to_string().contains("p.yaml:3:"), "{err}");
}

fn build_ok(policy: toolgate::Policy, tools: Vec<&str>) -> Engine {
    let mut b = Engine::builder(policy);
    for t in tools {
        b = b.tool(echo(t));
    }
    b.build().expect("the build should succeed")
}

fn visible_names(engine: &Engine) -> Vec<String> {
    let session = engine.session(None).unwrap();
    let mut names: Vec<String> = engine
        .visible_tools(&session)
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

fn openai() -> toolgate::Policy {
    policy_with(|p| p.name_profile = NameProfile::Openai)
}

/// What OpenAI accepts as a function name.
fn legal_for_openai(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[test]
fn n6_openai_profile_shows_a_dotted_name_with_underscores() {
    let engine = build_ok(openai(), vec!["fs.read_file", "echo"]);
    assert_eq!(visible_names(&engine), ["echo", "fs_read_file"]);
}

#[test]
fn n6_anthropic_profile_shows_a_dotted_name_with_underscores() {
    let p = policy_with(|p| p.name_profile = NameProfile::Anthropic);
    let engine = build_ok(p, vec!["fs.read_file"]);
    assert_eq!(visible_names(&engine), ["fs_read_file"]);
}

#[test]
fn n6_mcp_profile_is_the_default_and_keeps_dots() {
    assert_eq!(toolgate::Policy::default().name_profile, NameProfile::Mcp);
    let engine = build_ok(Default::default(), vec!["fs.read"]);
    assert_eq!(visible_names(&engine), ["fs.read"]);
}

#[tokio::test]
async fn n6_a_call_with_the_mapped_name_runs_the_real_tool() {
    let engine = build_ok(openai(), vec!["fs.read_file"]);
    let o = one(&engine, "fs_read_file", json!({"text": "hi"})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(o.content.text(), "hi");
}

#[tokio::test]
async fn d8_outcomes_and_events_carry_the_mapped_and_the_real_name() {
    let (tx, rx) = std::sync::mpsc::channel();
    let engine = Engine::builder(openai())
        .tool(echo("fs.read_file"))
        .on_event(move |e| {
            let _ = tx.send((e.model_name.clone(), e.tool_name.clone()));
        })
        .build()
        .unwrap();
    let o = one(&engine, "fs_read_file", json!({"text": "hi"})).await;
    assert_eq!(o.model_name, "fs_read_file");
    assert_eq!(o.tool_name, "fs.read_file");
    let events: Vec<(String, String)> = rx.try_iter().collect();
    assert_eq!(events.len(), 2, "start and end: {events:?}");
    for e in events {
        assert_eq!(e, ("fs_read_file".to_string(), "fs.read_file".to_string()));
    }
}

#[tokio::test]
async fn n6_scripts_see_the_real_tool_name_and_the_mapped_model_name() {
    let p = policy_with(|p| {
        p.name_profile = NameProfile::Openai;
        p.scripts.before = Some(script(
            r#"if tool == "fs.read_file" && model_name == "fs_read_file" { () } else { "names: " + tool + " / " + model_name }"#,
        ));
    });
    let engine = build_ok(p, vec!["fs.read_file"]);
    let o = one(&engine, "fs_read_file", json!({"text": "ok"})).await;
    assert!(!o.is_error(), "{}", o.content.text());
}

#[tokio::test]
async fn n6_an_unmapped_real_name_is_unknown_and_the_mapped_name_is_suggested_first() {
    let engine = build_ok(openai(), vec!["fs.read_file", "fs_read_files_all"]);
    let o = one(&engine, "fs.read_file", json!({"text": "hi"})).await;
    assert_eq!(o.error_kind(), Some("unknown_tool"));
    match &o.error {
        Some(toolgate::CallError::UnknownTool { suggestions, .. }) => {
            assert_eq!(
                suggestions.first().map(String::as_str),
                Some("fs_read_file")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn n6_unknown_tool_suggestions_list_model_facing_names() {
    let engine = build_ok(openai(), vec!["fs.read_file"]);
    let o = one(&engine, "fs_reed_file", json!({})).await;
    let text = o.content.text();
    assert!(text.contains("fs_read_file"), "{text}");
    assert!(!text.contains("fs.read_file"), "{text}");
}

#[test]
fn n6_names_that_collide_after_mapping_fail_naming_both_tools() {
    let e = build_err(openai(), vec!["fs.read", "fs_read"]);
    assert!(e.contains("\"fs_read\""), "{e}");
    assert!(e.contains("fs.read (a native tool)"), "{e}");
    assert!(e.contains("fs_read (a native tool)"), "{e}");
    assert!(e.contains("openai"), "{e}");
}

#[test]
fn n6_openai_shortens_a_name_over_64_bytes_to_a_stable_legal_name() {
    let long = format!("catalog.{}", "x".repeat(80));
    let first = visible_names(&build_ok(openai(), vec![&long]));
    let again = visible_names(&build_ok(openai(), vec![&long]));
    assert_eq!(first, again, "the same name maps the same way every build");
    let short = &first[0];
    assert_eq!(short.len(), 64, "{short}");
    assert!(legal_for_openai(short), "{short}");
    assert!(short.starts_with("catalog_xxx"), "{short}");
}

#[test]
fn n6_two_long_names_with_one_prefix_stay_apart_under_openai() {
    let a = format!("{}_a", "x".repeat(70));
    let b = format!("{}_b", "x".repeat(70));
    let names = visible_names(&build_ok(openai(), vec![&a, &b]));
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1]);
    assert!(names.iter().all(|n| legal_for_openai(n)), "{names:?}");
}

#[test]
fn n6_anthropic_keeps_names_of_65_to_128_bytes() {
    let p = policy_with(|p| p.name_profile = NameProfile::Anthropic);
    let long = "a".repeat(100);
    assert_eq!(visible_names(&build_ok(p, vec![&long])), [long]);
}

#[tokio::test]
async fn n6_aliases_are_mapped_by_the_profile_too() {
    let p = policy_with(|p| {
        p.name_profile = NameProfile::Openai;
        p.aliases = aliases("echo", &["say.it"], &[]);
    });
    let engine = build_ok(p, vec!["echo"]);
    let o = one(&engine, "say_it", json!({"text": "hi"})).await;
    assert!(!o.is_error(), "{:?}", o.error);
    assert_eq!(o.tool_name, "echo");
}

#[test]
fn n6_an_alias_that_maps_onto_a_tool_name_fails() {
    let p = policy_with(|p| {
        p.name_profile = NameProfile::Openai;
        p.aliases = aliases("echo", &["fs.read"], &[]);
    });
    let e = build_err(p, vec!["echo", "fs.read"]);
    assert!(e.contains("already the name of a tool"), "{e}");
}

#[test]
fn n3_a_name_that_maps_onto_a_reserved_name_is_reserved_too() {
    let p = policy_with(|p| {
        p.name_profile = NameProfile::Openai;
        p.reduction = Some(ReductionSettings::default());
    });
    let e = build_err(p, vec!["read_tool.result"]);
    assert!(e.contains("reserved"), "{e}");
}

#[tokio::test]
async fn d4_unknown_tool_suggestions_catch_transposed_letters() {
    let engine = Engine::builder(Default::default())
        .tool(echo("echo"))
        .tool(failer("fail"))
        .build()
        .unwrap();
    for (typo, meant) in [("ehco", "echo"), ("fial", "fail")] {
        let o = one(&engine, typo, json!({})).await;
        match &o.error {
            Some(toolgate::CallError::UnknownTool { suggestions, .. }) => {
                assert_eq!(suggestions, &[meant.to_string()], "{typo}");
            }
            other => panic!("{typo}: {other:?}"),
        }
    }
}

#[test]
fn build_errors_are_typed() {
    let r = Engine::builder(Default::default())
        .tool(echo("a b"))
        .build();
    assert!(matches!(r, Err(BuildError::InvalidName { .. })));
}

#[test]
fn n6_a_plugin_tool_that_collides_after_mapping_fails_at_its_plugin_entry() {
    let dir = tempfile::tempdir().unwrap();
    let policy = yaml_policy(
        "version: 1\nname_profile: openai\nplugins:\n  - name: fs\n    config: {root: \".\"}\n",
        dir.path(),
    );
    let e = build_err(policy, vec!["fs_read_file"]);
    assert!(e.contains("policy.yaml:4:5: "), "{e}");
    assert!(e.contains("fs_read_file (a native tool)"), "{e}");
    assert!(e.contains("fs.read_file (plugin fs"), "{e}");
}

proptest::proptest! {
    /// The search crate cannot depend on the policy crate (which owns N1), so `select:` keeps a
    /// copy of the rule; this keeps the two in step.
    #[test]
    fn n1_search_select_names_follow_the_policy_name_rule(name in "[A-Za-z0-9_.\\- /é]{0,130}") {
        proptest::prop_assert_eq!(
            toolgate_search::is_valid_name(&name),
            toolgate_policy::check_tool_name(&name).is_ok(),
            "{:?}", name
        );
    }
}
