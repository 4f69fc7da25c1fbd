//! SPEC "Names" (N1-N6): checked when an engine is built, before any call.

mod common;

use std::collections::BTreeMap;

use common::*;
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
fn n5_result_limit_below_minus_one_fails() {
    let p = policy_with(|p| p.dispatch.max_result_chars = -2);
    let e = build_err(p, vec![]);
    assert!(e.contains("max_result_chars is -2"), "{e}");
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

#[test]
fn n6_openai_profile_rejects_dots_and_names_over_64_bytes() {
    let p = policy_with(|p| p.name_profile = NameProfile::Openai);
    let e = build_err(p.clone(), vec!["fs.read"]);
    assert!(e.contains("openai"), "{e}");
    let e = build_err(p.clone(), vec![&"a".repeat(65)]);
    assert!(e.contains("64 bytes"), "{e}");
    Engine::builder(p)
        .tool(echo(&"a".repeat(64)))
        .build()
        .expect("64 bytes is fine");
}

#[test]
fn n6_anthropic_profile_rejects_dots() {
    let p = policy_with(|p| p.name_profile = NameProfile::Anthropic);
    let e = build_err(p, vec!["fs.read"]);
    assert!(e.contains("anthropic"), "{e}");
}

#[test]
fn n6_mcp_profile_is_the_default_and_allows_dots() {
    assert_eq!(toolgate::Policy::default().name_profile, NameProfile::Mcp);
    Engine::builder(Default::default())
        .tool(echo("fs.read"))
        .build()
        .expect("mcp allows dots");
}

#[test]
fn n6_aliases_are_checked_against_the_profile_too() {
    let p = policy_with(|p| {
        p.name_profile = NameProfile::Openai;
        p.aliases = aliases("echo", &["say.it"], &[]);
    });
    let e = build_err(p, vec!["echo"]);
    assert!(e.contains("openai"), "{e}");
}

#[test]
fn build_errors_are_typed() {
    let r = Engine::builder(Default::default())
        .tool(echo("a b"))
        .build();
    assert!(matches!(r, Err(BuildError::InvalidName { .. })));
}
