//! Tools of upstream MCP servers behind the `toolgate` program (`mcp_servers:`), with servers
//! nobody here wrote: PyPI's `mcp-server-time` and npm's
//! `@modelcontextprotocol/server-everything` (installed by `scripts/venv.sh` and
//! `scripts/npm.sh`), governed by the shipped `policies/examples/mcp-upstream.yaml`: an alias, a
//! deny rule and an offloaded large result. Faults use a small server written for the tests
//! (`mcp/tests/fixtures/fake_mcp_server.py`) that fails on request.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::{Run, Toolgate, conversation, repo_path, venv_python};

fn example() -> String {
    repo_path("policies/examples/mcp-upstream.yaml")
        .display()
        .to_string()
}

/// `toolgate ARGS` with the test MCP servers on `PATH`.
fn toolgate(args: &[&str]) -> Run {
    Toolgate::new(args).with_test_tools().run()
}

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

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

// --- real servers, the shipped example -------------------------------------------------------

#[test]
fn an_alias_calls_the_time_servers_tool() {
    let run = toolgate(&[
        "call",
        "--json",
        "--policy",
        &example(),
        "now",
        r#"{"timezone": "UTC"}"#,
    ]);
    run.assert_code(0);
    let out = run.json();
    assert_eq!(out["tool_name"], "time.get_current_time", "{run:#?}");
    let answer: Value = serde_json::from_str(out["content"].as_str().unwrap()).expect("JSON text");
    assert_eq!(answer["timezone"], "UTC", "{answer}");
    assert!(
        answer["datetime"].as_str().is_some_and(|d| d.len() >= 19),
        "{answer}"
    );
}

#[test]
fn a_deny_rule_refuses_an_upstream_tool() {
    let run = toolgate(&[
        "call",
        "--json",
        "--policy",
        &example(),
        "everything_get-env",
    ]);
    run.assert_code(1);
    let out = run.json();
    assert_eq!(out["error_kind"], "denied", "{run:#?}");
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .contains("holds credentials"),
        "{run:#?}"
    );
}

#[test]
fn a_large_upstream_result_is_offloaded_and_read_back() {
    let results = tempfile::tempdir().unwrap();
    let message = "x".repeat(30_000);
    let args = json!({ "message": message }).to_string();
    let run = Toolgate::new(&[
        "call",
        "--json",
        "--session",
        "s1",
        "--policy",
        &example(),
        "everything_echo",
        &args,
    ])
    .with_test_tools()
    .results_dir(results.path())
    .run();
    run.assert_code(0);
    let out = run.json();
    let id = out["result_id"]
        .as_str()
        .unwrap_or_else(|| panic!("offloaded: {run:#?}"));
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .contains("read_tool_result"),
        "{run:#?}"
    );

    let read = json!({"id": id, "offset": 0, "limit": 20000}).to_string();
    let run = Toolgate::new(&[
        "call",
        "--json",
        "--session",
        "s1",
        "--policy",
        &example(),
        "read_tool_result",
        &read,
    ])
    .with_test_tools()
    .results_dir(results.path())
    .run();
    run.assert_code(0);
    let page = run.json()["content"].as_str().unwrap().to_owned();
    assert!(page.starts_with("Echo: xxxx"), "{page}");
    assert!(
        page.ends_with("characters 0-20000 of 30006; next_offset=20000]"),
        "{}",
        &page[page.len().saturating_sub(200)..]
    );
}

#[test]
fn run_answers_calls_to_both_upstreams_in_one_turn() {
    let turn = conversation(&[
        (
            "c1",
            "time_get_current_time",
            r#"{"timezone": "Europe/Paris"}"#,
        ),
        ("c2", "everything_get-sum", r#"{"a": 2, "b": 3}"#),
    ]);
    let run = Toolgate::new(&["run", "--policy", &example()])
        .with_test_tools()
        .stdin(turn)
        .run();
    run.assert_code(0);
    let messages = run.json();
    let answers: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(answers.len(), 2, "{run:#?}");
    assert!(
        answers[0]["content"]
            .as_str()
            .unwrap()
            .contains("Europe/Paris"),
        "{answers:#?}"
    );
    assert!(
        answers[1]["content"].as_str().unwrap().contains('5'),
        "{answers:#?}"
    );
}

#[test]
fn tools_shows_upstream_tools_under_model_facing_names() {
    let run = toolgate(&["tools", "--json", "--policy", &example()]);
    run.assert_code(0);
    let names: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for name in [
        "time_get_current_time",
        "time_convert_time",
        "everything_echo",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
}

#[test]
fn validate_lists_upstream_tools_by_server() {
    let run = toolgate(&["validate", &example()]);
    run.assert_code(0);
    assert!(
        run.stdout.contains(
            "from MCP server time (stdio: mcp-server-time --local-timezone UTC): time_convert_time (time.convert_time), time_get_current_time (time.get_current_time)"
        ),
        "{}",
        run.stdout
    );
}

/// `mcp-server-everything streamableHttp` on a free loopback port, stopped on drop.
struct HttpEverything {
    child: Child,
    port: u16,
}

impl HttpEverything {
    fn start() -> HttpEverything {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let program = repo_path(".tools/node/node_modules/.bin/mcp-server-everything");
        let child = Command::new(&program)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{} starts ({e}): run bash scripts/npm.sh",
                    program.display()
                )
            });
        let server = HttpEverything { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the HTTP server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_http_upstream_is_called_through_its_url() {
    let server = HttpEverything::start();
    let (_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: web\n    url: http://127.0.0.1:{}/mcp\n    headers: {{X-Caller: \"toolgate for ${{USER_NAME_FOR_TEST}}\"}}\n",
        server.port
    ));
    let run = Toolgate::new(&[
        "call",
        "--policy",
        arg(&path),
        "web.get-sum",
        r#"{"a": 20, "b": 22}"#,
    ])
    .env("USER_NAME_FOR_TEST", "e2e")
    .run();
    run.assert_code(0);
    assert!(run.stdout.contains("42"), "{run:#?}");
}

// --- faults ----------------------------------------------------------------------------------

#[test]
fn validate_reports_an_upstream_that_does_not_start_at_its_entry() {
    let (_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: broken\n    command: {}\n",
        fake_command(&["--exit-at-start", "2"])
    ));
    let run = toolgate(&["validate", arg(&path)]);
    run.assert_code(3);
    let line = run
        .stderr
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "{}:3:5: MCP server broken: did not start",
                path.display()
            ))
        })
        .unwrap_or_else(|| panic!("no line at the entry: {run:#?}"));
    assert!(line.contains("exit status: 2"), "{line}");
    assert!(line.contains("fake server: refusing to start"), "{line}");
}

#[test]
fn validate_reports_an_unreachable_url_with_its_cause() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let (_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: gone\n    url: http://127.0.0.1:{port}/mcp\n"
    ));
    let run = toolgate(&["validate", arg(&path)]);
    run.assert_code(3);
    assert!(
        run.stderr.contains("MCP server gone: did not start")
            && run.stderr.contains("Connection refused"),
        "{run:#?}"
    );
}

#[test]
fn validate_reports_a_missing_environment_variable_by_name() {
    let (_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: needy\n    command: {}\n    env: {{TOKEN: \"${{TOOLGATE_TEST_UNSET_TOKEN}}\"}}\n",
        fake_command(&[])
    ));
    let run = toolgate(&["validate", arg(&path)]);
    run.assert_code(3);
    assert!(
        run.stderr
            .contains("env.TOKEN needs the environment variable: the environment variable TOOLGATE_TEST_UNSET_TOKEN is not set"),
        "{run:#?}"
    );
}

#[test]
fn a_broken_upstream_costs_only_its_own_calls() {
    let (_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: broken\n    command: {}\n  - name: good\n    command: {}\n",
        fake_command(&["--exit-at-start", "1"]),
        fake_command(&[]),
    ));
    let run = toolgate(&[
        "call",
        "--policy",
        arg(&path),
        "good.echo",
        r#"{"text": "still here"}"#,
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout, "still here\n");
    assert!(
        run.stderr.contains("MCP server broken: did not start"),
        "a warning names the broken server: {run:#?}"
    );
}

#[test]
fn a_timeout_is_sent_upstream_as_a_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let (_policy_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: fake\n    command: {}\n",
        fake_command(&["--log", arg(&log)]),
    ));
    // The server sleeps two minutes: a program that waited for it runs into the guard.
    let run = Toolgate::new(&[
        "call",
        "--json",
        "--timeout",
        "300ms",
        "--policy",
        arg(&path),
        "fake.sleep",
        r#"{"ms": 120000}"#,
    ])
    .with_test_tools()
    .run_within(Duration::from_secs(60));
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "timeout", "{run:#?}");
    let received: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the call reached the server");
    let cancelled = received
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled among {received:#?}"));
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
}

#[test]
fn a_crashed_upstream_is_restarted_for_the_next_call_of_the_turn() {
    let (_dir, path) = policy(&format!(
        "version: 1\ndispatch: {{sequential: true}}\nmcp_servers:\n  - name: fake\n    command: {}\n",
        fake_command(&[]),
    ));
    let turn = conversation(&[
        ("c1", "fake.crash", r#"{"code": 9}"#),
        ("c2", "fake.echo", r#"{"text": "back again"}"#),
    ]);
    let run = Toolgate::new(&["run", "--policy", arg(&path)])
        .with_test_tools()
        .stdin(turn)
        .run();
    run.assert_code(0);
    let messages = run.json();
    let answers: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    let first = answers[0]["content"].as_str().unwrap();
    assert!(
        first.contains("the connection to the MCP server fake broke during the call"),
        "{answers:#?}"
    );
    assert_eq!(answers[1]["content"], "back again", "{answers:#?}");
}

#[test]
fn garbage_from_an_upstream_is_an_upstream_error() {
    let (_dir, path) = policy(&format!(
        "version: 1\nmcp_servers:\n  - name: fake\n    command: {}\n",
        fake_command(&[]),
    ));
    let run = toolgate(&["call", "--json", "--policy", arg(&path), "fake.garbage"]);
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "upstream_error", "{run:#?}");
    run.assert_no_panic();
}
