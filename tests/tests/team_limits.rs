//! Issue 27's limits, retries, breakers and audit batches through the binary: `toolgate serve`
//! over HTTP, called by the official MCP Python SDK (tests/mcp/audit_calls.py): a limited call
//! is a `tools/call` result with `isError` and `_meta.toolgate.retry_after_ms` (L2), and the
//! audit batches written to a folder hold every call once the server is stopped with SIGTERM
//! (L7). An upstream MCP server that crashes (the tests' `fake_mcp_server.py`) is retried for
//! an idempotent tool (L5) and, crashing again and again, has its breaker opened (L6).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::{Toolgate, conversation, repo_path, toolgate_exe, venv_python};

/// Makes `calls` through `toolgate serve --http` with the MCP Python SDK; the script stops the
/// server with SIGTERM before it prints what each call answered.
fn serve_calls(policy: &Path, calls: &Value) -> Vec<Value> {
    let mut child = Command::new(venv_python())
        .arg(repo_path("tests/mcp/audit_calls.py"))
        .args(["--toolgate", toolgate_exe().to_str().unwrap()])
        .args(["--transport", "http", "--meta", "--policy"])
        .arg(policy)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python starts (scripts/venv.sh makes it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(calls.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "audit_calls.py failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

/// Every line of every `.jsonl` object under `dir`, objects in name order.
fn batch_lines(dir: &Path) -> Vec<Value> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn l2_a_rate_limited_call_over_mcp_is_an_error_result_with_its_retry_after_and_l7_its_audit_batch_is_written_at_shutdown()
 {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\nplugins: [{name: testkit}]\nlimits:\n  rates:\n    - tools: [echo]\n      \
         rate: 2/h\naudit:\n  sink: object_store\n  store: file://audit\n  batch_lines: 100\n  \
         batch_interval: 1h\n",
    )
    .unwrap();
    let calls = json!([
        ["echo", {"text": "one"}],
        ["echo", {"text": "two"}],
        ["echo", {"text": "three"}],
    ]);
    let answers = serve_calls(&policy, &calls);
    assert_eq!(answers[1]["text"], "two", "{answers:?}");
    let limited = &answers[2];
    assert_eq!(limited["is_error"], true, "{limited}");
    assert_eq!(
        limited["toolgate"]["error_kind"], "rate_limited",
        "{limited}"
    );
    // Two calls use up an hour of a 2/h limit: the third passes in 30 minutes.
    let after = limited["toolgate"]["retry_after_ms"].as_u64().unwrap();
    assert!((1_790_000..=1_800_000).contains(&after), "{limited}");
    assert!(
        limited["text"]
            .as_str()
            .unwrap()
            .ends_with("(burst 2; limits.rates[0]); retry after 1800 s"),
        "{limited}"
    );
    // Nothing filled a batch and its interval is an hour: the lines were written when serve
    // stopped.
    let lines = batch_lines(&dir.path().join("audit"));
    let kinds: Vec<Value> = lines.iter().map(|l| l["error_kind"].clone()).collect();
    assert_eq!(
        kinds,
        [Value::Null, Value::Null, json!("rate_limited")],
        "{lines:#?}"
    );
}

/// The tests' fake MCP server as a policy's `command`, with `args`.
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

fn write_policy(dir: &Path, yaml: &str) -> std::path::PathBuf {
    let path = dir.join("policy.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// `toolgate call --json` of `fake.crash_once` on a server that crashes at its first call.
fn crash_once(retries: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("crashed");
    let policy = write_policy(
        dir.path(),
        &format!(
            "version: 1\nmcp_servers:\n  - name: fake\n    command: {}\n{retries}",
            fake_command(&["--crash-flag", flag.to_str().unwrap()])
        ),
    );
    let run = Toolgate::new(&[
        "call",
        "--json",
        "--policy",
        policy.to_str().unwrap(),
        "fake.crash_once",
        "{}",
    ])
    .run_within(Duration::from_secs(120));
    run.json()
}

#[test]
fn l5_a_call_whose_upstream_server_crashed_is_retried_when_the_policy_names_the_tool_idempotent() {
    let retried = crash_once("retries:\n  idempotent: [\"fake.crash_once\"]\n");
    assert_eq!(retried["content"], "survived", "{retried}");
    // The same crash without retries reaches the model.
    let once = crash_once("");
    assert_eq!(once["error_kind"], "upstream_unavailable", "{once}");
}

#[test]
fn l6_an_upstream_server_that_keeps_crashing_has_its_breaker_opened() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(
        dir.path(),
        &format!(
            "version: 1\ndispatch: {{sequential: true}}\nmcp_servers:\n  - name: fake\n    \
             command: {}\ncircuit_breaker:\n  failures: 2\n  cool_down: 1h\n",
            fake_command(&[])
        ),
    );
    let crash = r#"{"code": 3}"#;
    let turn = conversation(&[
        ("c1", "fake.crash", crash),
        ("c2", "fake.crash", crash),
        ("c3", "fake.echo", r#"{"text": "x"}"#),
    ]);
    let out = Toolgate::new(&["run", "--policy", policy.to_str().unwrap()])
        .stdin(turn)
        .run_within(Duration::from_secs(120));
    out.assert_code(0);
    let answers: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        answers[2].contains(
            "is failing (2 failures in a row), so its calls are refused for now; retry after"
        ),
        "{answers:#?}"
    );
    assert!(answers[2].contains("MCP server fake"), "{answers:#?}");
}
