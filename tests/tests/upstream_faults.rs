//! An upstream MCP server costs only its own tools (issue 25, items 22-24), through the
//! `toolgate` program: a server that lists tools toolgate cannot offer, a policy alias to a
//! server that is missing, an answer over the message limit, and what a server gets to see of
//! the gateway (its environment) and the model of the server (its stderr). The servers are the
//! tests' own `mcp/tests/fixtures/fake_mcp_server.py`, made hostile by its options.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::{Run, Toolgate, conversation, repo_path, venv_python};

fn fake_command(args: &[&str]) -> String {
    let mut words = vec![
        venv_python().display().to_string(),
        repo_path("mcp/tests/fixtures/fake_mcp_server.py")
            .display()
            .to_string(),
    ];
    words.extend(args.iter().map(|a| a.to_string()));
    serde_json::to_string(&words).expect("strings serialize")
}

/// Writes `yaml` as `policy.yaml` in a fresh folder.
fn policy(yaml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, yaml).expect("the policy is written");
    (dir, path)
}

/// Writes `tools` (what the server lists after its own tools) into `dir`.
fn tools_file(dir: &Path, tools: &Value) -> String {
    let path = dir.join("tools.json");
    std::fs::write(&path, tools.to_string()).expect("the tool list is written");
    path.display().to_string()
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn run(args: &[&str]) -> Run {
    Toolgate::new(args).run_within(Duration::from_secs(120))
}

/// The model-facing names `toolgate tools --json` lists.
fn tool_names(run: &Run) -> Vec<String> {
    run.json()
        .as_array()
        .unwrap_or_else(|| panic!("a list of tools: {run:#?}"))
        .iter()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn echo_tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}})
}

// --- item 22: tools toolgate cannot offer ----------------------------------------------------

#[test]
fn upstream_tools_whose_names_collide_under_the_profile_cost_only_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools_file(dir.path(), &json!([echo_tool("a.b"), echo_tool("a_b")]));
    let (_policy_dir, path) = policy(&format!(
        "version: 1\nname_profile: openai\nplugins:\n  - name: testkit\nmcp_servers:\n  - name: hostile\n    command: {}\n  - name: good\n    command: {}\n",
        fake_command(&["--tools-file", &tools]),
        fake_command(&[]),
    ));
    let call = run(&[
        "call",
        "--policy",
        arg(&path),
        "good_echo",
        r#"{"text": "still here"}"#,
    ]);
    call.assert_code(0).assert_no_panic();
    assert_eq!(call.stdout, "still here\n", "{call:#?}");

    let listed = run(&["tools", "--json", "--policy", arg(&path)]);
    listed.assert_code(0);
    let names = tool_names(&listed);
    // `echo` is the testkit plugin's.
    for kept in ["hostile_echo", "good_echo", "echo"] {
        assert!(names.iter().any(|n| n == kept), "{kept} missing: {names:?}");
    }
    assert!(
        !names.iter().any(|n| n == "hostile_a_b"),
        "a name two tools share is offered: {names:?}"
    );
    for tool in ["hostile.a.b", "hostile.a_b"] {
        assert!(
            listed.stderr.contains(tool) && listed.stderr.contains("hostile_a_b"),
            "no warning names {tool}: {listed:#?}"
        );
    }
}

#[test]
fn upstream_tools_with_invalid_names_or_schemas_are_left_out_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let huge: serde_json::Map<String, Value> = (0..200_000)
        .map(|i| {
            (
                format!("p{i:06}"),
                json!({"type": "string", "description": "padding padding padding"}),
            )
        })
        .collect();
    let tools = tools_file(
        dir.path(),
        &json!([
            echo_tool(""),
            {"name": "listed_schema", "inputSchema": [1, 2, 3]},
            {"name": "bad_type", "inputSchema": {"type": 5}},
            {"name": "huge", "inputSchema": {"type": "object", "properties": huge}},
            echo_tool("fine"),
        ]),
    );
    assert!(std::fs::metadata(&tools).unwrap().len() > 10_000_000);
    let (_policy_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: hostile\n    command: {}\n",
        fake_command(&["--tools-file", &tools]),
    ));
    let listed = run(&["tools", "--json", "--policy", arg(&path)]);
    listed.assert_code(0).assert_no_panic();
    let names = tool_names(&listed);
    for kept in ["hostile.echo", "hostile.fine"] {
        assert!(names.iter().any(|n| n == kept), "{kept} missing: {names:?}");
    }
    for left_out in [
        "hostile.",
        "hostile.listed_schema",
        "hostile.bad_type",
        "hostile.huge",
    ] {
        assert!(
            !names.iter().any(|n| n == left_out),
            "{left_out:?} is offered: {names:?}"
        );
    }
    for warning in [
        "its tool \"\" is left out",
        "its tool \"listed_schema\" is left out",
        "its tool \"bad_type\" is left out",
        "its tool \"huge\" is left out",
    ] {
        assert!(
            listed.stderr.contains(warning),
            "no warning {warning:?}: {}",
            listed.stderr
        );
    }
}

#[test]
fn an_alias_to_a_tool_of_a_missing_upstream_does_not_stop_serve() {
    let (_dir, path) = policy(
        "version: 1\naliases:\n  ghost.get_time: {names: [now]}\nplugins:\n  - name: testkit\nmcp_servers:\n  - name: ghost\n    command: [toolgate-test-no-such-mcp-server]\n",
    );
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "now", "arguments": {}}}),
    ]
    .iter()
    .map(|r| format!("{r}\n"))
    .collect::<String>();
    let results = tempfile::tempdir().unwrap();
    let serve = Toolgate::new(&["serve", "--policy", arg(&path)])
        .results_dir(results.path())
        .stdin(requests)
        .run_within(Duration::from_secs(120));
    serve.assert_code(0).assert_no_panic();
    let answers = serve.json_lines();
    let listed = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("no tools/list answer: {serve:#?}"));
    let names = listed["result"]["tools"].to_string();
    assert!(names.contains("\"echo\""), "{names}");
    let called = answers
        .iter()
        .find(|a| a["id"] == 3)
        .unwrap_or_else(|| panic!("no tools/call answer: {serve:#?}"));
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert!(
        called.to_string().contains("Unknown tool") || called.to_string().contains("unknown tool"),
        "{called}"
    );
    assert!(
        serve.stderr.contains("now") && serve.stderr.contains("ghost.get_time"),
        "no warning names the alias: {serve:#?}"
    );

    let validate = run(&["validate", arg(&path)]);
    validate.assert_code(3);
    assert!(
        validate.stderr.contains("ghost.get_time"),
        "validate does not report the alias: {validate:#?}"
    );
}

// --- item 23: an answer over the message limit -----------------------------------------------

#[test]
fn an_upstream_answer_over_the_message_limit_fails_at_once_naming_the_limit() {
    let (_dir, path) = policy(&format!(
        "version: 1\ndispatch: {{timeout: none}}\nmcp_servers:\n  - name: fake\n    command: {}\n",
        fake_command(&[]),
    ));
    let call = run(&[
        "call",
        "--json",
        "--policy",
        arg(&path),
        "fake.big",
        &json!({"chars": 17 * 1024 * 1024}).to_string(),
    ]);
    call.assert_code(1).assert_no_panic();
    let out = call.json();
    assert_eq!(out["error_kind"], "upstream_error", "{call:#?}");
    let message = out["content"].as_str().unwrap_or_default();
    assert!(message.contains("16 MiB"), "{message}");
}

// --- item 24: what a server sees of the gateway, and the model of the server -----------------

#[test]
fn an_upstream_gets_only_the_minimum_environment_and_its_entry() {
    let (_dir, path) = policy(&format!(
        "version: 1\ndispatch: {{sequential: true}}\nmcp_servers:\n  - name: fake\n    command: {}\n    env: {{DECLARED: \"${{TOOLGATE_TEST_PASSED}}\"}}\n",
        fake_command(&[]),
    ));
    let turn = conversation(&[
        ("c1", "fake.env", r#"{"name": "TOOLGATE_TOKEN"}"#),
        (
            "c2",
            "fake.env",
            r#"{"name": "TOOLGATE_TEST_OTHER_SECRET"}"#,
        ),
        ("c3", "fake.env", r#"{"name": "DECLARED"}"#),
        ("c4", "fake.env", r#"{"name": "PATH"}"#),
    ]);
    let out = Toolgate::new(&["run", "--policy", arg(&path)])
        .env("TOOLGATE_TOKEN", "gateway-token-123")
        .env("TOOLGATE_TEST_OTHER_SECRET", "other-secret-456")
        .env("TOOLGATE_TEST_PASSED", "passed-on-purpose")
        .stdin(turn)
        .run_within(Duration::from_secs(120));
    out.assert_code(0);
    let messages = out.json();
    let answers: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        answers[0], "",
        "TOOLGATE_TOKEN reached the server: {answers:?}"
    );
    assert_eq!(
        answers[1], "",
        "another variable reached the server: {answers:?}"
    );
    assert_eq!(answers[2], "passed-on-purpose", "{answers:?}");
    assert!(!answers[3].is_empty(), "PATH is kept: {answers:?}");
}

#[test]
fn a_crashing_upstreams_stderr_stays_in_the_log() {
    let (_dir, path) = policy(&format!(
        "version: 1\ndispatch: {{sequential: true}}\nmcp_servers:\n  - name: fake\n    command: {}\n",
        fake_command(&[]),
    ));
    let crash = r#"{"code": 3, "stderr": "fatal: token=hunter2-secret"}"#;
    // The first crash is restarted at once; the second, soon after, leaves the server down
    // until the next attempt, which the third call is told about.
    let turn = conversation(&[
        ("c1", "fake.crash", crash),
        ("c2", "fake.crash", crash),
        ("c3", "fake.echo", r#"{"text": "x"}"#),
    ]);
    let out = Toolgate::new(&["run", "--policy", arg(&path)])
        .stdin(turn)
        .run_within(Duration::from_secs(120));
    out.assert_code(0);
    let messages = out.json();
    let answers: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        answers[2].contains("is not running") && answers[2].contains("exit status: 3"),
        "{answers:#?}"
    );
    assert!(answers[2].contains("see the gateway log"), "{answers:#?}");
    for answer in &answers {
        assert!(
            !answer.contains("hunter2"),
            "the model sees stderr: {answer}"
        );
    }
    assert!(
        out.stderr.contains("token=hunter2-secret"),
        "the log lost the server's stderr: {out:#?}"
    );
}
