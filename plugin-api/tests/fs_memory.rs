//! `fs.read_file` of a 600 MB file without a newline costs about its 1 MiB cap in memory, not
//! the file. Alone in its test binary, so the process's peak memory is this test's.

mod common;

use common::{call_on, library, text};
use serde_json::json;

/// The process's peak resident memory (`VmHWM`), in bytes.
#[cfg(target_os = "linux")]
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("a VmHWM line");
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("VmHWM in kB");
    kib * 1024
}

#[cfg(target_os = "linux")]
#[test]
fn reading_a_600_mb_file_without_newlines_costs_about_the_cap_not_the_file() {
    const FILE: u64 = 600 * 1000 * 1000;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = std::fs::File::create(dir.path().join("big.bin")).expect("create");
    // Sparse: no disk is used, and every byte reads as zero.
    file.set_len(FILE).expect("a sparse file");
    let plugin = common::load(&library("toolgate_plugin_fs"), &json!({"root": dir.path()}))
        .unwrap_or_else(|err| panic!("fs loads: {err}"));

    let before = peak_rss();
    let out = text(call_on(&plugin, "fs.read_file", json!({"path": "big.bin"})));
    let after = peak_rss();

    let extra = after.saturating_sub(before);
    eprintln!(
        "peak memory grew by {} KiB reading a {FILE}-byte file",
        extra / 1024
    );
    assert!(
        extra < 64 * 1024 * 1024,
        "reading a {FILE}-byte file raised peak memory by {extra} bytes"
    );
    assert!(out.starts_with("\0\0\0"), "the file's zero bytes come back");
    assert_eq!(
        out.find('['),
        Some(1024 * 1024 + 1),
        "the text stops at the cap"
    );
}
