//! What the tests of an installed toolgate share (tests/tests/install.rs, dist.rs, wheel.rs):
//! running a program with a bound on its time, the README's main command in an empty folder,
//! and `toolgate serve` as an MCP host starts it.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use toolgate_e2e::{Run, repo_path, venv_python};

/// Runs `command` with empty stdin; kills it and fails after `limit`.
pub fn run_within(command: &mut Command, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} starts: {e}"));
    let (tx, rx) = mpsc::channel();
    for (which, mut pipe) in [
        (
            0,
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        ),
        (1, Box::new(child.stderr.take().expect("piped"))),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = tx.send((which, text));
        });
    }
    let mut out = [String::new(), String::new()];
    for _ in 0..2 {
        match rx.recv_timeout(limit.saturating_sub(started.elapsed())) {
            Ok((which, text)) => out[which] = text,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{command:?} did not end within {limit:?}:\n{out:?}");
            }
        }
    }
    let status = child.wait().expect("the child can be waited for");
    let [stdout, stderr] = out;
    Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
        elapsed: started.elapsed(),
    }
}

/// `program ARGS` in `cwd`, with a fresh results folder and no plugin path nor `RUST_LOG` of
/// the caller's.
pub fn program_in(
    program: &Path,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let results = tempfile::tempdir().expect("a results folder");
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .env_remove("TOOLGATE_PLUGIN_PATH")
        .env("TOOLGATE_RESULTS_DIR", results.path());
    for (key, value) in env {
        command.env(key, value);
    }
    run_within(&mut command, Duration::from_secs(120))
}

/// An empty folder with a copy of `examples/turn.json` and nothing else.
pub fn folder_with_turn() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::copy(
        repo_path("examples/turn.json"),
        dir.path().join("turn.json"),
    )
    .expect("turn.json copies");
    dir
}

/// The README's main command, `toolgate run turn.json`, run by `program` in `dir` (which
/// holds `turn.json`): the conversation comes back with the three tool messages, the first
/// listing `dir`. Returns the run.
pub fn assert_runs_the_readme_turn(program: &Path, dir: &Path, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend(["run", "turn.json"]);
    let run = program_in(program, dir, &all, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let conversation: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    let messages = conversation["messages"]
        .as_array()
        .or_else(|| conversation.as_array())
        .unwrap_or_else(|| panic!("a message list: {conversation}"));
    let tools: Vec<&serde_json::Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 3, "{conversation}");
    let listing = tools[0]["content"].to_string();
    assert!(listing.contains("turn.json"), "fs_list_dir: {listing}");
    run
}

/// One run of tests/mcp/serve_anywhere.py: `program serve SERVE_ARGS` started by the MCP Python
/// SDK in `cwd`, its tools and its `fs_list_dir "."` printed; the run must say `ok`.
pub fn serve_listing(program: &Path, cwd: &Path, serve_args: &[&str]) -> String {
    let results = tempfile::tempdir().expect("a results folder");
    let script = repo_path("tests/mcp/serve_anywhere.py");
    let mut command = Command::new(venv_python());
    command
        .arg(&script)
        .arg("--toolgate")
        .arg(program)
        .arg("--cwd")
        .arg(cwd)
        .arg("--")
        .args(serve_args)
        .env_remove("TOOLGATE_PLUGIN_PATH")
        .env("TOOLGATE_RESULTS_DIR", results.path());
    let run = run_within(&mut command, Duration::from_secs(180));
    assert!(
        run.code == 0 && run.stdout.trim_end().ends_with("ok"),
        "{run:?}"
    );
    run.stdout
        .split("listing:")
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

/// The folder of the build under test (`target/<profile>`), and whether it is the dev build.
pub fn build_dir() -> (PathBuf, bool) {
    let dir = toolgate_e2e::toolgate_exe()
        .parent()
        .expect("the build folder")
        .to_path_buf();
    let dev = dir.file_name().is_some_and(|n| n == "debug");
    (dir, dev)
}
