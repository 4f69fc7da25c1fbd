//! End-to-end tests live in `tests/tests/*.rs`; this library is what they share: finding the
//! built `toolgate` program and the repository, and running the program as a user would.
//!
//! The tests drive `target/<profile>/toolgate`, next to the plugin libraries of the same build,
//! so build the workspace first: `cargo build --workspace && cargo test -p toolgate-e2e`. The
//! test build of `scripts/test.sh` adds `--features toolgate-cli/builtin-testkit` (the test
//! plugin built into the program, which tests/tests/builtin_testkit.rs needs).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use serde_json;

mod stdio_serve;
pub use stdio_serve::StdioServe;

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

/// The Python of the project's test venv (`.tools/venv`, made by `scripts/venv.sh` from
/// `scripts/requirements-test.txt`), for tests that check toolgate against other people's software
/// (the `openai` SDK's types, a JSON Schema validator). `scripts/test.sh` installs it first.
pub fn venv_python() -> PathBuf {
    let python = repo_path(".tools/venv/bin/python");
    assert!(
        python.is_file(),
        "{} does not exist: run `bash scripts/venv.sh` (scripts/test.sh does) first",
        python.display()
    );
    python
}

/// Runs `python -c SCRIPT ARGS...` with the venv's Python, feeding `stdin`.
pub fn venv_python_run(script: &str, args: &[&str], stdin: &str) -> Run {
    let started = Instant::now();
    let mut child = Command::new(venv_python())
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("python reads its stdin");
    let out = child.wait_with_output().expect("python runs to the end");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// `PATH` with the folders of the programs the test scripts install in front: `.tools/venv/bin`
/// (PyPI's `mcp-server-time`, by `scripts/venv.sh`) and `.tools/node/node_modules/.bin` (npm's
/// `@modelcontextprotocol/server-everything`, by `scripts/npm.sh`).
pub fn test_tools_path() -> OsString {
    let dirs = [
        repo_path(".tools/venv/bin"),
        repo_path(".tools/node/node_modules/.bin"),
    ];
    for (dir, program, script) in [
        (&dirs[0], "mcp-server-time", "scripts/venv.sh"),
        (&dirs[1], "mcp-server-everything", "scripts/npm.sh"),
    ] {
        assert!(
            dir.join(program).exists(),
            "{} does not exist: run `bash {script}` (scripts/test.sh does) first",
            dir.join(program).display()
        );
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(dirs.iter().cloned().chain(std::env::split_paths(&rest)))
        .expect("the folders make a PATH")
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
    Toolgate::new(args).current_dir(dir).stdin(stdin).run()
}

/// Runs `toolgate ARGS` from the repository root with `results` as the folder offloaded results
/// go to (`$TOOLGATE_RESULTS_DIR`), so that several runs share one store, as successive
/// processes of one user do.
pub fn toolgate_with_results(results: &Path, args: &[&str]) -> Run {
    Toolgate::new(args).results_dir(results).run()
}

/// One run of the program, for the cases the functions above do not cover: arguments that are
/// not UTF-8, a result folder shared by several runs, another working directory.
#[derive(Debug)]
pub struct Toolgate {
    args: Vec<OsString>,
    dir: PathBuf,
    stdin: Vec<u8>,
    results: Option<PathBuf>,
    envs: Vec<(OsString, OsString)>,
}

impl Toolgate {
    /// `toolgate ARGS`, from the repository root, with empty stdin and a fresh result folder.
    pub fn new<S: AsRef<OsStr>>(args: &[S]) -> Self {
        Toolgate {
            args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
            dir: repo_root(),
            stdin: Vec::new(),
            results: None,
            envs: Vec::new(),
        }
    }

    /// Sets an environment variable for this run.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// `PATH` with the MCP servers the test scripts install in front ([`test_tools_path`]), so
    /// a policy names them by their bare program names as a user's would.
    pub fn with_test_tools(self) -> Self {
        self.env("PATH", test_tools_path())
    }

    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_path_buf();
        self
    }

    pub fn stdin(mut self, stdin: impl Into<Vec<u8>>) -> Self {
        self.stdin = stdin.into();
        self
    }

    /// `$TOOLGATE_RESULTS_DIR` for this run (default: a fresh folder removed afterwards).
    pub fn results_dir(mut self, dir: &Path) -> Self {
        self.results = Some(dir.to_path_buf());
        self
    }

    /// Runs the program like [`Toolgate::run`], but kills it and fails the test if it has not
    /// ended within `limit`: for inputs that could make it hang (a FIFO, a device).
    pub fn run_within(self, limit: Duration) -> Run {
        let fresh = tempfile::tempdir().expect("a temporary folder");
        let results = self.results.as_deref().unwrap_or(fresh.path());
        let started = Instant::now();
        let mut child = Command::new(toolgate_exe())
            .args(&self.args)
            .current_dir(&self.dir)
            .env_remove("RUST_LOG")
            .env("TOOLGATE_RESULTS_DIR", results)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolgate starts");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = self.stdin;
        // Feed stdin from another thread: a large input must not block against a full stdout.
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                String::from_utf8(bytes).expect("output is UTF-8")
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("stdout is piped")));
        let stderr = drain(Box::new(child.stderr.take().expect("stderr is piped")));
        let status = wait_within(child, limit.saturating_sub(started.elapsed()))
            .unwrap_or_else(|| panic!("toolgate {:?} did not end within {limit:?}", self.args));
        let _ = feeder.join();
        Run {
            code: status.code().unwrap_or_else(|| {
                panic!("toolgate {:?} was killed by a signal: {status}", self.args)
            }),
            stdout: stdout.join().expect("stdout drained"),
            stderr: stderr.join().expect("stderr drained"),
            elapsed: started.elapsed(),
        }
    }

    /// Runs the program to its end. Logs are at the default level whatever the environment says.
    /// A run that has not ended after ten minutes is killed and fails the test rather than
    /// stalling the suite.
    pub fn run(self) -> Run {
        self.run_within(Duration::from_secs(600))
    }
}

/// Waits for `child` to end, at most `limit`: its exit status, or `None` when it ran past the
/// limit (it is then killed and reaped). Waits on the exit itself (a thread blocked in
/// `wait`), not by polling.
pub fn wait_within(
    mut child: std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let pid = child.id();
    let (sent, exited) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = sent.send(child.wait().expect("a child can be waited for"));
    });
    match exited.recv_timeout(limit) {
        Ok(status) => {
            let _ = waiter.join();
            Some(status)
        }
        Err(_) => {
            // SAFETY: kill(2) on the pid of our own child, which the waiter has not reaped
            // (it is still blocked in wait); no memory is touched.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            let _ = waiter.join();
            None
        }
    }
}

/// The tool search datasets (`bfcl/`, `metatool/`, `sealtools/`, each with `catalog.jsonl` and
/// `queries.jsonl`): `$TOOLGATE_DATASETS`, else `../shared/datasets/toolsearch` beside the
/// repository.
pub fn datasets_dir() -> PathBuf {
    let dir = std::env::var_os("TOOLGATE_DATASETS")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/datasets/toolsearch"));
    assert!(
        dir.join("bfcl/catalog.jsonl").is_file(),
        "the tool search datasets are not in {}: set TOOLGATE_DATASETS to their folder",
        dir.display()
    );
    dir
}

impl Run {
    /// Each line of stdout as JSON, or a panic that shows the whole run.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("stdout line {l:?} is not JSON ({e}): {self:#?}"))
            })
            .collect()
    }

    /// Fails if the program panicked: bad input must be an error message, never a panic.
    #[track_caller]
    pub fn assert_no_panic(&self) -> &Self {
        assert!(
            !self.stderr.contains("panicked"),
            "the program panicked: {self:#?}"
        );
        self
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

/// The settings of a test server that one of the project's scripts runs
/// (`scripts/s3-server.sh`, `scripts/redis.sh`): the `export NAME=value` lines it prints, as
/// `(NAME, value)` pairs, for the programs a test starts.
///
/// When `variable` (`TOOLGATE_TEST_S3_ENDPOINT`, `TOOLGATE_TEST_REDIS_URL`) is set, the
/// server is the one `scripts/test.sh` started, and the settings are the environment's
/// variables that start like `variable` up to its last `_`. Otherwise, under `scripts/test.sh`
/// (`TOOLGATE_TEST_SUITE` set) or on CI, the test fails with the script to run: a green suite
/// must not hide a test that did not run. Run alone (`cargo test -p toolgate-e2e --test
/// scale_out`), the test starts the server with `bash scripts/<script> start`, which leaves it
/// running for the next tests (`bash scripts/<script> stop` stops it).
pub fn test_server(script: &str, variable: &str) -> Vec<(String, String)> {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, OnceLock};
    /// Each script's settings, once it was started by this process.
    type Started = BTreeMap<String, Vec<(String, String)>>;
    static STARTED: OnceLock<Mutex<Started>> = OnceLock::new();
    if std::env::var_os(variable).is_some() {
        let family = &variable[..variable.rfind('_').unwrap_or(variable.len())];
        return std::env::vars()
            .filter(|(name, _)| name.starts_with(family))
            .collect();
    }
    assert!(
        std::env::var_os("TOOLGATE_TEST_SUITE").is_none() && std::env::var_os("CI").is_none(),
        "{variable} is unset: the test server is not running. Start it with \
         `eval \"$(bash scripts/{script} start)\"` (scripts/test.sh does) and run the tests again"
    );
    let mut started = STARTED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(settings) = started.get(script) {
        return settings.clone();
    }
    let out = Command::new("bash")
        .arg(repo_path(&format!("scripts/{script}")))
        .arg("start")
        .current_dir(repo_root())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/{script}: {e}"));
    assert!(
        out.status.success(),
        "`bash scripts/{script} start` failed ({}): see its messages above",
        out.status
    );
    let settings: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (name, value) = line.strip_prefix("export ")?.split_once('=')?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect();
    assert!(
        settings.iter().any(|(name, _)| name == variable),
        "`bash scripts/{script} start` printed no {variable}: {settings:?}"
    );
    eprintln!(
        "started the test server of scripts/{script}; it keeps running (`bash scripts/{script} stop`)"
    );
    started.insert(script.to_owned(), settings.clone());
    settings
}
