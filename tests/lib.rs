//! End-to-end tests live in `tests/tests/*.rs`; this library is what they share: finding the
//! built `toolgate` program and the repository, and running the program as a user would.
//!
//! The tests drive `target/<profile>/toolgate`, next to the plugin libraries of the same build,
//! so build the workspace first: `cargo build --workspace && cargo test -p toolgate-e2e`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use serde_json;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the e2e crate lives one level below the repository root")
        .to_path_buf()
}

/// A path inside the repository, e.g. `repo_path("policies/testkit.yaml")`.
pub fn repo_path(relative: &str) -> PathBuf {
    repo_root().join(relative)
}

/// The testkit policy, as a string argument.
pub fn testkit_policy() -> String {
    repo_path("policies/testkit.yaml").display().to_string()
}

/// The built program: the test runs as `target/<profile>/deps/<test>`, the program is
/// `target/<profile>/toolgate`.
pub fn toolgate_exe() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows where it runs from");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps");
    let program = profile_dir.join(format!("toolgate{}", std::env::consts::EXE_SUFFIX));
    assert!(
        program.is_file(),
        "{} does not exist: run `cargo build --workspace` first",
        program.display()
    );
    program
}

/// What one run of the program did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// Stdout as JSON, or a panic that shows the whole run.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }

    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code: {self:#?}");
        self
    }
}

/// Runs `toolgate ARGS` from the repository root with empty stdin.
pub fn toolgate(args: &[&str]) -> Run {
    toolgate_with_stdin(args, "")
}

/// Runs `toolgate ARGS` from the repository root, feeding `stdin`.
pub fn toolgate_with_stdin(args: &[&str], stdin: &str) -> Run {
    toolgate_in(&repo_root(), args, stdin)
}

/// Runs `toolgate ARGS` in `dir`, feeding `stdin`. Offloaded results go to a fresh folder, logs
/// are at the default level whatever the environment says.
pub fn toolgate_in(dir: &Path, args: &[&str], stdin: &str) -> Run {
    let results = tempfile::tempdir().expect("a temporary folder");
    let started = Instant::now();
    let mut child = Command::new(toolgate_exe())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env("TOOLGATE_RESULTS_DIR", results.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolgate starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("stdin is writable");
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("toolgate finishes");
    Run {
        code: status
            .code()
            .expect("toolgate exits normally, not by a signal"),
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(stderr).expect("stderr is UTF-8"),
        elapsed: started.elapsed(),
    }
}

/// An assistant message calling `calls` (`(id, name, arguments)`), as a conversation.
pub fn conversation(calls: &[(&str, &str, &str)]) -> String {
    let tool_calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(id, name, args)| {
            serde_json::json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": args}
            })
        })
        .collect();
    serde_json::json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": tool_calls}
    ])
    .to_string()
}
