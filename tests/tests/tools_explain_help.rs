//! `toolgate tools`, `toolgate explain`, and the help of every command.

use toolgate_e2e::{repo_path, testkit_policy, toolgate};

const TESTKIT_TOOLS: [&str; 14] = [
    "big_output",
    "connect",
    "crash",
    "echo",
    "escape",
    "fail",
    "forge_frame",
    "huge_output",
    "multimodal",
    "panic",
    "progress",
    "sleep",
    "stream",
    "stubborn_sleep",
];

#[test]
fn tools_json_lists_the_testkit_tools_in_the_openai_format() {
    let policy = testkit_policy();
    let run = toolgate(&["tools", "--policy", &policy, "--json"]);
    run.assert_code(0);
    let tools = run.json();
    let mut names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["type"], "function");
            let f = &t["function"];
            assert!(f["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(f["parameters"]["type"], "object", "{t}");
            f["name"].as_str().unwrap()
        })
        .collect();
    names.sort();
    assert_eq!(names, TESTKIT_TOOLS);
}

#[test]
fn tools_json_carries_each_tool_schema() {
    let policy = testkit_policy();
    let tools = toolgate(&["tools", "--policy", &policy, "--json"]).json();
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "echo")
        .unwrap();
    assert_eq!(
        echo["function"]["parameters"]["properties"]["text"]["type"],
        "string"
    );
}

#[test]
fn tools_prints_each_name_with_its_description_and_schema() {
    let policy = testkit_policy();
    let run = toolgate(&["tools", "--policy", &policy]);
    run.assert_code(0);
    for name in TESTKIT_TOOLS {
        assert!(
            run.stdout.lines().any(|l| l == name),
            "{name} missing:\n{}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("parameters: {"), "{}", run.stdout);
}

#[test]
fn g8_explain_names_where_each_setting_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        "version: 1\nplugins: [{name: testkit}]\ndispatch: {timeout: 2s}\ntools:\n  \"s*\": {timeout: 5s, max_result_chars: 10}\n  sleep: {timeout: 9s}\n",
    )
    .unwrap();
    let run = toolgate(&[
        "explain",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
        "sleep",
    ]);
    run.assert_code(0);
    let e = run.json();
    assert_eq!(e["timeout"], "9s", "the exact name is most specific: {e}");
    assert_eq!(e["timeout_from"], "tools.\"sleep\".timeout");
    assert_eq!(e["max_result_chars"], 10);
    assert_eq!(e["max_result_chars_from"], "tools.\"s*\".max_result_chars");
    assert_eq!(e["known_tool"], true);
}

#[test]
fn explain_in_text_shows_the_settings_and_their_sources() {
    let policy = testkit_policy();
    let run = toolgate(&["explain", "--policy", &policy, "sleep"]);
    run.assert_code(0);
    assert!(run.stdout.contains("timeout"), "{}", run.stdout);
    assert!(run.stdout.contains("2s"), "{}", run.stdout);
    assert!(run.stdout.contains("dispatch.timeout"), "{}", run.stdout);
}

/// What both OpenAI and Anthropic accept as a tool name.
fn legal_for_openai_and_anthropic(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[test]
fn the_built_in_policy_offers_only_names_openai_and_anthropic_accept() {
    let run = toolgate(&["tools", "--json"]);
    run.assert_code(0);
    let names: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"fs_read_file".to_string()), "{names:?}");
    for name in &names {
        assert!(legal_for_openai_and_anthropic(name), "{name}");
    }
}

#[test]
fn tools_json_stays_in_the_provider_format_and_annotate_adds_the_real_name() {
    let plain = toolgate(&["tools", "--json"]).json();
    for t in plain.as_array().unwrap() {
        let mut keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["function", "type"], "{t}");
    }
    let run = toolgate(&["tools", "--json", "--annotate"]);
    run.assert_code(0);
    let annotated = run.json();
    let read = annotated
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "fs_read_file")
        .unwrap();
    assert_eq!(read["x-toolgate"]["tool_name"], "fs.read_file", "{read}");
    assert!(
        read["x-toolgate"]["source"]
            .as_str()
            .unwrap()
            .contains("plugin fs"),
        "{read}"
    );
}

#[test]
fn tools_in_text_shows_the_real_name_beside_a_mapped_one() {
    let run = toolgate(&["tools"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains("fs_read_file (tool fs.read_file)"),
        "{}",
        run.stdout
    );
}

#[test]
fn explain_takes_the_model_facing_or_the_real_name_and_shows_both() {
    for name in ["fs_read_file", "fs.read_file"] {
        let e = toolgate(&["explain", "--json", name]).json();
        assert_eq!(e["known_tool"], true, "{name}: {e}");
        assert_eq!(e["model_name"], "fs_read_file", "{name}: {e}");
        assert_eq!(e["tool_name"], "fs.read_file", "{name}: {e}");
    }
    let text = toolgate(&["explain", "fs_read_file"]).stdout;
    assert!(
        text.starts_with("fs_read_file (tool fs.read_file, from plugin fs"),
        "{text}"
    );
    let text = toolgate(&["explain", "fs.read_file"]).stdout;
    assert!(
        text.starts_with("fs.read_file (the model calls it fs_read_file; from plugin fs"),
        "{text}"
    );
}

#[test]
fn explain_an_alias_explains_its_tool() {
    let policy = repo_path("policies/examples/aliases.yaml");
    let run = toolgate(&["explain", "--policy", policy.to_str().unwrap(), "say"]);
    run.assert_code(0);
    assert!(run.stdout.contains("alias of echo"), "{}", run.stdout);
}

#[test]
fn every_command_has_help_with_an_example() {
    for command in [
        "validate",
        "tools",
        "call",
        "run",
        "explain",
        "prepare",
        "results",
        "results list",
        "results show",
        "results read",
        "results delete",
        "results prune",
        "search",
        "index",
        "index build",
    ] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let run = toolgate(&args);
        run.assert_code(0);
        assert!(
            run.stdout.contains("Examples:") && run.stdout.contains(&format!("toolgate {command}")),
            "{command} --help has no example:\n{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("Exit codes:"),
            "{command} --help: {}",
            run.stdout
        );
    }
}

#[test]
fn the_top_level_help_lists_the_commands_and_exit_codes() {
    let run = toolgate(&["--help"]);
    run.assert_code(0);
    for command in [
        "validate", "tools", "call", "run", "explain", "prepare", "results", "search", "index",
    ] {
        assert!(run.stdout.contains(command), "{}", run.stdout);
    }
    assert!(run.stdout.contains("Exit codes:"));
    assert!(
        run.stdout
            .contains("6  `results` only: the result store failed"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_unknown_option_is_a_usage_error() {
    let run = toolgate(&["tools", "--no-such-option"]);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("--no-such-option"), "{}", run.stderr);
}

#[test]
fn logs_go_to_stderr_and_never_to_stdout() {
    let policy = testkit_policy();
    let run = toolgate(&[
        "-vv",
        "call",
        "--policy",
        &policy,
        "echo",
        r#"{"text": "only this"}"#,
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout, "only this\n");
    assert!(!run.stderr.is_empty(), "-vv logs something on stderr");
}
