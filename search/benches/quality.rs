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
        let systems: [(&str, &dyn Ranker); 3] = [
            ("keyword", &KeywordBaseline::new(&data.catalog)),
            ("bm25", &Bm25Baseline::new(&data.catalog)),
            ("ours", &ours),
        ];
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
            for (system, ranker) in systems {
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
