//! Speed of the index at 100,000 tools: `cargo bench -p toolgate-search --bench speed`.
//!
//! The catalog is the three real catalogs repeated with renamed tools
//! (`name_r17`) up to 100,000 tools; queries are the real labelled queries
//! (`common/corpus.rs`, which `examples/bench_corpus.rs` writes out for the
//! side-by-side comparison of `scripts/bench-search.sh`). First the latency
//! percentiles on a small catalog (BFCL's 2,723 tools, its own queries). Then,
//! before criterion runs, the bench prints figures criterion does not give:
//! build time (in memory from the documents, and as `toolgate index build` does it: from the
//! catalog's JSON Lines file to the written index file), index file size, the time to open it (read, and mapped),
//! resident memory before and after mapping the file, and the median and p99
//! of single-query latency over all queries (of one run, and of each query's
//! least time over three runs).

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::Criterion;
use toolgate_search::{Catalog, Query, SearchIndex, Section, ToolDoc};
use toolgate_search_eval as eval;

#[path = "common/corpus.rs"]
mod corpus;

const TOOLS: usize = 100_000;

/// How many times each query runs for the latency percentiles.
const RUNS: usize = 3;

/// The speed corpus and its queries as text: a query's latency is timed from its text, as
/// `tool_search` gets it (and as the other engines' tokenizing is, side by side).
fn load() -> (Vec<ToolDoc>, Vec<String>) {
    // `corpus::real` keeps only the queries that parse.
    let (base, queries) = corpus::real();
    (corpus::repeated(&base, TOOLS), queries)
}

/// The BFCL catalog alone (2,723 tools) and its own queries: the small-catalog figures.
fn load_small() -> (Vec<ToolDoc>, Vec<String>) {
    let data = eval::load_dataset(&eval::datasets_dir(), "bfcl")
        .unwrap_or_else(|e| panic!("{e} (set {} to the data set directory)", eval::DATASETS_ENV));
    let queries = data
        .queries
        .into_iter()
        .map(|q| q.query)
        .filter(|q| Query::parse(q).is_ok())
        .collect();
    (data.catalog, queries)
}

/// Writes `docs` to `path` as a JSON Lines catalog, as `examples/bench_corpus.rs` does.
fn write_jsonl(docs: &[ToolDoc], path: &Path) {
    let mut w = BufWriter::new(std::fs::File::create(path).expect("creates the catalog"));
    for d in docs {
        serde_json::to_writer(
            &mut w,
            &serde_json::json!({
                "name": d.name,
                "description": d.description,
                "parameters": d.parameters,
            }),
        )
        .expect("writes the catalog");
        w.write_all(b"\n").expect("writes the catalog");
    }
    w.flush().expect("writes the catalog");
}

/// What `toolgate index build --catalog CATALOG -o INDEX` does: reads the JSON Lines catalog,
/// builds the index and writes it (without putting the file together in memory).
fn build_from_jsonl(catalog: &Path, index: &Path) {
    let read = Catalog::read_jsonl(catalog).expect("reads the catalog");
    SearchIndex::write_catalog(read, index).expect("builds and writes");
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn figures(docs: &[ToolDoc], queries: &[String], catalog: &Path) {
    // The index keeps its own copy of the documents; building borrows them.
    let start = Instant::now();
    let index = SearchIndex::build(docs).expect("builds");
    let build = start.elapsed();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tools.idx");
    index.write(&path).expect("writes");
    drop(index);
    let start = Instant::now();
    build_from_jsonl(catalog, &path);
    let from_jsonl = start.elapsed();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);

    // Read into memory (the safe open), then dropped: its time only.
    let start = Instant::now();
    drop(SearchIndex::open(&path).expect("opens"));
    let read = start.elapsed();

    let before = rss_kib();
    let start = Instant::now();
    // SAFETY: the file is this bench's own, in its own temporary directory; nothing changes it.
    let index = unsafe { SearchIndex::open_mapped(&path) }.expect("maps");
    let open = start.elapsed();
    let after_open = rss_kib();
    let sections = index.section_sizes();
    let (first, least) = latencies(&index, queries);
    let after_queries = rss_kib();
    println!("tools: {}, queries: {}", index.len(), queries.len());
    println!("build (in memory, incl. serialisation): {build:.2?}");
    println!(
        "build + write from the JSON Lines catalog ({:.1} MiB, as `toolgate index build`): {from_jsonl:.2?}",
        std::fs::metadata(catalog).map_or(0, |m| m.len()) as f64 / (1024.0 * 1024.0)
    );
    println!("index file: {:.1} MiB", size as f64 / (1024.0 * 1024.0));
    print_sections(size as usize, &sections);
    println!("open (read into memory + verify): {read:.2?}");
    println!("open_mapped (map + verify): {open:.2?}");
    println!(
        "VmRSS: before open {} KiB, after open {} KiB (+{}), after all queries {} KiB (+{})",
        before,
        after_open,
        after_open.saturating_sub(before),
        after_queries,
        after_queries.saturating_sub(before)
    );
    print_latencies(&first, &least);
}

/// The index's size by section: the search structures (what bm25s and tantivy store: terms,
/// postings, name lengths, re-ranking vocabulary and header) and, beside them, the tool records
/// with their offsets (what a search returns).
fn print_sections(size: usize, sections: &[(Section, usize)]) {
    let mib = |n: usize| n as f64 / (1024.0 * 1024.0);
    let is_record = |s: &Section| matches!(s, Section::ToolOffsets | Section::ToolRecords);
    let records: usize = sections
        .iter()
        .filter(|(s, _)| is_record(s))
        .map(|(_, n)| n)
        .sum();
    let parts: Vec<String> = sections
        .iter()
        .map(|(s, n)| format!("{s} {:.2}", mib(*n)))
        .collect();
    println!(
        "  search structures {:.2} MiB, tool records {:.2} MiB (MiB by section: {}, header {} B)",
        mib(size - records),
        mib(records),
        parts.join(", "),
        size - sections.iter().map(|(_, n)| n).sum::<usize>()
    );
}

/// Parses `text` and runs it for the top 5, as `tool_search` does.
fn search(index: &SearchIndex, text: &str) -> Option<toolgate_search::SearchResults> {
    Query::parse(text).ok().map(|q| index.search(&q, 5))
}

/// Single-query latencies over `queries`, each run [`RUNS`] times, sorted: those of the first
/// run, and each query's least time (which leaves out what other processes on the machine
/// cost a run).
fn latencies(index: &SearchIndex, queries: &[String]) -> (Vec<Duration>, Vec<Duration>) {
    let mut first = Vec::with_capacity(queries.len());
    let mut least = vec![Duration::MAX; queries.len()];
    for run in 0..RUNS {
        for (q, best) in queries.iter().zip(&mut least) {
            let start = Instant::now();
            black_box(search(index, black_box(q)));
            let took = start.elapsed();
            if run == 0 {
                first.push(took);
            }
            *best = (*best).min(took);
        }
    }
    first.sort_unstable();
    least.sort_unstable();
    (first, least)
}

fn print_latencies(first: &[Duration], least: &[Duration]) {
    for (label, times) in [("one run", first), ("least of runs", least)] {
        println!(
            "query latency (top 5, {label}): median {:.1?}, p90 {:.1?}, p99 {:.1?}, max {:.1?}",
            percentile(times, 0.5),
            percentile(times, 0.9),
            percentile(times, 0.99),
            percentile(times, 1.0)
        );
    }
}

/// The small-catalog figures: BFCL's 2,723 tools and its own queries.
fn small_figures(docs: &[ToolDoc], queries: &[String]) {
    let index = SearchIndex::build(docs).expect("builds");
    let (first, least) = latencies(&index, queries);
    println!(
        "small catalog: tools: {}, queries: {}, index {:.1} MiB",
        index.len(),
        queries.len(),
        index.size_bytes() as f64 / (1024.0 * 1024.0)
    );
    print_latencies(&first, &least);
}

fn main() {
    let (docs, queries) = load_small();
    small_figures(&docs, &queries);
    // Reading back a tool a search returns decompresses its block of texts: the cost each
    // returned tool adds to `tool_search`, on BFCL's large schemas.
    let small = SearchIndex::build(&docs).expect("builds");
    let names: Vec<String> = small.names().map(str::to_owned).collect();
    drop(docs);
    let mut c = Criterion::default().configure_from_args();
    let mut n = 0;
    c.bench_function("get_returned_tool_bfcl", |b| {
        b.iter(|| {
            n = (n + 7919) % names.len();
            small
                .get(black_box(&names[n]))
                .map(|d| d.parameters_json.len())
        })
    });
    drop(small);
    let (docs, queries) = load();
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("catalog.jsonl");
    write_jsonl(&docs, &catalog);
    figures(&docs, &queries, &catalog);

    let mut group = c.benchmark_group("index_100k");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("build", |b| b.iter(|| SearchIndex::build(&docs)));
    // As a user runs it: from the JSON Lines file to the written index file.
    let index_path = dir.path().join("tools.idx");
    group.bench_function("build_from_jsonl_and_write", |b| {
        b.iter(|| build_from_jsonl(&catalog, &index_path))
    });
    group.finish();

    let index = SearchIndex::build(&docs).expect("builds");
    let mut i = 0;
    c.bench_function("query_100k_top5", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            search(&index, black_box(&queries[i]))
        })
    });
    c.final_summary();
}
