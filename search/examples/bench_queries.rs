//! Query latencies of a written index, for `scripts/bench-search.sh`:
//! `cargo run --release --example bench_queries -- INDEX QUERIES.jsonl` maps the index, runs
//! every query (`{"id", "query"}` per line) three times for the top 5 without explanations, as
//! `tool_search` does (from the query's text: parsing, as the others' tokenizing, is timed),
//! and prints one JSON object: the query count, the index size (in all, the
//! search structures, the tool records with their offsets, and each section), and the median
//! and 99th percentile in microseconds of each query's least time over the runs.
//!
//! Two more modes, for comparing two builds of the search (neither is timed):
//!
//! * `bench_queries INDEX QUERIES.jsonl --dump [K]`: each query's top K (default 50: as the
//!   first stage and the re-ranking produce them, and as the semantic stage's fusion reads them;
//!   5 is what the timed runs ask for) as `QUERY NAME SCORE-BITS` lines, for `cmp` between builds.
//! * `bench_queries INDEX QUERIES.jsonl --each`: each query's least time over the runs, in
//!   microseconds, as `{"id", "query", "us"}` lines: a query file of the slowest is a sort away.
//! * `bench_queries INDEX QUERIES.jsonl --once [FIRST [COUNT]]`: runs the queries once each,
//!   top 5, and prints nothing: a run to count instructions of (`valgrind --tool=callgrind`).

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use toolgate_search::{Query, SearchIndex, Section};

const RUNS: usize = 3;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let usage =
        "usage: bench_queries INDEX QUERIES.jsonl [--dump [K] | --each | --once [FIRST [COUNT]]]";
    let index_path = std::path::PathBuf::from(args.next().ok_or(usage)?);
    let queries_path = std::path::PathBuf::from(args.next().ok_or(usage)?);
    let mode: Vec<String> = args
        .map(|a| a.into_string().map_err(|_| usage))
        .collect::<Result<_, _>>()?;
    // SAFETY: the bench script writes the index before this runs and does not touch it after.
    let index = unsafe { SearchIndex::open_mapped(&index_path) }?;
    let mut queries = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(&queries_path)?).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)?;
        if let Some(q) = v.get("query").and_then(|q| q.as_str())
            && Query::parse(q).is_ok()
        {
            queries.push(q.to_owned());
        }
    }
    match mode.first().map(String::as_str) {
        None => {}
        Some("--dump") => {
            let k: usize = mode.get(1).map_or(Ok(50), |s| s.parse())?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for (i, q) in queries.iter().enumerate() {
                let hits = Query::parse(q).map(|q| index.search(&q, k).hits);
                for h in hits.unwrap_or_default() {
                    writeln!(out, "{i} {} {:08x}", h.name, h.score.to_bits())?;
                }
            }
            return Ok(());
        }
        Some("--once") => {
            let number = |i: usize, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
                Ok(mode.get(i).map_or(Ok(default), |s| s.parse())?)
            };
            let (first, count) = (number(1, 0)?, number(2, usize::MAX)?);
            for q in queries.iter().skip(first).take(count) {
                let q = Query::parse(std::hint::black_box(q));
                std::hint::black_box(q.map(|q| index.search(&q, 5)).ok());
            }
            return Ok(());
        }
        Some("--each") => {}
        Some(_) => return Err(usage.into()),
    }
    let mut least = vec![Duration::MAX; queries.len()];
    for _ in 0..RUNS {
        for (q, best) in queries.iter().zip(&mut least) {
            let start = Instant::now();
            let q = Query::parse(std::hint::black_box(q));
            std::hint::black_box(q.map(|q| index.search(&q, 5)).ok());
            *best = (*best).min(start.elapsed());
        }
    }
    if mode.first().map(String::as_str) == Some("--each") {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for (i, (q, d)) in queries.iter().zip(&least).enumerate() {
            let line = serde_json::json!({"id": i, "query": q, "us": d.as_secs_f64() * 1e6});
            writeln!(out, "{line}")?;
        }
        return Ok(());
    }
    least.sort_unstable();
    let at = |p: f64| {
        let i = ((least.len() as f64 - 1.0) * p).round() as usize;
        least.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    // What a search reads (as bm25s and tantivy store it) apart from what it returns: the tool
    // records and their offsets.
    let sections = index.section_sizes();
    let records: usize = sections
        .iter()
        .filter(|(s, _)| matches!(s, Section::ToolOffsets | Section::ToolRecords))
        .map(|(_, n)| n)
        .sum();
    let by_section: serde_json::Map<String, serde_json::Value> = sections
        .iter()
        .map(|(s, n)| (s.to_string(), (*n).into()))
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "queries": queries.len(),
            "index_bytes": index.size_bytes(),
            "search_bytes": index.size_bytes() - records,
            "record_bytes": records,
            "sections": by_section,
            "p50_us": at(0.5),
            "p99_us": at(0.99),
        })
    );
    Ok(())
}
