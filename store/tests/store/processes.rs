//! SPEC R8 across OS processes: a result written by one process is read by another, and a writer killed
//! half-way leaves either nothing or the whole result, never a part. The other process is the example
//! `store_probe`, which `cargo test` builds along with the tests.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use toolgate_store::{NewResult, ObjectResultStore, ResultId, ResultStore, Scope, SessionId};

use crate::common::big_text;
#[cfg(feature = "s3")]
use crate::common::{s3_bucket, s3_options};

/// Must match `PATTERN` in `examples/store_probe.rs`.
const PROBE_PATTERN: &str = "probe Grüße 中文 😀\n";

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn probe() -> PathBuf {
    // target/<profile>/deps/store-<hash> -> target/<profile>/examples/store_probe
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join("store_probe");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p toolgate-store` (which builds the examples) or `cargo build -p toolgate-store --example store_probe`",
        path.display()
    );
    path
}

fn probe_command(url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(probe());
    cmd.arg(args[0])
        .arg(url)
        .args(&args[1..])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    // The probe reads the S3 server's settings from the environment: the test may have started
    // the server itself (`s3_server`), so it passes them on.
    #[cfg(feature = "s3")]
    if url.starts_with("s3://") {
        cmd.envs(crate::common::s3_server());
    }
    cmd
}

struct Target {
    url: String,
    options: BTreeMap<String, String>,
    _dir: Option<tempfile::TempDir>,
}

fn file_target() -> Target {
    let dir = tempfile::tempdir().unwrap();
    Target {
        url: format!("file://{}/store", dir.path().display()),
        options: BTreeMap::new(),
        _dir: Some(dir),
    }
}

#[cfg(feature = "s3")]
fn s3_target() -> Option<Target> {
    let options = s3_options()?;
    let bucket = s3_bucket();
    Some(Target {
        url: format!("s3://{bucket}/p/{}", ResultId::generate()),
        options,
        _dir: None,
    })
}

async fn a_second_process_reads_what_the_first_wrote(target: Target) {
    let store = ObjectResultStore::from_url_opts(&target.url, &target.options).unwrap();
    let session = SessionId::parse("shared session").unwrap();
    let text = big_text(1 << 20);
    let id = store
        .save(NewResult::new(Some(session.clone())), &text)
        .await
        .unwrap()
        .id;
    let out = probe_command(&target.url, &["read", id.as_str(), session.as_str()])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!(
        "bytes={} chars={} fnv={:016x}\n",
        text.len(),
        text.chars().count(),
        fnv1a(text.as_bytes())
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    // And the other process honours scoping too.
    let out = probe_command(&target.url, &["read", id.as_str(), "-"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "error=access_denied\n"
    );
}

#[tokio::test]
async fn a_second_process_reads_what_the_first_wrote_on_disk() {
    a_second_process_reads_what_the_first_wrote(file_target()).await;
}

#[cfg(feature = "s3")]
#[tokio::test]
async fn a_second_process_reads_what_the_first_wrote_on_s3() {
    if let Some(target) = s3_target() {
        a_second_process_reads_what_the_first_wrote(target).await;
    }
}

/// Starts a writer of a 16 MB result and returns it with the id, once it said it started saving.
async fn start_writer(
    target: &Target,
    mb: usize,
) -> (
    tokio::process::Child,
    ResultId,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let id = ResultId::generate();
    let mut child = probe_command(
        &target.url,
        &["write", id.as_str(), "killed", &mb.to_string()],
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("saving"));
    (child, id, lines)
}

/// Times one undisturbed save of a 16 MB result, then kills writers at fractions of that time and checks
/// each time that a reader finds nothing or the whole result; at last, that `prune` removes every leftover.
async fn a_killed_writer_leaves_nothing_or_the_whole_result(target: Target) {
    const MB: usize = 16;
    let expected = PROBE_PATTERN.repeat(MB * (1 << 20) / PROBE_PATTERN.len());
    let store = ObjectResultStore::from_url_opts(&target.url, &target.options).unwrap();

    let started = tokio::time::Instant::now();
    let (mut child, _, mut lines) = start_writer(&target, MB).await;
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("saved"));
    let save_time = started.elapsed();
    assert!(child.wait().await.unwrap().success());

    let mut outcomes = Vec::new();
    for percent in [0, 10, 30, 50, 70, 90, 150] {
        let (mut child, id, _lines) = start_writer(&target, MB).await;
        tokio::time::sleep(save_time * percent / 100).await;
        child.start_kill().unwrap(); // SIGKILL: no destructor, no flush, nothing runs
        child.wait().await.unwrap();
        match store.meta(&id).await {
            Err(e) => {
                assert_eq!(e.kind(), "not_found", "{e}");
                assert_eq!(
                    store.read_chars(&id, 0, 10).await.unwrap_err().kind(),
                    "not_found"
                );
                outcomes.push((percent, "nothing"));
            }
            Ok(meta) => {
                assert_eq!(meta.bytes, expected.len() as u64);
                let page = store.read_chars(&id, 0, u64::MAX).await.unwrap();
                assert!(
                    page.text == expected,
                    "a killed writer left a different result"
                );
                outcomes.push((percent, "whole"));
            }
        }
    }
    eprintln!("one save took {save_time:?}; killed at % of that, writers left: {outcomes:?}");
    store.prune(u64::MAX, &Scope::All).await.unwrap();
    let left: Vec<_> = store
        .backend()
        .list(Some(store.prefix()))
        .map(|o| o.unwrap().location)
        .collect()
        .await;
    assert!(left.is_empty(), "prune left {left:?}");
    // On disk, also what the backend's listing does not show: the files writes are staged in.
    if let Some(dir) = &target._dir {
        let files = files_under(dir.path());
        assert!(files.is_empty(), "prune left on disk {files:?}");
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// A writer killed in the middle of writing its data to disk leaves a staged file that the
/// backend's listing hides; `prune` finds it and removes it once it is older than the cutoff.
#[tokio::test]
async fn prune_removes_the_staged_data_of_a_writer_killed_on_disk() {
    const MB: usize = 64;
    let target = file_target();
    let dir = target._dir.as_ref().unwrap().path().to_path_buf();
    let store = ObjectResultStore::from_url(&target.url).unwrap();
    let (mut child, id, _lines) = start_writer(&target, MB).await;
    // Wait for the staged data file to appear and grow, then kill the writer mid-write.
    let staged = loop {
        let found = files_under(&dir)
            .into_iter()
            .find(|p| p.to_string_lossy().contains('#') && p.metadata().is_ok_and(|m| m.len() > 0));
        if let Some(found) = found {
            break found;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the writer finished before a staged file was seen"
        );
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    };
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert_eq!(store.meta(&id).await.unwrap_err().kind(), "not_found");
    let size = staged.metadata().expect("the staged file is left").len();
    assert!(size < (MB << 20) as u64, "killed mid-write: {size} bytes");

    // Younger than the cutoff: kept (it could be a save still running).
    let report = store.prune(0, &Scope::All).await.unwrap();
    assert_eq!(report.garbage, 0);
    assert!(staged.exists());

    // A cutoff a second from now: the staged file is older, without waiting for the clock.
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 1_000;
    let report = store.prune(later, &Scope::All).await.unwrap();
    assert!(report.garbage >= 1, "{report:?}");
    assert!(!staged.exists(), "{} is still there", staged.display());
    let files = files_under(&dir);
    assert!(files.is_empty(), "prune left on disk {files:?}");
}

#[tokio::test]
async fn a_killed_writer_leaves_nothing_or_the_whole_result_on_disk() {
    a_killed_writer_leaves_nothing_or_the_whole_result(file_target()).await;
}

#[cfg(feature = "s3")]
#[tokio::test]
async fn a_killed_writer_leaves_nothing_or_the_whole_result_on_s3() {
    if let Some(target) = s3_target() {
        a_killed_writer_leaves_nothing_or_the_whole_result(target).await;
    }
}
