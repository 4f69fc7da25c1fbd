//! The files a policy consists of (the policy, its `.rhai` scripts, its catalogs) are read only
//! when they are regular files within a size limit: a FIFO, a device or a huge file is a clear
//! error naming the path, never a hang or an exhausted memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use toolgate_policy::{
    DiagnosticKind, FileProblem, LineColumn, MAX_CATALOG_FILE_BYTES, MAX_POLICY_FILE_BYTES, Policy,
    PolicyError, load_file, read_text_file,
};

/// Makes a FIFO at `path` with the system's `mkfifo`.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `f` on another thread and fails the test if it takes more than 10 s: a read that
/// blocks on a FIFO must show up as a failure, not as a test run that never ends.
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("finished within 10 s instead of blocking")
}

fn load_within_10s(path: PathBuf) -> Result<Policy, PolicyError> {
    within_10s(move || load_file(&path))
}

/// A sparse file of `len` bytes: large on paper, no disk used.
fn sparse(path: &Path, len: u64) {
    let file = std::fs::File::create(path).expect("create");
    file.set_len(len).expect("set_len");
}

#[test]
fn a_policy_path_that_is_a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("policy.yaml");
    mkfifo(&fifo);
    let error = load_within_10s(fifo.clone()).unwrap_err();
    let d = &error.diagnostics()[0];
    assert_eq!(d.kind, DiagnosticKind::Io);
    assert_eq!(d.file, fifo);
    assert_eq!(d.at, None, "a problem of the whole file has no position");
    assert!(
        d.message.contains("named pipe (FIFO), not a regular file"),
        "{error}"
    );
}

#[test]
fn dev_zero_as_a_policy_is_refused_without_reading_it() {
    let error = load_within_10s(PathBuf::from("/dev/zero")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "/dev/zero: cannot read the policy file: it is a character device, not a regular file; \
         only regular files are read"
    );
}

#[test]
fn a_policy_over_16_mib_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    sparse(&path, MAX_POLICY_FILE_BYTES + 1);
    let error = load_within_10s(path).unwrap_err();
    assert!(
        error.to_string().contains(&format!(
            "it is {} bytes, more than the limit of {MAX_POLICY_FILE_BYTES} bytes (16 MiB)",
            MAX_POLICY_FILE_BYTES + 1
        )),
        "{error}"
    );
}

#[test]
fn a_policy_of_exactly_the_limit_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    let head = "version: 1\n";
    // Pad with a comment up to the limit exactly.
    let pad = usize::try_from(MAX_POLICY_FILE_BYTES).unwrap() - head.len() - 2;
    std::fs::write(&path, format!("{head}#{}\n", "x".repeat(pad))).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        MAX_POLICY_FILE_BYTES
    );
    load_within_10s(path).expect("a policy at the limit loads");
}

#[test]
fn an_os_error_is_shown_once_not_again_as_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let error = read_text_file(&dir.path().join("absent.yaml"), MAX_POLICY_FILE_BYTES)
        .expect_err("absent file");
    let FileProblem::Io(io) = &error.problem else {
        panic!("expected an I/O problem, got {:?}", error.problem);
    };
    assert_eq!(error.problem.to_string(), io.to_string());
    assert!(std::error::Error::source(&error.problem).is_none());
}

#[test]
fn a_directory_is_not_a_policy() {
    let dir = tempfile::tempdir().unwrap();
    let error = read_text_file(dir.path(), MAX_POLICY_FILE_BYTES).unwrap_err();
    assert!(matches!(
        error.problem,
        FileProblem::NotRegular {
            kind: "a directory"
        }
    ));
    assert_eq!(error.path, dir.path());
}

#[test]
fn a_policy_that_is_not_utf8_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, b"version: 1\n\xff\n").unwrap();
    let error = read_text_file(&path, MAX_POLICY_FILE_BYTES).unwrap_err();
    assert!(matches!(error.problem, FileProblem::NotUtf8 { offset: 11 }));
}

/// Writes `policy` as `policy.yaml` in `dir` and loads it within 10 s.
fn load_policy_in(dir: &Path, policy: &str) -> Result<Policy, PolicyError> {
    let path = dir.join("policy.yaml");
    std::fs::write(&path, policy).unwrap();
    load_within_10s(path)
}

#[test]
fn a_script_file_that_is_a_fifo_is_an_error_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("hook.rhai"));
    let error = load_policy_in(
        dir.path(),
        "version: 1\nscripts:\n  before:\n    file: hook.rhai\n",
    )
    .unwrap_err();
    let d = &error.diagnostics()[0];
    assert_eq!(d.at, Some(LineColumn { line: 4, column: 5 }), "{error}");
    assert_eq!(d.kind, DiagnosticKind::MissingFile);
    assert!(
        d.message
            .starts_with("scripts.before.file: cannot read script \"hook.rhai\""),
        "{error}"
    );
    assert!(d.message.contains("named pipe (FIFO)"), "{error}");
}

#[test]
fn a_script_file_that_is_dev_zero_is_an_error_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let error = load_policy_in(
        dir.path(),
        "version: 1\nscripts:\n  after:\n    file: /dev/zero\n",
    )
    .unwrap_err();
    let d = &error.diagnostics()[0];
    assert_eq!(d.at, Some(LineColumn { line: 4, column: 5 }), "{error}");
    assert!(d.message.contains("character device"), "{error}");
}

#[test]
fn a_script_file_over_16_mib_is_an_error_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    sparse(&dir.path().join("big.rhai"), MAX_POLICY_FILE_BYTES + 1);
    let error = load_policy_in(
        dir.path(),
        "version: 1\nscripts:\n  rewrite: {file: big.rhai}\n",
    )
    .unwrap_err();
    let d = &error.diagnostics()[0];
    assert_eq!(d.at.map(|at| at.line), Some(3), "{error}");
    assert!(d.message.contains("more than the limit"), "{error}");
}

#[test]
fn a_catalog_that_is_a_fifo_is_an_error_at_its_item() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("tools.jsonl"));
    let error = load_policy_in(
        dir.path(),
        "version: 1\nsearch:\n  catalogs: [tools.jsonl]\n",
    )
    .unwrap_err();
    let d = &error.diagnostics()[0];
    assert_eq!(
        d.at,
        Some(LineColumn {
            line: 3,
            column: 14
        }),
        "{error}"
    );
    assert!(
        d.message
            .starts_with("search.catalogs[0]: cannot read catalog \"tools.jsonl\""),
        "{error}"
    );
    assert!(d.message.contains("named pipe (FIFO)"), "{error}");
}

#[test]
fn a_catalog_over_its_limit_is_an_error_at_its_item() {
    let dir = tempfile::tempdir().unwrap();
    sparse(&dir.path().join("tools.jsonl"), MAX_CATALOG_FILE_BYTES + 1);
    let error = load_policy_in(
        dir.path(),
        "version: 1\nsearch:\n  catalogs: [tools.jsonl]\n",
    )
    .unwrap_err();
    assert!(error.to_string().contains("256 MiB"), "{error}");
}

#[test]
fn reading_a_fifo_directly_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let error = within_10s(move || read_text_file(&fifo, MAX_POLICY_FILE_BYTES)).unwrap_err();
    assert!(
        error.to_string().ends_with(
            "pipe: it is a named pipe (FIFO), not a regular file; only regular files are read"
        ),
        "{error}"
    );
}
