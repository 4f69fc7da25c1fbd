//! Cost of the semantic stage at 100,000 tools: `cargo bench -p toolgate-search-eval --bench
//! semantic` (the model from `scripts/model.sh`, or `$TOOLGATE_SEMANTIC_MODEL`).
//!
//! The catalog is built as in the speed bench (the three real catalogs repeated with renamed
//! tools up to 100,000); queries are the real labelled queries. Before criterion runs, prints
//! the model load time, the time to compute and to write and read the tool vectors, the vectors
//! file size, and the median and p99 over all queries of the semantic query cost (embedding the
//! query and finding the nearest tools) and of a whole hybrid search (lexical, semantic, fusion)
//! against the lexical search alone.
//!
//! `TOOLGATE_BENCH_PASSES=<n>` times each query in `n` passes and keeps its fastest (a
//! preempted query then does not make the p99 of a loaded machine).
//!
//! `TOOLGATE_BENCH_DUMP=<file>` also writes, for every query, the hybrid top 5 (names and
//! score bits) and the nearest 50 by meaning (tool numbers and cosine bits): two builds whose
//! files are equal rank every query the same.
//!
//! With a transformer (`TOOLGATE_SEMANTIC_MODEL` set to a sentence-transformers directory, e.g.
//! the PyPI all-MiniLM-L6-v2 of `scripts/model.sh`), the tool vectors are kept in the target
//! folder between runs (named by the model's id; tools whose text is there are not embedded
//! again), 2,000 queries evenly spaced are timed (`TOOLGATE_BENCH_QUERIES` sets how many; all for
//! a static model), and criterion takes 20 samples.

fn main() {
    bench::main();
}

mod bench {
    use std::hint::black_box;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use criterion::Criterion;
    use toolgate_search::{Query, SearchIndex, ToolDoc};
    use toolgate_search_eval::{self as eval, DATASETS};
    use toolgate_search_semantic::{
        EmbeddingModel, FUSION_DEPTH, Semantic, SemanticIndex, ToolVectors,
    };

    const TOOLS: usize = 100_000;

    fn load() -> (Vec<ToolDoc>, Vec<String>) {
        let dir = eval::datasets_dir();
        let (mut base, mut queries) = (Vec::new(), Vec::new());
        for name in DATASETS {
            let data = eval::load_dataset(&dir, name).unwrap_or_else(|e| {
                panic!("{e} (set {} to the data set directory)", eval::DATASETS_ENV)
            });
            base.extend(data.catalog);
            queries.extend(data.queries.into_iter().map(|q| q.query));
        }
        let mut seen = std::collections::HashSet::new();
        base.retain(|d: &ToolDoc| seen.insert(d.name.clone()));
        let mut docs = Vec::with_capacity(TOOLS);
        'fill: for round in 0.. {
            for d in &base {
                if docs.len() == TOOLS {
                    break 'fill;
                }
                let mut d = d.clone();
                if round > 0 {
                    d.name = format!("{}_r{round}", d.name);
                }
                docs.push(d);
            }
        }
        (docs, queries)
    }

    /// This process's resident set size, from /proc (0 where there is none).
    fn rss_mib() -> f64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
                line.split_whitespace().nth(1)?.parse::<f64>().ok()
            })
            .map_or(0.0, |kib| kib / 1024.0)
    }

    fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
        times.sort_unstable();
        let at = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
        (at(0.5), at(0.99))
    }

    pub(crate) fn main() {
        let dir = eval::semantic_model_dir();
        let started = Instant::now();
        let model = match EmbeddingModel::load(&dir) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                println!("semantic bench skipped: {e} (run scripts/model.sh)");
                return;
            }
        };
        println!(
            "model {}: {} dimensions, loaded in {} ms",
            dir.display(),
            model.dims(),
            started.elapsed().as_millis()
        );
        let (docs, mut texts) = load();
        let transformer = model.kind() == "transformer";
        // A transformer costs milliseconds a query: time an even sample of the queries.
        let sample = std::env::var("TOOLGATE_BENCH_QUERIES")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(if transformer { 2000 } else { texts.len() });
        if sample < texts.len() {
            let step = texts.len() as f64 / sample as f64;
            texts = (0..sample)
                .map(|i| texts[(i as f64 * step) as usize].clone())
                .collect();
        }
        println!(
            "resident memory with the catalog loaded: {:.0} MiB",
            rss_mib()
        );
        let queries: Vec<Query> = texts.iter().filter_map(|q| Query::parse(q).ok()).collect();
        let lexical = SearchIndex::build(&docs).expect("builds");
        // A transformer's tool vectors are kept between runs (by model and content hash, as
        // `toolgate index` keeps them beside the index): they take minutes to compute.
        let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("semantic-bench-{:016x}.vectors", model.id()));
        let previous = if transformer {
            ToolVectors::open(&cache).ok()
        } else {
            None
        };
        let started = Instant::now();
        let base = SearchIndex::build(&docs).expect("builds");
        let (stage, computed) = Semantic::compute(model.clone(), &base, previous.as_ref());
        let index = base.with_semantic_stage(stage);
        let Some(semantic) = index.semantic() else {
            return;
        };
        println!(
            "{TOOLS} tools: index and tool vectors built in {} ms ({} tools embedded, {} distinct texts, {} reused from {})",
            started.elapsed().as_millis(),
            computed.embedded,
            computed.texts,
            computed.reused,
            if previous.is_some() {
                cache.display().to_string()
            } else {
                "nothing".into()
            }
        );
        if transformer && computed.embedded > 0 {
            semantic.vectors().write(&cache).expect("writes the cache");
        }
        let file =
            std::env::temp_dir().join(format!("toolgate-bench-{}.vectors", std::process::id()));
        let started = Instant::now();
        semantic.vectors().write(&file).expect("writes");
        let written = started.elapsed();
        let started = Instant::now();
        let read = ToolVectors::open(&file).expect("reads");
        println!(
            "vectors file: {:.1} MiB, written in {} ms, read and checked in {} ms ({} tools)",
            std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64 / 1048576.0,
            written.as_millis(),
            started.elapsed().as_millis(),
            read.len()
        );
        let _ = std::fs::remove_file(&file);
        let started = Instant::now();
        let (_, computed) = Semantic::compute(model.clone(), &lexical, Some(&read));
        println!(
            "rebuild from the previous vectors: {} ms ({} tools embedded, {} reused)",
            started.elapsed().as_millis(),
            computed.embedded,
            computed.reused
        );
        println!(
            "resident memory: {:.0} MiB (lexical index, hybrid index with vectors, model, catalog)",
            rss_mib()
        );

        // `TOOLGATE_BENCH_PASSES=N`: every query timed in N passes over all of them, its
        // fastest kept. On a loaded machine a single pass's p99 is the scheduler's time slice
        // (a query preempted once in a hundred); the fastest of a few passes is the query's own.
        let passes = std::env::var("TOOLGATE_BENCH_PASSES")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(1)
            .max(1);
        if passes > 1 {
            println!("each query's fastest of {passes} passes:");
        }
        let time = |f: &dyn Fn(usize)| {
            let mut times = vec![Duration::MAX; texts.len()];
            for _ in 0..passes {
                for (i, best) in times.iter_mut().enumerate() {
                    let t = Instant::now();
                    f(i);
                    *best = (*best).min(t.elapsed());
                }
            }
            percentiles(times)
        };
        let (p50, p99) = time(&|i| {
            black_box(semantic.nearest(&texts[i], FUSION_DEPTH));
        });
        println!(
            "semantic query cost (embed + nearest {FUSION_DEPTH}), {} queries: p50 {} us, p99 {} us",
            texts.len(),
            p50.as_micros(),
            p99.as_micros()
        );
        let (p50, p99) = time(&|i| {
            black_box(model.embed(&texts[i]));
        });
        println!(
            "  of which embedding the query: p50 {} us, p99 {} us",
            p50.as_micros(),
            p99.as_micros()
        );
        let (p50, p99) = time(&|i| {
            if let Some(q) = queries.get(i) {
                black_box(lexical.search(q, 5));
            }
        });
        println!(
            "lexical search top 5: p50 {} us, p99 {} us",
            p50.as_micros(),
            p99.as_micros()
        );
        let (p50, p99) = time(&|i| {
            if let Some(q) = queries.get(i) {
                black_box(index.search(q, 5));
            }
        });
        println!(
            "hybrid search top 5: p50 {} us, p99 {} us",
            p50.as_micros(),
            p99.as_micros()
        );

        if let Some(path) = std::env::var_os("TOOLGATE_BENCH_DUMP") {
            let mut out = String::new();
            for text in &texts {
                let hits = Query::parse(text)
                    .map(|q| index.search(&q, 5).hits)
                    .unwrap_or_default();
                let top: Vec<String> = hits
                    .iter()
                    .map(|h| format!("{}:{:08x}", h.name, h.score.to_bits()))
                    .collect();
                let near: Vec<String> = semantic
                    .nearest(text, FUSION_DEPTH)
                    .iter()
                    .map(|(c, t)| format!("{t}:{:08x}", c.to_bits()))
                    .collect();
                out.push_str(&format!("{}\t{}\n", top.join(" "), near.join(" ")));
            }
            std::fs::write(&path, out).expect("writes the dump");
            println!("results of {} queries written", texts.len());
        }

        let mut c = if transformer {
            Criterion::default()
                .sample_size(20)
                .measurement_time(Duration::from_secs(10))
        } else {
            Criterion::default()
        }
        .configure_from_args();
        let mut i = 0;
        c.bench_function("semantic_query_100k", |b| {
            b.iter(|| {
                i = (i + 1) % texts.len();
                semantic.nearest(black_box(&texts[i]), FUSION_DEPTH)
            })
        });
        let mut i = 0;
        c.bench_function("hybrid_query_100k_top5", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                index.search(black_box(&queries[i]), 5)
            })
        });
        c.final_summary();
    }
}
