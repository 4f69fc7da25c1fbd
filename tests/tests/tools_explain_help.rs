//! `toolgate tools`, `toolgate explain`, and the help of every command.

use toolgate_e2e::{repo_path, testkit_policy, toolgate};

const TESTKIT_TOOLS: [&str; 8] = [
    "big_output",
    "echo",
    "fail",
    "multimodal",
    "panic",
    "progress",
    "sleep",
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
