//! The audit log (`audit:`) through the binary: calls made with `toolgate call`, `toolgate run`
//! and `toolgate serve` (the MCP Python SDK over stdio and HTTP) are read back from the audit
//! file, line by line, and checked against the calls made.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use sha2::Digest;
use toolgate_e2e::{
    conversation, repo_path, toolgate, toolgate_exe, toolgate_with_stdin, venv_python,
};

const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";

/// A folder with `policy.yaml`: the testkit plugin, a deny rule on `echo` of text starting
/// `forbidden` (line 6), redaction on, and `audit` (a mapping's body) as given.
fn policy_with(audit: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nplugins: [{{name: testkit}}]\nrules:\n  deny:\n    - tools: [echo]\n      \
             args: {{text: \"forbidden*\"}}\n      reason: echo may not say that\nredact: {{}}\n\
             audit:\n{audit}"
        ),
    )
    .unwrap();
    (dir, path)
}

/// The audit file's lines, as JSON, each checked against schemas/audit-line.schema.json.
fn audit_lines(path: &Path) -> Vec<Value> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("schemas/audit-line.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("the line schema compiles");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let line: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            if let Err(e) = validator.validate(&line) {
                panic!("the line breaks its schema ({e}): {l}");
            }
            line
        })
        .collect()
}

fn sha256_hex(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `toolgate call --policy POLICY --session S1 TOOL ARGS`; returns its exit code.
fn call(policy: &Path, tool: &str, args: &str) -> i32 {
    toolgate(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "--session",
        "S1",
        tool,
        args,
    ])
    .code
}

/// Checks the fields every line has, against the call made.
fn check_line(line: &Value, tool: &str, args: &str, session: Option<&str>) {
    assert_eq!(line["tool"], tool, "{line}");
    assert_eq!(line["model_name"], tool, "{line}");
    assert_eq!(line["arguments_sha256"], sha256_hex(args), "{line}");
    assert_eq!(line["session"], json!(session), "{line}");
    // The CLI's calls are the local caller's (C1).
    assert_eq!(line["principal"], "local", "{line}");
    assert_eq!(line["groups"], json!([]), "{line}");
    assert!(line["time"].as_str().unwrap().ends_with('Z'), "{line}");
    assert!(line["run_ms"].as_f64().unwrap() >= 0.0, "{line}");
    assert!(line["queued_ms"].as_f64().unwrap() >= 0.0, "{line}");
}

#[test]
fn each_cli_call_is_one_audit_line_with_its_decision_and_outcome() {
    let (dir, policy) = policy_with("  path: audit.jsonl\n  arguments: redacted\n");
    let allowed = r#"{"text":"hello"}"#;
    let denied = r#"{"text":"forbidden words"}"#;
    let secret = format!(r#"{{"text":"password=hunter2 {AWS_KEY}"}}"#);
    let unknown = r#"{"password":"pw-in-a-field"}"#;
    assert_eq!(call(&policy, "echo", allowed), 0);
    assert_eq!(call(&policy, "echo", denied), 1);
    assert_eq!(call(&policy, "echo", &secret), 0);
    assert_eq!(call(&policy, "no_such_tool", unknown), 1);

    let lines = audit_lines(&dir.path().join("audit.jsonl"));
    assert_eq!(lines.len(), 4, "{lines:#?}");

    check_line(&lines[0], "echo", allowed, Some("S1"));
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["decision"]["rules"], "allow");
    assert_eq!(lines[0]["decision"]["rule"], Value::Null);
    assert_eq!(lines[0]["result_chars"], 5);
    assert_eq!(lines[0]["arguments"], json!({"text": "hello"}));

    check_line(&lines[1], "echo", denied, Some("S1"));
    assert_eq!(lines[1]["outcome"], "error");
    assert_eq!(lines[1]["error_kind"], "denied");
    assert_eq!(lines[1]["decision"]["rules"], "deny");
    assert_eq!(
        lines[1]["decision"]["rule"],
        format!("{}:5:7: deny[0]", policy.display())
    );
    assert!(
        lines[1]["reason"]
            .as_str()
            .unwrap()
            .contains("echo may not say that"),
        "{}",
        lines[1]
    );

    check_line(&lines[2], "echo", &secret, Some("S1"));
    assert_eq!(lines[2]["redactions"], 2);
    assert_eq!(
        lines[2]["arguments"],
        json!({"text": "password=[REDACTED:key_value] [REDACTED:aws_access_key_id]"})
    );

    check_line(&lines[3], "no_such_tool", unknown, Some("S1"));
    assert_eq!(lines[3]["error_kind"], "unknown_tool");
    assert_eq!(lines[3]["decision"]["rules"], Value::Null);
    assert_eq!(lines[3]["arguments"], json!({"password": "[REDACTED]"}));

    let whole = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    for secret in ["hunter2", AWS_KEY, "pw-in-a-field"] {
        assert!(
            !whole.contains(secret),
            "{secret} is in the audit log:\n{whole}"
        );
    }
}

#[test]
fn the_audit_file_is_found_beside_a_policy_named_by_a_relative_path() {
    // `audit: {}` (the default file) and a relative path, with the policy named relatively.
    for (audit, file) in [
        ("  {}\n", "audit.jsonl"),
        ("  path: logs/a.jsonl\n", "logs/a.jsonl"),
    ] {
        let (dir, _) = policy_with(audit);
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        // Named from the folder above, as `<folder>/policy.yaml`.
        let name = dir.path().file_name().unwrap().to_str().unwrap();
        let relative = format!("{name}/policy.yaml");
        let run = toolgate_e2e::toolgate_in(
            dir.path().parent().unwrap(),
            &["call", "--policy", &relative, "echo", r#"{"text":"hi"}"#],
            "",
        );
        run.assert_code(0);
        let lines = audit_lines(&dir.path().join(file));
        assert_eq!(lines.len(), 1, "{file}");
        check_line(&lines[0], "echo", r#"{"text":"hi"}"#, None);
    }
}

#[test]
fn a_digest_line_has_no_arguments() {
    let (dir, policy) = policy_with("  path: audit.jsonl\n");
    assert_eq!(call(&policy, "echo", r#"{"text":"hi"}"#), 0);
    let lines = audit_lines(&dir.path().join("audit.jsonl"));
    assert_eq!(lines.len(), 1);
    check_line(&lines[0], "echo", r#"{"text":"hi"}"#, Some("S1"));
    assert!(lines[0].get("arguments").is_none(), "{}", lines[0]);
}

#[test]
fn a_run_of_a_turn_writes_a_line_per_call() {
    let (dir, policy) = policy_with("  path: audit.jsonl\n");
    let input = conversation(&[
        ("c1", "echo", r#"{"text": "one"}"#),
        ("c2", "echo", r#"{"text": "forbidden two"}"#),
    ]);
    let run = toolgate_with_stdin(&["run", "--policy", policy.to_str().unwrap()], &input);
    run.assert_code(0);
    let mut lines = audit_lines(&dir.path().join("audit.jsonl"));
    lines.sort_by_key(|l| l["call_id"].as_str().unwrap_or_default().to_owned());
    assert_eq!(lines.len(), 2, "{lines:#?}");
    check_line(&lines[0], "echo", r#"{"text": "one"}"#, None);
    assert_eq!(lines[0]["call_id"], "c1");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["call_id"], "c2");
    assert_eq!(lines[1]["decision"]["rules"], "deny");
}

#[test]
fn the_file_rotates_by_size_and_keeps_a_bounded_number_of_files() {
    let (dir, policy) = policy_with("  path: audit.jsonl\n  max_file_bytes: 600\n  max_files: 2\n");
    for i in 0..8 {
        assert_eq!(
            call(&policy, "echo", &format!(r#"{{"text":"call {i}"}}"#)),
            0
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("audit.jsonl"))
        .collect();
    names.sort();
    assert_eq!(names, ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]);
    for name in &names {
        let size = std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert!(size <= 600, "{name} is {size} bytes");
    }
    // The newest call is the last line of the current file.
    let current = audit_lines(&dir.path().join("audit.jsonl"));
    check_line(
        current.last().unwrap(),
        "echo",
        r#"{"text":"call 7"}"#,
        Some("S1"),
    );
}

#[test]
fn an_audit_file_that_cannot_be_opened_fails_the_start_with_its_path() {
    let (dir, policy) = policy_with("  path: no/such/folder/audit.jsonl\n");
    let run = toolgate(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "echo",
        r#"{"text":"hi"}"#,
    ]);
    assert_ne!(run.code, 0, "{run:#?}");
    let path = dir.path().join("no/such/folder/audit.jsonl");
    assert!(
        run.stderr.contains(&format!(
            "audit: cannot open {} for appending",
            path.display()
        )) && run.stderr.contains("No such file or directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_full_disk_loses_lines_with_a_warning_and_the_call_still_answers() {
    // /dev/full takes the open and refuses every write with ENOSPC.
    let (_dir, policy) = policy_with("  path: /dev/full\n");
    let run = toolgate(&[
        "call",
        "--policy",
        policy.to_str().unwrap(),
        "echo",
        r#"{"text":"still here"}"#,
    ]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim_end(), "still here");
    assert!(
        run.stderr.contains("audit: a line could not be written")
            && run.stderr.contains("No space left on device"),
        "{}",
        run.stderr
    );
}

/// Makes `calls` through `toolgate serve` over `transport` with the MCP Python SDK
/// (tests/mcp/audit_calls.py); returns what each call answered.
fn serve_calls(transport: &str, policy: &Path, calls: &Value) -> Vec<Value> {
    let script = repo_path("tests/mcp/audit_calls.py");
    let mut child = Command::new(venv_python())
        .arg(&script)
        .args(["--toolgate", toolgate_exe().to_str().unwrap()])
        .args([
            "--transport",
            transport,
            "--policy",
            policy.to_str().unwrap(),
        ])
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

fn calls_through_serve_are_audited(transport: &str) {
    let (dir, policy) = policy_with("  path: audit.jsonl\n");
    let calls = json!([
        ["echo", {"text": "over MCP"}],
        ["echo", {"text": "forbidden over MCP"}],
        ["echo", {"text": format!("key {AWS_KEY}")}],
    ]);
    let answers = serve_calls(transport, &policy, &calls);
    assert_eq!(answers[0], json!({"is_error": false, "text": "over MCP"}));
    assert_eq!(answers[1]["is_error"], true);
    assert_eq!(
        answers[2],
        json!({"is_error": false, "text": "key [REDACTED:aws_access_key_id]"})
    );

    let lines = audit_lines(&dir.path().join("audit.jsonl"));
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let session = lines[0]["session"].clone();
    assert!(
        session.is_string(),
        "serve gives each MCP session an id: {}",
        lines[0]
    );
    for (line, call) in lines.iter().zip(calls.as_array().unwrap()) {
        // serve hands the engine the arguments as the client's JSON object, re-serialised.
        let args = call[1].to_string();
        check_line(line, "echo", &args, session.as_str());
    }
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["decision"]["rules"], "deny");
    assert_eq!(
        lines[1]["decision"]["rule"],
        format!("{}:5:7: deny[0]", policy.display())
    );
    assert_eq!(lines[2]["redactions"], 1);
    let whole = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert!(!whole.contains(AWS_KEY), "{whole}");
}

#[test]
fn calls_through_serve_over_stdio_are_audited() {
    calls_through_serve_are_audited("stdio");
}

#[test]
fn calls_through_serve_over_http_are_audited() {
    calls_through_serve_are_audited("http");
}

#[test]
fn serve_over_stdio_refuses_an_audit_sink_on_stdout_at_start() {
    // Over stdio, stdout is the MCP channel: audit lines there would reach the client as
    // protocol. serve exits at once with the reason, before it reads a request.
    let (_dir, policy) = policy_with("  sink: stdout\n");
    let run = toolgate_with_stdin(&["serve", "--policy", policy.to_str().unwrap()], "");
    assert_ne!(run.code, 0, "{run:#?}");
    assert!(
        run.stderr.contains("audit.sink is stdout")
            && run
                .stderr
                .contains("send the audit lines to stderr or a file"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.is_empty(),
        "nothing reaches the channel: {}",
        run.stdout
    );
}
