//! Our ranking must beat plain BM25 on every labelled data set.
//!
//! Reads the data sets from `$TOOLGATE_DATASETS` or
//! `../shared/datasets/toolsearch` beside the workspace; fails, saying so,
//! if they are missing. The full table is printed by
//! `cargo bench -p toolgate-search --bench quality`.

use toolgate_search::SearchIndex;
use toolgate_search::eval::{self, Bm25Baseline, DATASETS};

#[test]
fn ours_beats_bm25_ndcg_at_5_on_every_dataset() {
    let dir = eval::datasets_dir();
    assert!(
        dir.is_dir(),
        "data set directory {} is missing: put shared/datasets/toolsearch beside the workspace or set {}",
        dir.display(),
        eval::DATASETS_ENV
    );
    for name in DATASETS {
        let data = eval::load_dataset(&dir, name).unwrap_or_else(|e| panic!("{e}"));
        let bm25 = eval::evaluate(&Bm25Baseline::new(&data.catalog), &data.queries);
        let index = SearchIndex::build(data.catalog).expect("catalog indexes");
        let ours = eval::evaluate(&index, &data.queries);
        println!("{name}: bm25 {:.1}, ours {:.1}", 100.0 * bm25.ndcg_at_5, 100.0 * ours.ndcg_at_5);
        assert!(
            ours.ndcg_at_5 > bm25.ndcg_at_5,
            "{name}: nDCG@5 ours {:.3} <= bm25 {:.3}",
            ours.ndcg_at_5,
            bm25.ndcg_at_5
        );
    }
}
