//! The search quality benchmark: `cargo bench -p toolgate-search-eval --bench quality`.
//!
//! For each labelled data set (see `toolgate_search_eval`), prints recall@1,
//! recall@5, nDCG@5 and MRR@10 (x100) for the reference keyword scoring,
//! plain BM25 and the index, on all queries and on each half of the
//! id-hash split (ranking was tuned on the "tune" half only); with the model of
//! `scripts/model.sh` installed, "dense" (nearest tools alone) and "hybrid" (fused with the
//! default fusion) too.
//!
//! `--leave-one-out` prints instead the leave-one-data-set-out table (see `loo.rs`): for each
//! set X, the fusion chosen on the other sets' tune halves, and X's held-out half scored
//! lexical / dense / hybrid with paired bootstrap 95% intervals against lexical. The model is
//! `$TOOLGATE_SEMANTIC_MODEL` (default: the general model, which saw no data set); with
//! `--fitted`, each X is ranked with `.tools/models/minilm-l6-without-X` instead
//! (`scripts/model.sh --leave-out X`), fitted to the other sets' texts only. The model may be a
//! transformer (a sentence-transformers directory such as the PyPI package of
//! all-MiniLM-L6-v2): each set is then embedded once, in batches, and the time it took printed.
//!
//! `--encode-time` prints instead how long the model takes to embed one query, one at a time
//! as `tool_search` does (p50 and p99 over 2,000 MetaTool queries, after 50 to warm up), with
//! the load average of the machine, the queries' token counts, and (`$TOOLGATE_VECTORS_OUT`,
//! `$TOOLGATE_VECTORS_REF`) their vectors written or compared with another build's.
//! `$TOOLGATE_QUERY_THREADS` sets the threads a transformer runs one query on;
//! `$TOOLGATE_PRECISION=f32` keeps its linear layers in float32 (not int8).

use std::process::ExitCode;

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_search::SearchIndex;
use toolgate_search_eval::loo::{self, Ranked, System, TuneSet};
use toolgate_search_eval::{
    self as eval, ALL_DATASETS, Bm25Baseline, EvalQuery, Half, KeywordBaseline, Metrics, Ranker,
    TunePart,
};
use toolgate_search_semantic::{EmbeddingModel, Precision, Semantic, SemanticIndex, Transformer};

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a filter argument selects data sets.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let dir = eval::datasets_dir();
    println!("data sets: {}", dir.display());
    if std::env::args().any(|a| a == "--encode-time") {
        return encode_time();
    }
    if std::env::args().any(|a| a == "--leave-one-out") {
        let fitted = std::env::args().any(|a| a == "--fitted");
        return leave_one_out(fitted);
    }
    println!(
        "{:<10} {:<8} {:<8} {:>6} {:>6} {:>6} {:>7} {:>7}",
        "dataset", "split", "system", "R@1", "R@5", "nDCG@5", "MRR@10", "queries"
    );
    let model = EmbeddingModel::load(&eval::semantic_model_dir())
        .map(Arc::new)
        .map_err(|e| eprintln!("no semantic rows: {e} (run scripts/model.sh)"))
        .ok();
    for name in ALL_DATASETS {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let data = match eval::load_named(name) {
            Ok(d) => d,
            Err(e) => {
                eprintln!(
                    "error: {e} (set {} to the data set directory)",
                    eval::DATASETS_ENV
                );
                return ExitCode::FAILURE;
            }
        };
        let ours = match SearchIndex::build(data.catalog.clone()) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("error: {name}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let keyword = KeywordBaseline::new(&data.catalog);
        let bm25 = Bm25Baseline::new(&data.catalog);
        let mut systems: Vec<(&str, &dyn Ranker)> =
            vec![("keyword", &keyword), ("bm25", &bm25), ("ours", &ours)];
        let hybrid = model.as_ref().and_then(|m| {
            Some(
                SearchIndex::build(data.catalog.clone())
                    .ok()?
                    .with_semantic(m.clone()),
            )
        });
        let dense = hybrid.as_ref().map(eval::DenseRanker::new);
        if let (Some(hybrid), Some(dense)) = (&hybrid, &dense) {
            systems.push(("dense", dense));
            systems.push(("hybrid", hybrid));
        }
        let splits: [(&str, Split); 5] = [
            ("all", Split::All),
            ("tune", Split::Half(Half::Tune)),
            ("fit", Split::Part(TunePart::Fit)),
            ("fuse", Split::Part(TunePart::Fuse)),
            ("holdout", Split::Half(Half::Holdout)),
        ];
        for (split, which) in splits {
            // The tune half's parts matter only to the semantic stage's model and fusion.
            if matches!(which, Split::Part(_)) && !systems.iter().any(|(n, _)| *n == "hybrid") {
                continue;
            }
            let queries: Vec<&EvalQuery> =
                data.queries.iter().filter(|q| which.holds(&q.id)).collect();
            for &(system, ranker) in &systems {
                print_row(
                    name,
                    split,
                    system,
                    &eval::evaluate(ranker, queries.iter().copied()),
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// A subset of a data set's queries.
#[derive(Clone, Copy)]
enum Split {
    All,
    Half(Half),
    Part(TunePart),
}

impl Split {
    fn holds(self, id: &str) -> bool {
        match self {
            Split::All => true,
            Split::Half(h) => eval::half_of(id) == h,
            Split::Part(p) => eval::tune_part_of(id) == Some(p),
        }
    }
}

fn print_row(dataset: &str, split: &str, system: &str, m: &Metrics) {
    println!(
        "{dataset:<10} {split:<8} {system:<8} {:>6.1} {:>6.1} {:>6.2} {:>7.1} {:>7}",
        100.0 * m.recall_at_1,
        100.0 * m.recall_at_5,
        100.0 * m.ndcg_at_5,
        100.0 * m.mrr_at_10,
        m.queries
    );
}

/// One set's rankings, split into its tune and held-out halves.
struct SetRankings {
    name: &'static str,
    tune: Vec<Ranked>,
    tune_labels: Vec<usize>,
    holdout: Vec<Ranked>,
    holdout_labels: Vec<usize>,
}

fn rankings(name: &'static str, model: Arc<EmbeddingModel>) -> Result<SetRankings, String> {
    let data = eval::load_named(name).map_err(|e| e.to_string())?;
    let index = SearchIndex::build(data.catalog).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let (semantic, _) = Semantic::compute(model, &index, None);
    let tools_took = started.elapsed();
    let half = |h: Half| -> Vec<&EvalQuery> {
        data.queries
            .iter()
            .filter(|q| eval::half_of(&q.id) == h)
            .collect()
    };
    let (tune, holdout) = (half(Half::Tune), half(Half::Holdout));
    let started = Instant::now();
    let rankings = SetRankings {
        name,
        tune: loo::rank_all(&index, &semantic, tune.iter().copied()),
        tune_labels: tune.iter().map(|q| q.relevant.len()).collect(),
        holdout: loo::rank_all(&index, &semantic, holdout.iter().copied()),
        holdout_labels: holdout.iter().map(|q| q.relevant.len()).collect(),
    };
    println!(
        "{name}: {} tools embedded in {:.1} s, {} queries ranked in {:.1} s",
        index.len(),
        tools_took.as_secs_f64(),
        tune.len() + holdout.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(rankings)
}

fn model_dir(fitted: bool, left_out: &str) -> std::path::PathBuf {
    if fitted {
        let general = eval::semantic_model_dir();
        general.with_file_name(format!("minilm-l6-without-{left_out}"))
    } else {
        eval::semantic_model_dir()
    }
}

/// The leave-one-data-set-out table (see the crate documentation).
fn leave_one_out(fitted: bool) -> ExitCode {
    let grid = loo::grid();
    println!(
        "leave-one-data-set-out, nDCG@5 x100 on each set's held-out half; fusion chosen on the \
         other sets' tune halves ({} fusions); paired bootstrap 95% CI against lexical",
        grid.len()
    );
    // With one model for all (the general one), each set is ranked once.
    let mut shared: Vec<SetRankings> = Vec::new();
    if !fitted {
        let dir = model_dir(false, "");
        let model = match EmbeddingModel::load(&dir) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                eprintln!("error: {e} (run scripts/model.sh)");
                return ExitCode::FAILURE;
            }
        };
        println!("model: {} ({})", dir.display(), model.kind());
        for name in ALL_DATASETS {
            match rankings(name, model.clone()) {
                Ok(r) => shared.push(r),
                Err(e) => {
                    eprintln!("error: {name}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    println!(
        "{:<10} {:>6} {:>7} {:>7} {:>17} {:>7} {:>17}  fusion (k, weight, scale, power, min cosine)",
        "held out", "n", "lexical", "dense", "dense-lex CI", "hybrid", "hybrid-lex CI"
    );
    let mut rows = Vec::new();
    // With one model for all, the margin of every fusion on every set's tune half is computed
    // once; each held-out set's choice reads the other sets' rows.
    let shared_table = (!fitted).then(|| {
        let tune: Vec<TuneSet<'_>> = shared
            .iter()
            .map(|s| TuneSet {
                name: s.name,
                ranked: &s.tune,
                labels: &s.tune_labels,
            })
            .collect();
        loo::margins(&tune, &grid)
    });
    for held_out in ALL_DATASETS {
        let own: Vec<SetRankings>;
        let sets: &[SetRankings] = if fitted {
            let dir = model_dir(true, held_out);
            let model = match EmbeddingModel::load(&dir) {
                Ok(m) => Arc::new(m),
                Err(e) => {
                    eprintln!("error: {e} (run scripts/model.sh --leave-out {held_out})");
                    return ExitCode::FAILURE;
                }
            };
            let mut v = Vec::new();
            for name in ALL_DATASETS {
                match rankings(name, model.clone()) {
                    Ok(r) => v.push(r),
                    Err(e) => {
                        eprintln!("error: {name}: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            own = v;
            &own
        } else {
            &shared
        };
        let others: Vec<usize> = (0..sets.len())
            .filter(|&i| sets[i].name != held_out)
            .collect();
        let (fusion, margins) = match &shared_table {
            Some(table) => loo::choose_from(table, &others, &grid),
            None => {
                let tune: Vec<TuneSet<'_>> = others
                    .iter()
                    .map(|&i| TuneSet {
                        name: sets[i].name,
                        ranked: &sets[i].tune,
                        labels: &sets[i].tune_labels,
                    })
                    .collect();
                loo::choose(&tune, &grid)
            }
        };
        let Some(x) = sets.iter().find(|s| s.name == held_out) else {
            continue;
        };
        let lex = loo::per_query(&x.holdout, &x.holdout_labels, System::Lexical);
        let dense = loo::per_query(&x.holdout, &x.holdout_labels, System::Dense);
        let hybrid = loo::per_query(&x.holdout, &x.holdout_labels, System::Hybrid(fusion));
        let (dl, dh) = loo::paired_ci(&dense, &lex, 2000);
        let (hl, hh) = loo::paired_ci(&hybrid, &lex, 2000);
        let better = hybrid.iter().zip(&lex).filter(|(h, l)| h > l).count();
        let worse = hybrid.iter().zip(&lex).filter(|(h, l)| h < l).count();
        let f = match fusion {
            toolgate_search_semantic::Fusion::AdaptiveRrf {
                k,
                dense_weight,
                lexical_scale,
                power,
                min_cosine,
            } => format!("{k}, {dense_weight}, {lexical_scale}, {power}, {min_cosine}"),
            other => format!("{other:?}"),
        };
        println!(
            "{:<10} {:>6} {:>7.2} {:>7.2} {:>+7.2}..{:>+7.2} {:>7.2} {:>+7.2}..{:>+7.2}  {f}; tune margins {:?}; hybrid better on {better}, worse on {worse}",
            held_out,
            lex.len(),
            loo::mean(&lex),
            loo::mean(&dense),
            dl,
            dh,
            loo::mean(&hybrid),
            hl,
            hh,
            margins
                .iter()
                .map(|m| (m * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
        rows.push((held_out, loo::mean(&hybrid) - loo::mean(&lex), hh));
    }
    if let Some(table) = &shared_table {
        let all: Vec<usize> = (0..shared.len()).collect();
        let (f, m) = loo::choose_from(table, &all, &grid);
        println!(
            "chosen on all {} sets' tune halves (the default to ship): {f:?}; margins {:?}",
            all.len(),
            m.iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
    }
    for (name, diff, high) in rows {
        let verdict = if high < 0.0 {
            "SIGNIFICANTLY BELOW lexical"
        } else if diff < -0.2 {
            "mean more than 0.2 below lexical"
        } else {
            "never worse: holds"
        };
        println!("{name}: {verdict}");
    }
    ExitCode::SUCCESS
}

/// The time to embed one query, one at a time (see the crate documentation).
fn encode_time() -> ExitCode {
    let dir = eval::semantic_model_dir();
    let started = Instant::now();
    // `$TOOLGATE_PRECISION=f32`: a transformer's linear layers in float32 (the default is
    // int8 where the CPU has AVX-512 VNNI).
    let f32_only = std::env::var("TOOLGATE_PRECISION").is_ok_and(|p| p == "f32");
    let loaded = if f32_only && dir.join("modules.json").is_file() {
        println!("precision: f32");
        Transformer::load_with(&dir, Precision::F32).map(EmbeddingModel::Transformer)
    } else {
        EmbeddingModel::load(&dir)
    };
    let model = match loaded {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e} (run scripts/model.sh)");
            return ExitCode::FAILURE;
        }
    };
    // `$TOOLGATE_QUERY_THREADS`: the threads a transformer runs one query on (1 or 2).
    let threads = std::env::var("TOOLGATE_QUERY_THREADS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok());
    let model = match (model, threads) {
        (EmbeddingModel::Transformer(t), Some(n)) => {
            println!("query threads: {n}");
            EmbeddingModel::Transformer(t.with_query_threads(n))
        }
        (m, _) => m,
    };
    println!(
        "model: {} ({}, {} dimensions), loaded in {} ms",
        dir.display(),
        model.kind(),
        model.dims(),
        started.elapsed().as_millis()
    );
    let data = match eval::load_named("metatool") {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let texts: Vec<&str> = data.queries.iter().map(|q| q.query.as_str()).collect();
    for t in texts.iter().take(50) {
        std::hint::black_box(model.embed(t));
    }
    println!("load average before: {}", load().trim());
    // Wall time; the time this thread was on a core (`CLOCK_THREAD_CPUTIME_ID`, to the
    // nanosecond: `/proc/thread-self/schedstat`, read before, lags by up to a scheduler tick
    // while the thread runs); and the CPU time of all the process's threads (a query split
    // across two threads uses both). On a loaded machine the first counts the waits for a core
    // too, the others what a query costs where a core is free.
    let mut vectors: Vec<f32> = Vec::new();
    let mut samples: Vec<[Duration; 3]> = texts
        .iter()
        .take(2000)
        .map(|t| {
            let (thread, process) = (cpu_ns(THREAD), cpu_ns(PROCESS));
            let started = Instant::now();
            let v = std::hint::black_box(model.embed(std::hint::black_box(t)));
            let wall = started.elapsed();
            let thread = Duration::from_nanos(cpu_ns(THREAD).saturating_sub(thread));
            let process = Duration::from_nanos(cpu_ns(PROCESS).saturating_sub(process));
            vectors.extend(v.unwrap_or_else(|| vec![0.0; model.dims()]));
            [wall, thread, process]
        })
        .collect();
    if let EmbeddingModel::Transformer(t) = &model {
        let thread: Vec<Duration> = samples.iter().map(|s| s[1]).collect();
        tokens_by_time(t, &texts, &thread);
    }
    compare_vectors(&vectors, model.dims());
    for (i, what) in [
        "wall time",
        "time on a core, this thread",
        "CPU time, all threads",
    ]
    .into_iter()
    .enumerate()
    {
        samples.sort_unstable_by_key(|s| s[i]);
        let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p).round() as usize][i];
        let mean = samples.iter().map(|s| s[i]).sum::<Duration>() / samples.len().max(1) as u32;
        println!(
            "embed one query ({what}), {} MetaTool queries: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, mean {:.2} ms",
            samples.len(),
            at(0.5).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3,
            at(1.0).as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3
        );
    }
    println!("load average after: {}", load().trim());
    ExitCode::SUCCESS
}

const THREAD: libc::clockid_t = libc::CLOCK_THREAD_CPUTIME_ID;
const PROCESS: libc::clockid_t = libc::CLOCK_PROCESS_CPUTIME_ID;

/// The CPU time of `clock` (this thread's or this process's), in nanoseconds; 0 if unreadable.
fn cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write; the clock ids are the kernel's.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Which query lengths make the slow queries: the token counts of the queries by time on a
/// core (the median query's, and the slowest 1%'s).
fn tokens_by_time(model: &Transformer, texts: &[&str], cpu: &[Duration]) {
    let mut by: Vec<(Duration, usize)> = cpu
        .iter()
        .zip(texts)
        .map(|(c, t)| (*c, model.token_ids(t).len()))
        .collect();
    by.sort_unstable();
    let mut tokens: Vec<usize> = by.iter().map(|b| b.1).collect();
    tokens.sort_unstable();
    let at = |v: &[usize], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let slow: Vec<usize> = by[by.len() * 99 / 100..].iter().map(|b| b.1).collect();
    println!(
        "tokens a query: p50 {}, p99 {}, max {}; the median-time query has {}, the slowest 1% have {}..{} (mean {:.0})",
        at(&tokens, 0.5),
        at(&tokens, 0.99),
        tokens.last().copied().unwrap_or(0),
        by[by.len() / 2].1,
        slow.iter().min().copied().unwrap_or(0),
        slow.iter().max().copied().unwrap_or(0),
        slow.iter().sum::<usize>() as f64 / slow.len().max(1) as f64
    );
}

/// With `$TOOLGATE_VECTORS_OUT`, writes the queries' vectors there (float32, little-endian);
/// with `$TOOLGATE_VECTORS_REF`, prints the smallest and mean cosine of each vector with the
/// one of that file (another build's output on the same queries).
fn compare_vectors(vectors: &[f32], dims: usize) {
    if let Some(path) = std::env::var_os("TOOLGATE_VECTORS_OUT") {
        let bytes: Vec<u8> = vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("error: {}: {e}", path.to_string_lossy());
        }
    }
    let Some(path) = std::env::var_os("TOOLGATE_VECTORS_REF") else {
        return;
    };
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!("error: cannot read {}", path.to_string_lossy());
        return;
    };
    let reference: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let cosines: Vec<f32> = vectors
        .chunks_exact(dims)
        .zip(reference.chunks_exact(dims))
        .filter(|(a, b)| a.iter().any(|x| *x != 0.0) || b.iter().any(|x| *x != 0.0))
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum())
        .collect();
    let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean = cosines.iter().sum::<f32>() / cosines.len().max(1) as f32;
    println!(
        "cosine with {}: min {min:.7}, mean {mean:.7} over {} queries",
        path.to_string_lossy(),
        cosines.len()
    );
}
