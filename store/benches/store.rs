//! Benchmarks of toolgate-store (SPEC R3: "reading a page costs time in proportion to the page").
//!
//! - `read_page_100mb_local/{first,middle,last}`: one 20,000-character page of a 100 MB multi-byte result
//!   on local disk. The three should take the same time.
//! - `offload_10mb/{local,s3}`: saving a 10 MB result, in MB/s. The S3 case runs against the server of
//!   `scripts/s3-server.sh` and is skipped with a message when `TOOLGATE_TEST_S3_ENDPOINT` is unset
//!   or the crate is built without its `s3` feature.
//!
//! Run with `cargo bench -p toolgate-store` (`--features s3` for the S3 case).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolgate_store::{NewResult, ObjectResultStore, ResultStore};

const PAGE: u64 = 20_000;

/// Mixed 1- to 4-byte characters, as in the tests.
fn big_text(bytes: usize) -> String {
    let block = "plain ascii Grüße 中文字符 😀🦀 \n";
    block.repeat(bytes.div_ceil(block.len()))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn read_pages(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("file://{}/results", dir.path().display());
    let store = ObjectResultStore::from_url(&url).expect("a local store");
    let text = big_text(100 << 20);
    let meta = rt
        .block_on(store.save(NewResult::new(None), &text))
        .expect("saving 100 MB");
    drop(text);
    let total = meta.chars;

    let mut group = c.benchmark_group("read_page_100mb_local");
    for (name, offset) in [("first", 0), ("middle", total / 2), ("last", total - PAGE)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let page = rt
                    .block_on(store.read_chars(&meta.id, offset, PAGE))
                    .expect("a page");
                assert_eq!(page.end - page.offset, PAGE);
                page
            })
        });
    }
    group.finish();
}

#[cfg(not(feature = "s3"))]
fn s3_store() -> Option<ObjectResultStore> {
    eprintln!("SKIPPED offload_10mb/s3: built without the s3 feature (cargo bench --features s3)");
    None
}

#[cfg(feature = "s3")]
fn s3_store() -> Option<ObjectResultStore> {
    use std::collections::BTreeMap;

    use toolgate_store::ResultId;

    let Ok(endpoint) = std::env::var("TOOLGATE_TEST_S3_ENDPOINT") else {
        eprintln!(
            "SKIPPED offload_10mb/s3: S3 test server not configured; run `eval \"$(scripts/s3-server.sh start)\"`"
        );
        return None;
    };
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let options = BTreeMap::from([
        ("endpoint", endpoint),
        ("access_key_id", var("TOOLGATE_TEST_S3_ACCESS_KEY_ID")),
        (
            "secret_access_key",
            var("TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"),
        ),
        ("region", var("TOOLGATE_TEST_S3_REGION")),
        ("allow_http", "true".to_owned()),
    ]);
    let url = format!(
        "s3://{}/bench/{}",
        var("TOOLGATE_TEST_S3_BUCKET"),
        ResultId::generate()
    );
    Some(ObjectResultStore::from_url_opts(&url, &options).expect("an S3 store"))
}

fn offload(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("file://{}/results", dir.path().display());
    let local = ObjectResultStore::from_url(&url).expect("a local store");
    let text = big_text(10 << 20);

    let mut group = c.benchmark_group("offload_10mb");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    let mut stores = vec![("local", local)];
    stores.extend(s3_store().map(|s3| ("s3", s3)));
    for (name, store) in stores {
        group.bench_function(name, |b| {
            // Each save is timed alone; deleting it afterwards keeps the disk from filling up.
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let meta = rt
                        .block_on(store.save(NewResult::new(None), &text))
                        .expect("a save");
                    spent += started.elapsed();
                    rt.block_on(store.delete(&meta.id)).expect("a delete");
                }
                spent
            })
        });
    }
    group.finish();
}

criterion_group!(benches, read_pages, offload);
criterion_main!(benches);
