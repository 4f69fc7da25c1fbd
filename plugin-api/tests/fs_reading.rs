//! `fs.read_file` reads only regular files, in bounded chunks: a FIFO or a device is refused
//! without blocking, a line longer than the cap is cut at the cap, and cancellation is seen
//! while a long file is being read.

mod common;

use std::fs;
use std::sync::mpsc;
use std::time::Duration;

use common::{call_on, error, library, text};
use serde_json::json;
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, PluginOutcome};

fn fs_plugin(root: &std::path::Path) -> LoadedPlugin {
    common::load(&library("toolgate_plugin_fs"), &json!({"root": root}))
        .unwrap_or_else(|err| panic!("fs loads: {err}"))
}

/// Runs `fs.read_file` on `path` on its own thread and waits at most 20 s for it: a call that
/// blocks fails the test instead of hanging the suite.
fn read_within_20s(plugin: LoadedPlugin, arguments: serde_json::Value) -> PluginOutcome {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(call_on(&plugin, "fs.read_file", arguments));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("fs.read_file returned instead of blocking")
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().expect("temp dir");
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let outcome = read_within_20s(fs_plugin(dir.path()), json!({"path": "pipe"}));
    assert_eq!(
        error(outcome),
        "pipe is a FIFO (named pipe); fs.read_file reads only regular files"
    );
}

#[cfg(unix)]
#[test]
fn dev_zero_is_refused_as_a_device() {
    let outcome = read_within_20s(
        fs_plugin(std::path::Path::new("/dev")),
        json!({"path": "zero"}),
    );
    assert_eq!(
        error(outcome),
        "zero is a character device; fs.read_file reads only regular files"
    );
}

#[cfg(unix)]
#[test]
fn a_socket_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _listener =
        std::os::unix::net::UnixListener::bind(dir.path().join("sock")).expect("bind a socket");
    let outcome = read_within_20s(fs_plugin(dir.path()), json!({"path": "sock"}));
    assert_eq!(
        error(outcome),
        "sock is a socket; fs.read_file reads only regular files"
    );
}

#[test]
fn a_line_longer_than_the_cap_is_cut_at_the_cap_and_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("long.txt"), "x".repeat(3 * 1024 * 1024)).expect("write");
    let out = text(call_on(
        &fs_plugin(dir.path()),
        "fs.read_file",
        json!({"path": "long.txt"}),
    ));
    let (content, note) = out.split_once('\n').expect("a note on its own line");
    assert_eq!(content.len(), 1024 * 1024);
    assert!(content.bytes().all(|b| b == b'x'));
    assert_eq!(
        note,
        "[line 1 is longer than the 1048576 bytes one call returns; this is its beginning]"
    );
}

#[test]
fn the_cap_never_leaves_half_a_character() {
    let dir = tempfile::tempdir().expect("temp dir");
    // One byte, then two-byte characters: the cap at 1 MiB falls inside one.
    let mut body = String::from("a");
    body.push_str(&"é".repeat(600 * 1024));
    fs::write(dir.path().join("accents.txt"), &body).expect("write");
    let out = text(call_on(
        &fs_plugin(dir.path()),
        "fs.read_file",
        json!({"path": "accents.txt"}),
    ));
    let (content, note) = out.split_once('\n').expect("a note on its own line");
    assert_eq!(content.len(), 1024 * 1024 - 1);
    assert!(!content.contains('\u{fffd}'));
    assert!(note.starts_with("[line 1 is longer than"), "{note}");
}

#[test]
fn lines_over_several_chunks_are_paged_as_before() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Lines of 100 KiB cross the 64 KiB read chunks.
    let line = format!("{}\n", "y".repeat(100 * 1024));
    fs::write(dir.path().join("wide.txt"), line.repeat(4)).expect("write");
    let plugin = fs_plugin(dir.path());
    let out = text(call_on(
        &plugin,
        "fs.read_file",
        json!({"path": "wide.txt", "offset": 2, "limit": 2}),
    ));
    assert_eq!(
        out,
        format!("{line}{line}[showing lines 2-3; more follow: continue with offset=4]")
    );
    let last = text(call_on(
        &plugin,
        "fs.read_file",
        json!({"path": "wide.txt", "offset": 4}),
    ));
    assert_eq!(last, line);
}

#[test]
fn a_last_line_without_a_newline_counts_as_a_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("t.txt"), "one\ntwo").expect("write");
    let plugin = fs_plugin(dir.path());
    let out = text(call_on(
        &plugin,
        "fs.read_file",
        json!({"path": "t.txt", "offset": 2}),
    ));
    assert_eq!(out, "two");
    let past = error(call_on(
        &plugin,
        "fs.read_file",
        json!({"path": "t.txt", "offset": 3}),
    ));
    assert_eq!(past, "offset 3 is past the end of t.txt, which has 2 lines");
}

#[test]
fn a_read_through_a_huge_file_stops_when_cancelled() {
    let dir = tempfile::tempdir().expect("temp dir");
    // 64 GB without a newline, sparse: it costs no disk. Looking for line 2 reads all of it,
    // so only the cancellation check inside the read loop can end the call early.
    let file = fs::File::create(dir.path().join("huge.bin")).expect("create");
    file.set_len(64 * 1024 * 1024 * 1024)
        .expect("a sparse file");
    let plugin = fs_plugin(dir.path());
    let cancel = CancelFlag::new();
    let (tx, rx) = mpsc::channel();
    let thread_cancel = cancel.clone();
    std::thread::spawn(move || {
        let outcome = plugin.call(
            "fs.read_file",
            &json!({"path": "huge.bin", "offset": 2}).to_string(),
            &thread_cancel,
            &mut |_| {},
        );
        let _ = tx.send(outcome);
    });
    std::thread::sleep(Duration::from_millis(200));
    cancel.cancel();
    let outcome = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the call stops soon after it is cancelled");
    assert_eq!(outcome, PluginOutcome::Error("cancelled".to_string()));
}
