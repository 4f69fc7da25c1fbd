//! Tests that cannot flake: a test waits for an event (a channel, a pipe, a connection, a
//! child's output), or runs on paused tokio time, not on the wall clock of a machine that may
//! be loaded.
//!
//! Every `std::thread::sleep` and `tokio::time::sleep` in test code is either inside a test
//! that runs on paused time (`#[tokio::test(start_paused = true)]`: the clock moves only when
//! every task waits on it) or counted in [`ALLOWED`], file by file, with the reason it needs
//! real time. A sleep added anywhere else fails `no_test_sleeps_on_the_wall_clock_unless_allowed`;
//! a sleep removed asks for its entry to be lowered, so the list stays exact.
//!
//! Test code: every file under a crate's `tests/` folder (and `tests/lib.rs`, the e2e harness),
//! a `src/` file named `tests.rs`, and the rest of a `src/` file from its first `#[cfg(test)]`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Real-time sleeps that stay: (file, how many, why).
const ALLOWED: &[(&str, usize, &str)] = &[
    // engine
    (
        "engine/tests/common/mod.rs",
        3,
        "the native `sleep` and `observer` tools take time as their work (their tests run \
         paused or assert no duration); `poll` looks every 10 ms for a plugin thread's end, \
         which has no event",
    ),
    (
        "engine/tests/spec_dispatch.rs",
        1,
        "the `rec` tool's work; every test that runs it is on paused time",
    ),
    (
        "engine/src/plugin/pool.rs",
        4,
        "jobs of a few ms that two threads share; a gap between jobs, the subject of the \
         wake-up rule; a poll for the thread to fall asleep, which has no event",
    ),
    (
        "engine/src/plugin/wait.rs",
        2,
        "a timer and a result that come after the caller's watch, whose window is real time",
    ),
    // plugin API and plugins
    (
        "plugin-api/src/worker/pace.rs",
        2,
        "a frame and a release that come after a watch began (its bound is an hour: only \
         the event ends it)",
    ),
    (
        "plugin-api/tests/worker.rs",
        1,
        "a pause longer than the worker's watch is the subject (the reader must sleep in read)",
    ),
    (
        "plugin-api/tests/fs_reading.rs",
        1,
        "cancels while a huge read most likely runs; the outcome is the same if it comes first",
    ),
    (
        "plugin-api/tests/testkit.rs",
        1,
        "sets the cancel flag while `sleep` most likely runs; the outcome is the same if first",
    ),
    (
        "plugins/fixtures/abi-v1/tests/abi_v1.rs",
        1,
        "sets the cancel flag while the v1 `sleep` most likely runs; same outcome if first",
    ),
    (
        "plugins/http/tests/common/mod.rs",
        1,
        "a fake HTTP server that trickles its body: the plugin's own time bound is the subject",
    ),
    // store: creation times and crashes are on the system clock, which paused time does not move
    (
        "store/tests/store/behaviours.rs",
        1,
        "results saved a few ms apart get distinct creation times (the system clock)",
    ),
    (
        "store/tests/store/validated.rs",
        1,
        "two results saved a few ms apart get distinct creation times (the system clock)",
    ),
    (
        "store/tests/store/processes.rs",
        2,
        "a writer process killed at fractions of its save time; polls for the staged file \
         another process writes",
    ),
    // mcp
    (
        "mcp/tests/upstream.rs",
        1,
        "polls a supervised server process until it is back after its pause (no event)",
    ),
    // end to end: the binary and its children run on the wall clock
    (
        "tests/tests/serve.rs",
        2,
        "waits for a child process to end, killing it past its limit; polls for the server \
         to remove its session files",
    ),
    (
        "tests/tests/serve_abuse.rs",
        1,
        "waits for a child process to end, killing it past its limit",
    ),
    (
        "tests/tests/results.rs",
        3,
        "file times (mtime) on the system clock must pass a cutoff; polls for the file \
         another process stages",
    ),
    (
        "tests/tests/upstream.rs",
        1,
        "waits for a spawned HTTP server process to listen",
    ),
    (
        "tests/tests/isolation_escape.rs",
        1,
        "polls until the processes a sandboxed worker started are gone (no event)",
    ),
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives inside the workspace")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.map(|e| e.expect("readable entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The crates of the workspace: the fixed ones, every plugin and every test fixture plugin.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [
        "engine",
        "policy",
        "store",
        "search",
        "plugin-api",
        "mcp",
        "cli",
        "tests",
    ]
    .iter()
    .map(|c| root.join(c))
    .collect();
    for folder in ["plugins", "plugins/fixtures"] {
        let plugins = fs::read_dir(root.join(folder)).expect("plugins/ exists");
        for plugin in plugins {
            let dir = plugin.expect("readable plugins/ entry").path();
            if dir.join("Cargo.toml").is_file() {
                dirs.push(dir);
            }
        }
    }
    dirs.sort();
    dirs
}

/// Every file with test code, and from which line (0-based) its test code starts.
fn test_code(root: &Path) -> Vec<(PathBuf, usize)> {
    let mut out = Vec::new();
    for dir in crate_dirs(root) {
        let mut files = Vec::new();
        rust_files(&dir.join("tests"), &mut files);
        if dir.ends_with("tests") {
            files.push(dir.join("lib.rs"));
        }
        out.extend(files.into_iter().map(|f| (f, 0)));
        let mut sources = Vec::new();
        rust_files(&dir.join("src"), &mut sources);
        for file in sources {
            let whole = file.file_name().is_some_and(|n| n == "tests.rs")
                || file.components().any(|c| c.as_os_str() == "tests");
            let text = fs::read_to_string(&file).expect("readable source");
            let from = if whole {
                Some(0)
            } else {
                text.lines().position(|l| l.trim() == "#[cfg(test)]")
            };
            if let Some(from) = from {
                out.push((file, from));
            }
        }
    }
    out
}

/// A sleep found in test code.
struct Sleep {
    line: usize,
    text: String,
    /// Inside a test that runs on paused tokio time.
    paused: bool,
}

/// Whether the item around `line` (the nearest `fn` above it, at most one level in) is a test
/// on paused time.
fn on_paused_time(lines: &[&str], line: usize) -> bool {
    let is_item = |l: &str| {
        let indent = l.len() - l.trim_start().len();
        let t = l.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t.strip_prefix("pub(crate) ").unwrap_or(t);
        indent <= 4 && (t.starts_with("fn ") || t.starts_with("async fn "))
    };
    let Some(item) = (0..=line).rev().find(|&i| is_item(lines[i])) else {
        return false;
    };
    lines[..item]
        .iter()
        .rev()
        .take_while(|l| {
            let t = l.trim_start();
            t.starts_with("#[") || t.starts_with("//")
        })
        .any(|l| l.contains("start_paused = true"))
}

/// The sleeps of `text` from line `from` on (comments left out).
fn sleeps(text: &str, from: usize) -> Vec<Sleep> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(from) {
        let code = line.split("//").next().unwrap_or("");
        let real = code.contains("thread::sleep(");
        let tokio = code.contains("time::sleep(") || code.contains("time::sleep_until(");
        let imported = code.trim_start().starts_with("use ")
            && (code.contains("thread::sleep") || code.contains("time::sleep"));
        if real || tokio || imported {
            found.push(Sleep {
                line: i + 1,
                text: line.trim().to_string(),
                paused: tokio && !real && on_paused_time(&lines, i),
            });
        }
    }
    found
}

#[test]
fn no_test_sleeps_on_the_wall_clock_unless_allowed() {
    let root = workspace_root();
    let mut real: BTreeMap<String, Vec<Sleep>> = BTreeMap::new();
    let mut paused = 0;
    for (file, from) in test_code(&root) {
        if file.ends_with("tests/tests/test_hygiene.rs") {
            continue; // its own patterns and examples
        }
        let text = fs::read_to_string(&file).expect("readable test file");
        let rel = file
            .strip_prefix(&root)
            .expect("under the root")
            .to_string_lossy()
            .replace('\\', "/");
        for sleep in sleeps(&text, from) {
            if sleep.paused {
                paused += 1;
            } else {
                real.entry(rel.clone()).or_default().push(sleep);
            }
        }
    }
    let allowed: BTreeMap<&str, usize> = ALLOWED.iter().map(|(f, n, _)| (*f, *n)).collect();
    let mut problems = Vec::new();
    for (file, found) in &real {
        let allowed = allowed.get(file.as_str()).copied().unwrap_or(0);
        if found.len() > allowed {
            let list: Vec<String> = found
                .iter()
                .map(|s| format!("    {file}:{}: {}", s.line, s.text))
                .collect();
            problems.push(format!(
                "{file}: {} real-time sleeps, {allowed} allowed. Wait for an event (a channel, a \
                 pipe, a connection the test closes, a child's output) or run the test on paused \
                 time (#[tokio::test(start_paused = true)]); if it truly needs the wall clock, \
                 add it to ALLOWED in tests/tests/test_hygiene.rs with the reason:\n{}",
                found.len(),
                list.join("\n")
            ));
        }
    }
    for (file, allowed) in &allowed {
        let found = real.get(*file).map_or(0, Vec::len);
        if found < *allowed {
            problems.push(format!(
                "{file}: {allowed} real-time sleeps allowed but {found} found: lower its entry \
                 in ALLOWED (tests/tests/test_hygiene.rs)"
            ));
        }
    }
    let total: usize = real.values().map(Vec::len).sum();
    eprintln!("test code: {total} real-time sleeps (all allowed), {paused} on paused time");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_allowed_sleep_says_why() {
    for (file, n, why) in ALLOWED {
        assert!(*n > 0, "{file}: an entry for no sleeps");
        assert!(why.len() > 20, "{file}: say why it needs the wall clock");
    }
}

#[test]
fn a_sleep_on_paused_time_is_told_from_one_on_the_wall_clock() {
    let text = "\
#[tokio::test(start_paused = true)]
async fn paused() {
    tokio::time::sleep(D).await;
}

#[tokio::test]
async fn real() {
    tokio::time::sleep(D).await;
    // std::thread::sleep(D) in a comment
}

#[test]
fn thread() {
    std::thread::sleep(D);
}
";
    let found: Vec<(usize, bool)> = sleeps(text, 0).iter().map(|s| (s.line, s.paused)).collect();
    assert_eq!(found, [(3, true), (8, false), (14, false)]);
}
