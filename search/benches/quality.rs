//! The search quality benchmark: `cargo bench -p toolgate-search --bench quality`.
//!
//! For each labelled data set (see `toolgate_search::eval`), prints recall@1,
//! recall@5, nDCG@5 and MRR@10 (x100) for the reference keyword scoring,
//! plain BM25 and this crate's index, on all queries and on each half of the
//! id-hash split (ranking was tuned on the "tune" half only). With the `semantic` feature, the
//! tune half's two parts are shown too: "fit" (the queries the embedding model was fitted to)
//! and "fuse" (the queries the fusion is chosen on, unseen by the model; see
//! `eval::tune_part_of`).
//!
//! `--tune-fusion` (feature `semantic`) prints instead the fusion grid on the "fuse" part of
//! every set and the fusion it picks, by an objective fixed before any held-out query was
//! scored: the largest worst margin of the hybrid over the better of the lexical and the dense
//! ranking on any set (nDCG@5), then the largest mean margin. It reads no held-out query.

use std::process::ExitCode;

use toolgate_search::SearchIndex;
use toolgate_search::eval::{
    self, Bm25Baseline, DATASETS, EvalQuery, Half, KeywordBaseline, Metrics, Ranker, TunePart,
};

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a filter argument selects data sets.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let dir = eval::datasets_dir();
    println!("data sets: {}", dir.display());
    #[cfg(feature = "semantic")]
    if std::env::args().any(|a| a == "--tune-fusion") {
        return semantic::tune_all(&dir, &filters);
    }
    println!(
        "{:<10} {:<8} {:<8} {:>6} {:>6} {:>6} {:>7} {:>7}",
        "dataset", "split", "system", "R@1", "R@5", "nDCG@5", "MRR@10", "queries"
    );
    for name in DATASETS {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let data = match eval::load_dataset(&dir, name) {
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
        #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
        let mut systems: Vec<(&str, &dyn Ranker)> =
            vec![("keyword", &keyword), ("bm25", &bm25), ("ours", &ours)];
        #[cfg(feature = "semantic")]
        let hybrid = semantic::attach(&data);
        #[cfg(feature = "semantic")]
        let dense = hybrid.as_ref().map(eval::DenseRanker::new);
        #[cfg(feature = "semantic")]
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
        "{dataset:<10} {split:<8} {system:<8} {:>6.1} {:>6.1} {:>6.1} {:>7.1} {:>7}",
        100.0 * m.recall_at_1,
        100.0 * m.recall_at_5,
        100.0 * m.ndcg_at_5,
        100.0 * m.mrr_at_10,
        m.queries
    );
}

/// The semantic stage's rows: with the feature on and the model installed (`scripts/model.sh`),
/// "dense" (nearest tools alone) and "hybrid" (fused with ours); and `--tune-fusion`, which
/// chose `Fusion::default`.
#[cfg(feature = "semantic")]
mod semantic {
    use std::path::Path;
    use std::process::ExitCode;
    use std::sync::Arc;

    use toolgate_search::SearchIndex;
    use toolgate_search::eval::{self, DATASETS, Dataset, DenseRanker, EvalQuery, TunePart};
    use toolgate_search::semantic::{Fusion, StaticModel};

    fn model() -> Option<Arc<StaticModel>> {
        match StaticModel::load(&eval::semantic_model_dir()) {
            Ok(m) => Some(Arc::new(m)),
            Err(e) => {
                eprintln!("no semantic rows: {e} (run scripts/model.sh)");
                None
            }
        }
    }

    pub(crate) fn attach(data: &Dataset) -> Option<SearchIndex> {
        let model = model()?;
        Some(
            SearchIndex::build(data.catalog.clone())
                .ok()?
                .with_semantic(model),
        )
    }

    /// The fusions `--tune-fusion` compares.
    fn grid() -> Vec<Fusion> {
        let mut grid = Vec::new();
        for k in [5.0, 10.0, 20.0, 60.0] {
            for dense_weight in [0.1, 0.2, 0.3, 0.5, 0.75, 1.0] {
                grid.push(Fusion::Rrf { k, dense_weight });
            }
        }
        for k in [2.0, 3.0, 5.0] {
            for dense_weight in [2.0, 3.0, 4.0, 6.0] {
                for power in [2.0, 4.0, 8.0] {
                    for lexical_scale in [1.0, 2.0, 3.0, 5.0, 8.0] {
                        grid.push(Fusion::AdaptiveRrf {
                            k,
                            dense_weight,
                            lexical_scale,
                            power,
                        });
                    }
                }
            }
        }
        for dense_weight in [0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.0] {
            grid.push(Fusion::Linear { dense_weight });
        }
        for dense_weight in [0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.0] {
            grid.push(Fusion::Blend { dense_weight });
        }
        grid
    }

    /// Scores every fusion of [`grid`] on the "fuse" part of each set (queries the model was
    /// not fitted to), prints each one's margins over the better of lexical and dense, and picks
    /// the fusion with the largest worst margin, then the largest mean margin.
    pub(crate) fn tune_all(dir: &Path, filters: &[String]) -> ExitCode {
        let Some(model) = model() else {
            return ExitCode::FAILURE;
        };
        let grid = grid();
        // margins[set][fusion]
        let mut margins: Vec<Vec<f64>> = Vec::new();
        for name in DATASETS {
            if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let data = match eval::load_dataset(dir, name) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let fuse: Vec<&EvalQuery> = data
                .queries
                .iter()
                .filter(|q| eval::tune_part_of(&q.id) == Some(TunePart::Fuse))
                .collect();
            let Ok(lexical) = SearchIndex::build(data.catalog.clone()) else {
                return ExitCode::FAILURE;
            };
            let hybrid = lexical.with_semantic(model.clone());
            let Some(stage) = hybrid.semantic().cloned() else {
                return ExitCode::FAILURE;
            };
            let Ok(lexical) = SearchIndex::build(data.catalog.clone()) else {
                return ExitCode::FAILURE;
            };
            let ours = 100.0 * eval::evaluate(&lexical, fuse.iter().copied()).ndcg_at_5;
            let dense =
                100.0 * eval::evaluate(&DenseRanker::new(&hybrid), fuse.iter().copied()).ndcg_at_5;
            println!(
                "fuse {name:<10} lexical {ours:.2} dense {dense:.2} ({} queries)",
                fuse.len()
            );
            let better = ours.max(dense);
            let mut row = Vec::with_capacity(grid.len());
            for &fusion in &grid {
                let Ok(index) = SearchIndex::build(data.catalog.clone()) else {
                    return ExitCode::FAILURE;
                };
                let index = index.with_semantic_stage(stage.clone().with_fusion(fusion));
                let fused = 100.0 * eval::evaluate(&index, fuse.iter().copied()).ndcg_at_5;
                println!(
                    "fuse {name:<10} {fusion:?} nDCG@5 {fused:.2} margin {:+.2}",
                    fused - better
                );
                row.push(fused - better);
            }
            margins.push(row);
        }
        let summary = |i: usize| {
            let worst = margins.iter().map(|r| r[i]).fold(f64::INFINITY, f64::min);
            let mean = margins.iter().map(|r| r[i]).sum::<f64>() / margins.len().max(1) as f64;
            (worst, mean)
        };
        let mut order: Vec<usize> = (0..grid.len()).collect();
        order.sort_by(|&a, &b| {
            let (wa, ma) = summary(a);
            let (wb, mb) = summary(b);
            wb.total_cmp(&wa).then(mb.total_cmp(&ma))
        });
        println!("best by worst margin, then mean margin, over the better of lexical and dense:");
        for &i in order.iter().take(15) {
            let (worst, mean) = summary(i);
            let each: Vec<String> = margins.iter().map(|r| format!("{:+.2}", r[i])).collect();
            println!(
                "  {:?}: worst {worst:+.2}, mean {mean:+.2} ({})",
                grid[i],
                each.join(" ")
            );
        }
        ExitCode::SUCCESS
    }
}
