//! How `toolgate serve` lets a client in (issue 26, item 8): a request before `initialize` is
//! told to send `initialize` first, over stdio and HTTP, as the README says (only the MCP
//! revisions with sessions are offered, and a toolgate session is an MCP session); over HTTP the
//! bearer scheme is read without regard to case. The HTTP scenarios run the official Python SDK
//! and raw requests (tests/mcp/serve_entry.py).

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use toolgate_e2e::{Toolgate, repo_path, repo_root, serde_json, toolgate_exe, venv_python};

/// One scenario of tests/mcp/serve_entry.py; fails with its output unless it prints `ok`.
fn scenario(name: &str) {
    let toolgate = toolgate_exe().display().to_string();
    let script = repo_path("tests/mcp/serve_entry.py").display().to_string();
    let mut child = Command::new(venv_python())
        .args([&script, "--toolgate", &toolgate, name])
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let (tx, rx) = mpsc::channel();
    for (which, mut pipe) in [
        (
            "stdout",
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        ),
        ("stderr", Box::new(child.stderr.take().expect("piped"))),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = tx.send((which, text));
        });
    }
    let deadline = Instant::now() + Duration::from_secs(180);
    let (mut stdout, mut stderr) = (String::new(), String::new());
    for _ in 0..2 {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(("stdout", text)) => stdout = text,
            Ok((_, text)) => stderr = text,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{name} did not end within 180 s:\n{stdout}\n{stderr}");
            }
        }
    }
    let status = child.wait().expect("python can be waited for");
    assert!(
        status.success() && stdout.trim_end().ends_with("ok"),
        "{name} failed ({status}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

#[test]
fn a_lowercase_bearer_scheme_is_accepted() {
    scenario("a_lowercase_bearer_scheme_is_accepted");
}

#[test]
fn an_http_request_before_initialize_is_told_to_initialize_first() {
    scenario("a_request_before_initialize_is_told_to_initialize_first");
}

#[test]
fn a_stdio_tools_list_before_initialize_is_told_to_initialize_first_and_served_after_it() {
    let results = tempfile::tempdir().expect("a temporary folder");
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"_meta":{meta}}}}}"#),
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#.to_owned(),
    ]
    .join("\n")
        + "\n";
    let run = Toolgate::new(&["serve", "--policy", "tests/mcp/policies/testkit.yaml"])
        .results_dir(results.path())
        .stdin(input)
        .run_within(Duration::from_secs(60));
    run.assert_code(0).assert_no_panic();
    let answers: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert_eq!(answers.len(), 4, "{run:#?}");
    for (answer, id) in answers[..2].iter().zip([1, 2]) {
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("send initialize first: tools/list came before it")),
            "{answer}"
        );
    }
    // `initialize` (id 3) and the list after it (id 4) are answered in one write order or the
    // other; each is there once.
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id).expect("answered");
    assert_eq!(
        by_id(3)["result"]["serverInfo"]["name"],
        "toolgate",
        "{run:#?}"
    );
    assert!(
        by_id(4)["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "echo")),
        "{run:#?}"
    );
}
