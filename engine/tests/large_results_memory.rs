//! A plugin's result is capped while it is received (issue #25, item 26): sixteen 64 MiB
//! results capped at 100,000 characters arrive cut, and the host never holds them whole. Alone
//! in its test binary: it reads the process's peak memory.

mod common;

use common::*;
use serde_json::json;
use toolgate::Engine;

/// The most memory this process has held so far, in KiB (Linux).
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmHWM: line")
}

#[test]
fn sixteen_64_mib_results_of_an_isolated_plugin_arrive_capped_and_the_host_stays_small() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A long timeout: a debug build of the plugin takes seconds to encode each result, and the
    // point here is what the host holds, not how fast.
    let policy = yaml_policy(
        "version: 1\ndispatch: {timeout: 20m, max_result_chars: 100000}\nplugins:\n  - name: testkit\n    isolation: process\n",
        dir.path(),
    );
    let engine = Engine::builder(policy)
        .plugin_host(target_dir().join("toolgate"))
        .build()
        .expect("testkit loads in a worker");
    let session = engine.session(None).unwrap();
    let calls: Vec<_> = (0..16)
        .map(|i| {
            call(
                &format!("c{i}"),
                "big_output",
                json!({"bytes": 64 * 1024 * 1024}),
            )
        })
        .collect();
    let before = peak_kib();
    let outcomes = rt.block_on(engine.dispatch(&session, &calls)).unwrap();
    for o in &outcomes {
        assert!(o.error.is_none(), "{:?}", o.error);
        assert!(o.truncated, "{}", o.call_id);
        assert_eq!(o.output_chars, 100_000, "{}", o.call_id);
    }
    let peak = peak_kib();
    eprintln!("the host's peak memory: {before} KiB before the calls, {peak} KiB after");
    // Sixteen results held whole would be 1 GiB.
    assert!(
        peak < 1024 * 1024,
        "the host held {peak} KiB at its peak ({before} KiB before the calls)"
    );
}
