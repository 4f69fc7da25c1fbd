//! The search quality benchmark: `cargo bench -p toolgate-search --bench quality`.
//!
//! For each labelled data set (see `toolgate_search::eval`), prints recall@1,
//! recall@5, nDCG@5 and MRR@10 (x100) for the reference keyword scoring,
//! plain BM25 and this crate's index, on all queries and on each half of the
//! id-hash split (ranking was tuned on the "tune" half only).

use std::process::ExitCode;

use toolgate_search::SearchIndex;
use toolgate_search::eval::{
    self, Bm25Baseline, DATASETS, EvalQuery, Half, KeywordBaseline, Metrics, Ranker,
};

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a filter argument selects data sets.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let dir = eval::datasets_dir();
    println!("data sets: {}", dir.display());
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
        let splits: [(&str, Option<Half>); 3] = [
            ("all", None),
            ("tune", Some(Half::Tune)),
            ("holdout", Some(Half::Holdout)),
        ];
        for (split, half) in splits {
            let queries: Vec<&EvalQuery> = data
                .queries
                .iter()
                .filter(|q| half.is_none_or(|h| eval::half_of(&q.id) == h))
                .collect();
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
/// "dense" (nearest tools alone) and "hybrid" (fused with ours). `--tune-fusion` prints the
/// fusion grid on the tune half, from which `Fusion::default` was chosen.
#[cfg(feature = "semantic")]
mod semantic {
    use std::sync::Arc;

    use toolgate_search::SearchIndex;
    use toolgate_search::eval::{self, Dataset, EvalQuery, Half};
    use toolgate_search::semantic::{Fusion, StaticModel};

    pub(crate) fn attach(data: &Dataset) -> Option<SearchIndex> {
        let dir = eval::semantic_model_dir();
        let model = match StaticModel::load(&dir) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                eprintln!("no semantic rows: {e} (run scripts/model.sh)");
                return None;
            }
        };
        let index = SearchIndex::build(data.catalog.clone())
            .ok()?
            .with_semantic(model.clone());
        if std::env::args().any(|a| a == "--tune-fusion") {
            tune(data, &model);
        }
        Some(index)
    }

    fn tune(data: &Dataset, model: &Arc<StaticModel>) {
        let tune: Vec<&EvalQuery> = data
            .queries
            .iter()
            .filter(|q| eval::half_of(&q.id) == Half::Tune)
            .collect();
        let mut grid = Vec::new();
        for k in [5.0, 10.0, 20.0, 60.0] {
            for dense_weight in [0.1, 0.2, 0.3, 0.5, 0.75, 1.0] {
                grid.push(Fusion::Rrf { k, dense_weight });
            }
        }
        for k in [2.0, 3.0, 5.0] {
            for dense_weight in [2.0, 3.0, 4.0] {
                for lexical_scale in [1.0, 2.0, 3.0] {
                    grid.push(Fusion::AdaptiveRrf {
                        k,
                        dense_weight,
                        lexical_scale,
                    });
                }
            }
        }
        for dense_weight in [0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.0] {
            grid.push(Fusion::Linear { dense_weight });
        }
        for dense_weight in [0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1.0] {
            grid.push(Fusion::Blend { dense_weight });
        }
        for fusion in grid {
            let Ok(index) = SearchIndex::build(data.catalog.clone()) else {
                return;
            };
            let index = index.with_semantic(model.clone()).with_fusion(fusion);
            let m = eval::evaluate(&index, tune.iter().copied());
            println!(
                "tune {:<10} {fusion:?} nDCG@5 {:.2}",
                data.name,
                100.0 * m.ndcg_at_5
            );
        }
    }
}
