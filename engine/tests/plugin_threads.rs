//! A plugin's calls hold at most `plugins[].max_threads` threads, calls that ignored their
//! timeout and still run included (issue #9, item 5). Alone in its test binary: it counts the
//! process's threads.

mod common;

use common::*;
use serde_json::json;
use toolgate::Engine;

/// The threads of this process now (Linux).
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a Threads: line")
}

#[test]
fn a_thousand_stubborn_calls_hold_no_more_threads_than_the_plugins_bound() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = yaml_policy(
        "version: 1\ndispatch: {timeout: 100ms}\nplugins:\n  - name: testkit\n    max_threads: 8\n    max_queued: 0\n",
        dir.path(),
    );
    let engine = Engine::builder(policy).build().expect("testkit loads");
    let session = engine.session(None).unwrap();
    // The stubborn calls run until the test closes this listener (or for a minute).
    let release = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let until_closed = release.local_addr().unwrap().to_string();
    let calls: Vec<_> = (0..1000)
        .map(|i| {
            let args = json!({"ms": 60_000, "until_closed": until_closed});
            call(&format!("c{i}"), "stubborn_sleep", args)
        })
        .collect();
    let before = threads();
    rt.block_on(async {
        let outcomes = engine.dispatch(&session, &calls).await.unwrap();
        let kinds = |k: &str| {
            outcomes
                .iter()
                .filter(|o| o.error_kind() == Some(k))
                .count()
        };
        assert_eq!(kinds("timeout"), 8, "the calls that got a thread time out");
        assert_eq!(kinds("overloaded"), 992, "the others fail at once");
        let during = threads();
        assert!(
            during <= before + 8 + 2,
            "{during} threads while the stubborn calls run ({before} before): more than the bound"
        );

        // While the stubborn calls still run (the test has not let them go), the plugin says
        // so: `overloaded`, not a `timeout` after waiting.
        let o = one(&engine, "echo", json!({"text": "hi"})).await;
        assert_eq!(o.error_kind(), Some("overloaded"), "{o:?}");
        assert!(o.content.text().contains("max_threads"), "{o:?}");

        // Once they have returned, the plugin works again.
        drop(release);
        let echo = || one(&engine, "echo", json!({"text": "back"}));
        let o = poll(echo, |o| o.error_kind() != Some("overloaded")).await;
        assert_eq!(o.content.text(), "back", "{o:?}");
    });
}
