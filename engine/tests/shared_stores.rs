//! Issue 27's shared state through real servers: rate limits shared by two engines through
//! Redis, and what a Redis that is down or does not answer does to a call (L4); audit lines in
//! batches on object storage, read back and matched to the calls made (L7).
//!
//! Redis is Debian's `redis-server` (`scripts/redis.sh install`); each test that stops, pauses
//! or kills its server starts one of its own. S3 is the moto server of `scripts/s3-server.sh`.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use toolgate::events::EventKind;
use toolgate::{Engine, Policy};

/// A `redis-server` of the test's own on a free loopback port; killed when dropped.
struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Redis {
        let program =
            std::env::var("TOOLGATE_TEST_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(&program)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {program}: {e}; install it with `bash scripts/redis.sh install`"
                )
            });
        // Ready once it says so (an event, not a poll).
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("Ready to accept connections") => break,
                Some(Ok(_)) => continue,
                _ => panic!("{program} stopped before it was ready"),
            }
        }
        // Keep draining its output so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Redis {
            child,
            port,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.signal("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shared server of `scripts/redis.sh start`, or one of the test's own.
fn shared_redis() -> (String, Option<Redis>) {
    match std::env::var("TOOLGATE_TEST_REDIS_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let own = Redis::start();
            (own.url(), Some(own))
        }
    }
}

fn limited_engine(url: &str, prefix: &str, rate: &str, extra: &str) -> Engine {
    let dir = tempfile::tempdir().unwrap();
    let policy: Policy = yaml_policy(
        &format!(
            "version: 1\nlimits:\n  rates:\n    - rate: {rate}\n  redis:\n    url: \"{url}\"\n    \
             prefix: \"{prefix}\"\n{extra}"
        ),
        dir.path(),
    );
    Engine::builder(policy).tool(echo("echo")).build().unwrap()
}

fn unique(what: &str) -> String {
    format!(
        "toolgate-test:{what}:{}",
        toolgate::store::ResultId::generate()
    )
}

#[tokio::test]
async fn l4_two_engines_share_one_limit_through_redis() {
    let (url, _own) = shared_redis();
    let prefix = unique("shared");
    let a = limited_engine(&url, &prefix, "3/h", "");
    let b = limited_engine(&url, &prefix, "3/h", "");
    for engine in [&a, &b, &a] {
        let o = one(engine, "echo", json!({"text": "x"})).await;
        assert!(!o.is_error(), "{o:?}");
    }
    for engine in [&b, &a] {
        let o = one(engine, "echo", json!({"text": "x"})).await;
        assert_eq!(o.error_kind(), Some("rate_limited"), "{o:?}");
        // One call uses up 20 minutes of a 3/h limit.
        let after = o.error.as_ref().and_then(|e| e.retry_after()).unwrap();
        assert!(
            after > Duration::from_secs(1150) && after <= Duration::from_secs(1200),
            "{after:?}"
        );
    }
    // Another prefix is another limit.
    let c = limited_engine(&url, &unique("other"), "3/h", "");
    assert!(!one(&c, "echo", json!({})).await.is_error());
}

/// A loopback port nobody listens on.
fn closed_port_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("redis://127.0.0.1:{port}/")
}

#[tokio::test]
async fn l4_with_redis_down_and_on_store_error_open_calls_go_on_and_an_event_says_why() {
    let engine = limited_engine(
        &closed_port_url(),
        "p",
        "1/h",
        "    on_store_error: open\n    timeout: 2s\n",
    );
    let errors = Arc::new(Mutex::new(Vec::new()));
    let mut rx = engine.subscribe();
    for _ in 0..3 {
        let o = one(&engine, "echo", json!({"text": "x"})).await;
        assert!(!o.is_error(), "fail open: {o:?}");
    }
    while let Ok(e) = rx.try_recv() {
        if let EventKind::Error { message, kind } = e.kind {
            errors.lock().unwrap().push((kind, message));
        }
    }
    let errors = errors.lock().unwrap();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert_eq!(errors[0].0, "limits_store_error");
    assert!(
        errors[0]
            .1
            .contains("the call goes on unlimited (limits.redis.on_store_error: open)"),
        "{errors:?}"
    );
}

#[tokio::test]
async fn l4_with_redis_down_and_on_store_error_closed_calls_are_refused_as_limits_unavailable() {
    let engine = limited_engine(
        &closed_port_url(),
        "p",
        "1/h",
        "    on_store_error: closed\n    timeout: 2s\n",
    );
    let o = one(&engine, "echo", json!({"text": "x"})).await;
    assert_eq!(o.error_kind(), Some("limits_unavailable"), "{o:?}");
    let text = o.content.text();
    assert!(
        text.starts_with("Error: limits unavailable: Redis failed: ")
            && text.ends_with("; retry after 2.0 s"),
        "{text}"
    );
}

#[tokio::test]
async fn l4_a_redis_that_does_not_answer_costs_at_most_the_timeout_and_is_used_again_once_back() {
    let redis = Redis::start();
    let engine = limited_engine(
        &redis.url(),
        &unique("slow"),
        "100/s",
        "    on_store_error: closed\n    timeout: 300ms\n",
    );
    assert!(!one(&engine, "echo", json!({})).await.is_error());
    // A stopped process: the connection stays open and nothing answers.
    redis.signal("-STOP");
    let asked = Instant::now();
    let o = one(&engine, "echo", json!({})).await;
    let took = asked.elapsed();
    assert_eq!(o.error_kind(), Some("limits_unavailable"), "{o:?}");
    assert!(
        o.content
            .text()
            .contains("Redis did not answer within 300ms (limits.redis.timeout)"),
        "{}",
        o.content.text()
    );
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(
        took < Duration::from_secs(5),
        "bounded by the timeout: {took:?}"
    );
    redis.signal("-CONT");
    let back = one(&engine, "echo", json!({})).await;
    assert!(!back.is_error(), "{back:?}");
}

// ---- audit batches on object storage ----------------------------------------------------

#[cfg(feature = "s3")]
/// The bucket and S3 options of the moto server of `scripts/s3-server.sh` ([`s3_server`]);
/// always `Some`: a missing server fails the test or is started, never skipped.
fn s3() -> Option<(String, BTreeMap<String, String>)> {
    let server = s3_server();
    let var = |n: &str| server[n].clone();
    Some((
        var("TOOLGATE_TEST_S3_BUCKET"),
        BTreeMap::from([
            ("endpoint".into(), var("TOOLGATE_TEST_S3_ENDPOINT")),
            (
                "access_key_id".into(),
                var("TOOLGATE_TEST_S3_ACCESS_KEY_ID"),
            ),
            (
                "secret_access_key".into(),
                var("TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"),
            ),
            ("region".into(), var("TOOLGATE_TEST_S3_REGION")),
            ("allow_http".into(), "true".into()),
        ]),
    ))
}

fn audited_engine(store: &str, options: &BTreeMap<String, String>, extra: &str) -> Engine {
    let mut policy = Policy::default();
    let mut audit = toolgate_policy::AuditSettings {
        sink: toolgate_policy::AuditSink::ObjectStore,
        store: Some(store.to_owned()),
        store_options: options.clone(),
        ..Default::default()
    };
    for line in extra.lines() {
        match line.split_once('=') {
            Some(("batch_lines", n)) => audit.batch_lines = n.parse().unwrap(),
            Some(("max_buffered_lines", n)) => audit.max_buffered_lines = n.parse().unwrap(),
            Some(("batch_interval", s)) => {
                audit.batch_interval = Duration::from_secs(s.parse().unwrap())
            }
            _ => {}
        }
    }
    policy.audit = Some(audit);
    Engine::builder(policy).tool(echo("echo")).build().unwrap()
}

/// Every object under `prefix`, oldest name first, as its lines.
async fn objects(store: &str, options: &BTreeMap<String, String>) -> Vec<Vec<Value>> {
    use futures::TryStreamExt;
    use object_store::{ObjectStore, ObjectStoreExt};
    let opened = toolgate::store::ObjectResultStore::from_url_opts(store, options.iter()).unwrap();
    let backend = opened.backend().clone();
    let mut listed: Vec<_> = backend
        .list(Some(opened.prefix()))
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    listed.sort_by(|a, b| a.location.cmp(&b.location));
    let mut out = Vec::new();
    for meta in listed {
        assert!(
            meta.location.as_ref().ends_with(".jsonl"),
            "{}",
            meta.location
        );
        let bytes = backend
            .get(&meta.location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        out.push(
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        );
    }
    out
}

async fn five_calls(engine: &Engine) {
    let s = engine.session(Some("audited")).unwrap();
    for i in 0..5 {
        engine
            .call(
                &s,
                &call(&format!("call-{i}"), "echo", json!({"text": i.to_string()})),
            )
            .await;
    }
}

fn call_ids(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l["call_id"].as_str().map(str::to_owned))
        .collect()
}

async fn batches_match_the_calls(store: &str, options: &BTreeMap<String, String>) {
    let engine = audited_engine(store, options, "batch_lines=2\nbatch_interval=3600");
    five_calls(&engine).await;
    // Closing the engine writes what is buffered: nothing is lost on shutdown.
    tokio::task::block_in_place(|| drop(engine));
    let batches = objects(store, options).await;
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 2, 1], "{batches:?}");
    let all: Vec<Value> = batches.into_iter().flatten().collect();
    assert_eq!(
        call_ids(&all),
        ["call-0", "call-1", "call-2", "call-3", "call-4"]
    );
    for line in &all {
        assert_eq!(line["tool"], "echo");
        assert_eq!(line["session"], "audited");
        assert_eq!(line["outcome"], "ok");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l7_audit_batches_in_a_local_folder_hold_every_call_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("file://{}/audit", dir.path().display());
    batches_match_the_calls(&store, &BTreeMap::new()).await;
}

#[cfg(feature = "s3")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l7_audit_batches_on_s3_hold_every_call_once_in_order() {
    let Some((bucket, options)) = s3() else {
        return;
    };
    let store = format!("s3://{bucket}/{}", unique("audit").replace(':', "-"));
    batches_match_the_calls(&store, &options).await;
}

#[cfg(feature = "s3")]
/// Creates `bucket` on the moto server (an unsigned PUT, which moto takes).
fn create_bucket(endpoint: &str, bucket: &str) {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    write!(
        conn,
        "PUT /{bucket} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[cfg(feature = "s3")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l7_a_store_that_is_down_keeps_a_bounded_buffer_and_the_next_batch_says_what_was_dropped() {
    let Some((_, options)) = s3() else {
        return;
    };
    // A bucket that does not exist yet: every write fails until the test creates it.
    let bucket = format!("toolgate-down-{}", toolgate::store::ResultId::generate())
        .to_lowercase()
        .replace('_', "-");
    let store = format!("s3://{bucket}/audit");
    let engine = audited_engine(
        &store,
        &options,
        "batch_lines=1\nmax_buffered_lines=3\nbatch_interval=3600",
    );
    five_calls(&engine).await;
    create_bucket(&options["endpoint"], &bucket);
    tokio::task::block_in_place(|| drop(engine));
    let all: Vec<Value> = objects(&store, &options)
        .await
        .into_iter()
        .flatten()
        .collect();
    let kept = call_ids(&all);
    let lost: u64 = all.iter().filter_map(|l| l["lost_lines"].as_u64()).sum();
    // The buffer holds 3 lines; the one batch the writer had taken out to write (batch_lines
    // 1) when the others arrived is not in it, and is written once the bucket exists.
    assert!(kept.len() <= 3 + 1, "the buffer holds 3 lines: {all:?}");
    assert_eq!(
        kept.len() as u64 + lost,
        5,
        "every line is written or counted: {all:?}"
    );
    // Apart from a first batch in flight, the newest lines are the ones kept.
    let buffered: Vec<String> = kept.iter().filter(|c| *c != "call-0").cloned().collect();
    assert!(buffered.len() <= 3, "the buffer holds 3 lines: {all:?}");
    let newest: Vec<String> = (5 - buffered.len()..5)
        .map(|i| format!("call-{i}"))
        .collect();
    assert_eq!(buffered, newest);
    assert!(lost >= 1, "{all:?}");
}
