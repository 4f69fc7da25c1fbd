//! Query speed and result probes over written indexes, for comparing two builds of the search:
//!
//! * `probe write DIR`: writes `DIR/{bfcl,sealtools,metatool,100k}.idx` and each one's
//!   `.queries` (one query a line): the data sets with their own queries, and the speed
//!   bench's 100,000-tool catalog with every real query.
//! * `probe dump INDEX QUERIES`: each query's top 50, names and score bits, for `cmp`.
//! * `probe time INDEX QUERIES RUNS`: median and p99 of each query's least time over the runs
//!   (from the query's text, as `tool_search` gets it: parsing is timed).
//! * `probe run INDEX QUERIES [FIRST [COUNT]]`: parses and runs the queries once (for callgrind).
//! * `probe slow INDEX QUERIES RUNS N`: the N slowest queries by least time, as numbers.

#[path = "../benches/common/corpus.rs"]
mod corpus;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use toolgate_search::{Query, SearchIndex};
use toolgate_search_eval as eval;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn write_set(dir: &Path, name: &str, index: &SearchIndex, queries: &[String]) -> Res<()> {
    index.write(&dir.join(format!("{name}.idx")))?;
    let mut w = std::fs::File::create(dir.join(format!("{name}.queries")))?;
    for q in queries {
        writeln!(w, "{}", q.replace('\n', " "))?;
    }
    Ok(())
}

/// The index and the queries that parse (numbered from 0 in that order by `slow`).
fn open(index: &str, queries: &str) -> Res<(SearchIndex, Vec<String>)> {
    let index = SearchIndex::open(Path::new(index))?;
    let queries = std::fs::read_to_string(queries)?
        .lines()
        .filter(|q| Query::parse(q).is_ok())
        .map(str::to_owned)
        .collect();
    Ok((index, queries))
}

/// Parses `text` and runs it for the top `k`, as `tool_search` does.
fn search(index: &SearchIndex, text: &str, k: usize) -> Option<toolgate_search::SearchResults> {
    Query::parse(text).ok().map(|q| index.search(&q, k))
}

fn least(index: &SearchIndex, queries: &[String], runs: usize) -> Vec<Duration> {
    let mut least = vec![Duration::MAX; queries.len()];
    for _ in 0..runs {
        for (q, best) in queries.iter().zip(&mut least) {
            let start = Instant::now();
            std::hint::black_box(search(index, std::hint::black_box(q), 5));
            *best = (*best).min(start.elapsed());
        }
    }
    least
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).ok_or("missing argument");
    match arg(0)? {
        "write" => {
            let dir = Path::new(arg(1)?);
            std::fs::create_dir_all(dir)?;
            for name in eval::DATASETS {
                let data = eval::load_dataset(&eval::datasets_dir(), name)?;
                let index = SearchIndex::build(&data.catalog)?;
                let queries: Vec<String> = data.queries.into_iter().map(|q| q.query).collect();
                write_set(dir, name, &index, &queries)?;
            }
            let (base, queries) = corpus::real();
            let index = SearchIndex::build(corpus::repeated(&base, 100_000))?;
            write_set(dir, "100k", &index, &queries)?;
        }
        "dump" => {
            let (index, queries) = open(arg(1)?, arg(2)?)?;
            let mut out = std::io::BufWriter::new(std::io::stdout());
            for (i, q) in queries.iter().enumerate() {
                for h in search(&index, q, 50).map(|r| r.hits).unwrap_or_default() {
                    writeln!(out, "{i} {} {:08x}", h.name, h.score.to_bits())?;
                }
            }
        }
        "time" => {
            let (index, queries) = open(arg(1)?, arg(2)?)?;
            let runs: usize = arg(3)?.parse()?;
            let mut t = least(&index, &queries, runs);
            t.sort_unstable();
            let at = |p: f64| t[((t.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6;
            println!(
                "p50 {:.1} us, p90 {:.1} us, p99 {:.1} us",
                at(0.5),
                at(0.9),
                at(0.99)
            );
        }
        "slow" => {
            let (index, queries) = open(arg(1)?, arg(2)?)?;
            let runs: usize = arg(3)?.parse()?;
            let n: usize = arg(4)?.parse()?;
            let t = least(&index, &queries, runs);
            let mut order: Vec<usize> = (0..t.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(t[i]));
            for i in order.into_iter().take(n) {
                println!("{i}");
            }
        }
        "run" => {
            let (index, queries) = open(arg(1)?, arg(2)?)?;
            let first: usize = args.get(3).map_or(Ok(0), |s| s.parse())?;
            let count: usize = args.get(4).map_or(Ok(usize::MAX), |s| s.parse())?;
            for q in queries.iter().skip(first).take(count) {
                std::hint::black_box(search(&index, q, 5));
            }
        }
        other => return Err(format!("unknown command {other}").into()),
    }
    Ok(())
}
