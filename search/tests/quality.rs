//! Our ranking must beat plain BM25 by a margin on every labelled data set.
//!
//! Reads the data sets from `$TOOLGATE_DATASETS` or
//! `../shared/datasets/toolsearch` beside the workspace; fails, saying so,
//! if they are missing. To stay quick in a debug build it checks the held-out
//! half of each data set (never used for tuning), at most
//! `MAX_QUERIES` queries of it. The full table is printed by
//! `cargo bench -p toolgate-search --bench quality`.

use toolgate_search::SearchIndex;
use toolgate_search::eval::{self, Bm25Baseline, DATASETS, EvalQuery, Half};

const MAX_QUERIES: usize = 1500;

/// The nDCG@5 margin over BM25 (x100) required on every data set's held-out
/// half: the smallest margin reached (BFCL, about +2.7; Seal-Tools is at
/// about +7.5 and MetaTool at about +5.6), rounded down to a half point.
const MARGIN: f64 = 2.5;

#[test]
fn ours_beats_bm25_ndcg_at_5_by_a_margin_on_every_dataset() {
    let dir = eval::datasets_dir();
    assert!(
        dir.is_dir(),
        "data set directory {} is missing: put shared/datasets/toolsearch beside the workspace or set {}",
        dir.display(),
        eval::DATASETS_ENV
    );
    for name in DATASETS {
        let data = eval::load_dataset(&dir, name).unwrap_or_else(|e| panic!("{e}"));
        let holdout: Vec<&EvalQuery> = data
            .queries
            .iter()
            .filter(|q| eval::half_of(&q.id) == Half::Holdout)
            .take(MAX_QUERIES)
            .collect();
        let bm25 = eval::evaluate(&Bm25Baseline::new(&data.catalog), holdout.iter().copied());
        let index = SearchIndex::build(data.catalog).expect("catalog indexes");
        let ours = eval::evaluate(&index, holdout.iter().copied());
        println!(
            "{name}: bm25 {:.1}, ours {:.1}",
            100.0 * bm25.ndcg_at_5,
            100.0 * ours.ndcg_at_5
        );
        assert!(
            100.0 * ours.ndcg_at_5 >= 100.0 * bm25.ndcg_at_5 + MARGIN,
            "{name}: nDCG@5 ours {:.3} < bm25 {:.3} + {MARGIN}/100",
            ours.ndcg_at_5,
            bm25.ndcg_at_5
        );
    }
}
