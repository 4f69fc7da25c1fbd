//! How the program writes its output: as it goes, and a reader that stops early
//! (`toolgate ... | head -1`) is a normal end.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use toolgate_e2e::{repo_path, serde_json, testkit_policy, toolgate_exe};

#[test]
fn a_reader_that_stops_after_one_line_ends_the_command_with_exit_0_and_no_error() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // A conversation far larger than a pipe's buffer, so the program is still writing when
    // `head` goes away.
    let conversation = dir.path().join("long.json");
    let content = "all work and no play\n".repeat(100_000);
    std::fs::write(
        &conversation,
        serde_json::json!([{"role": "user", "content": content}]).to_string(),
    )
    .expect("the conversation is written");
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"set -o pipefail; "$0" -q run --policy "$1" "$2" | head -1"#)
        .arg(toolgate_exe())
        .arg(testkit_policy())
        .arg(&conversation)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs the pipeline");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[\n");
    assert_eq!(stderr, "", "nothing is reported on stderr");
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
}

#[test]
fn search_queries_answers_each_line_before_the_input_ends() {
    let mut child = Command::new(toolgate_exe())
        .args(["search", "--catalog"])
        .arg(repo_path("policies/examples/catalog.jsonl"))
        .args(["--queries", "-"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("toolgate starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin
        .write_all(b"{\"id\": 1, \"query\": \"repeat some text\"}\n")
        .expect("toolgate reads its input");
    stdin.flush().expect("the line is sent");
    // Standard input stays open: the answer must come before it ends.
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no answer while the input was still open");
        }
    };
    drop(stdin);
    let status = child.wait().expect("toolgate ends");
    let answer: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"));
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["results"].is_array(), "{answer}");
    assert!(status.success(), "{status}");
}
