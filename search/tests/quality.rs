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

/// The semantic stage (feature `semantic`, with the model `scripts/model.sh` distils): on every
/// data set's held-out half, the hybrid (BM25F fused with the dense ranking) must not fall below
/// the better of our lexical and the dense ranking by more than `HYBRID_TOLERANCE`, and on
/// MetaTool, whose queries paraphrase the tool descriptions, it must beat both by
/// `HYBRID_MARGIN_METATOOL`; nor may it fall more than `FLOOR_MARGIN` below the figures measured
/// with the chosen fusion. Skipped, saying so, when the model is not installed.
#[cfg(feature = "semantic")]
mod hybrid {
    use std::sync::Arc;

    use toolgate_search::SearchIndex;
    use toolgate_search::eval::{self, DATASETS, DenseRanker, EvalQuery, Half};
    use toolgate_search::semantic::StaticModel;

    use super::MAX_QUERIES;

    /// The hybrid's nDCG@5 (x100) on the checked held-out queries of each set, as measured with
    /// the default fusion and the model `scripts/model.sh` distils (fitted to the tune half's fit
    /// part only; the fusion chosen on the tune half, cross-fitted), less `FLOOR_MARGIN`: a
    /// change of model, fusion or vectors that loses quality fails here.
    const HYBRID_MEASURED: [(&str, f64); 3] =
        [("bfcl", BFCL), ("sealtools", SEAL), ("metatool", META)];
    /// Measured 64.49 (the whole held-out half too), rounded down.
    const BFCL: f64 = 64.4;
    /// Measured 93.50 (the whole held-out half too; the lexical ranking's own figure).
    const SEAL: f64 = 93.5;
    /// Of MetaTool's first `MAX_QUERIES` held-out queries, measured 47.92, rounded down (66.37
    /// on the whole half). With the model fitted to the whole tune half, 49.3 (67.1): it had seen
    /// twice as many MetaTool queries, the fusion's tuning queries among them.
    const META: f64 = 47.9;
    /// How far below the measured figures the hybrid may fall (x100 nDCG@5).
    const FLOOR_MARGIN: f64 = 0.5;

    /// The largest loss allowed against the better of lexical and dense on a set (x100
    /// nDCG@5): none. Measured, the hybrid is 0.09 above lexical on BFCL and scores Seal-Tools'
    /// queries as lexical does, 93.50 both (its queries score high lexically, and the dense
    /// weight falls to nothing there).
    const HYBRID_TOLERANCE: f64 = 0.0;
    /// The gain over the better of lexical and dense required on MetaTool (x100 nDCG@5): the
    /// measured gain (+1.93 over dense on the checked queries, 47.92 against 45.99; +1.01 on
    /// the whole held-out half, 66.37 against 65.36) less half a point, rounded down.
    const HYBRID_MARGIN_METATOOL: f64 = 1.0;

    /// The queries `scripts/model.sh`'s model was fitted to (its `training.json`) are exactly the
    /// tune half's fit part of each set (`eval::tune_part_of`): none of the held-out half, which
    /// would flatter the figures below, and none of the fuse part, on which the fusion learns how
    /// far to trust the dense ranking. The distiller repeats eval.rs's rule in Python; this holds
    /// the two to the same queries. Skipped, saying so, when the model is not installed.
    #[test]
    fn the_model_was_fitted_to_the_fit_part_of_the_tune_half_and_nothing_else() {
        let model_dir = eval::semantic_model_dir();
        if !model_dir.join("model.safetensors").is_file() {
            eprintln!(
                "SKIPPED training-set check: no embedding model at {}",
                model_dir.display()
            );
            return;
        }
        let dir = eval::datasets_dir();
        let sets: Vec<eval::Dataset> = DATASETS
            .iter()
            .map(|name| eval::load_dataset(&dir, name).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        if let Err(e) = eval::check_training(&model_dir, eval::TunePart::Fit, &sets) {
            panic!("{e}");
        }
    }

    #[test]
    fn hybrid_loses_to_neither_ranking_and_beats_both_on_paraphrased_queries() {
        let model_dir = eval::semantic_model_dir();
        if !model_dir.join("model.safetensors").is_file() {
            eprintln!(
                "SKIPPED hybrid quality check: no embedding model at {} (run scripts/model.sh, or set {})",
                model_dir.display(),
                eval::SEMANTIC_MODEL_ENV
            );
            return;
        }
        let model = Arc::new(StaticModel::load(&model_dir).unwrap_or_else(|e| panic!("{e}")));
        let dir = eval::datasets_dir();
        for name in DATASETS {
            let data = eval::load_dataset(&dir, name).unwrap_or_else(|e| panic!("{e}"));
            let holdout: Vec<&EvalQuery> = data
                .queries
                .iter()
                .filter(|q| eval::half_of(&q.id) == Half::Holdout)
                .take(MAX_QUERIES)
                .collect();
            let lexical = SearchIndex::build(data.catalog.clone()).expect("catalog indexes");
            let hybrid = SearchIndex::build(data.catalog)
                .expect("catalog indexes")
                .with_semantic(model.clone());
            let ours = 100.0 * eval::evaluate(&lexical, holdout.iter().copied()).ndcg_at_5;
            let dense = 100.0
                * eval::evaluate(&DenseRanker::new(&hybrid), holdout.iter().copied()).ndcg_at_5;
            let fused = 100.0 * eval::evaluate(&hybrid, holdout.iter().copied()).ndcg_at_5;
            println!("{name}: lexical {ours:.2}, dense {dense:.2}, hybrid {fused:.2}");
            let better = ours.max(dense);
            assert!(
                fused >= better - HYBRID_TOLERANCE,
                "{name}: hybrid nDCG@5 {fused:.2} < the better of lexical {ours:.2} and dense {dense:.2} - {HYBRID_TOLERANCE}"
            );
            if let Some((_, measured)) = HYBRID_MEASURED.iter().find(|(n, _)| *n == name) {
                assert!(
                    fused >= measured - FLOOR_MARGIN,
                    "{name}: hybrid nDCG@5 {fused:.2} < measured {measured:.2} - {FLOOR_MARGIN}"
                );
            }
            if name == "metatool" {
                assert!(
                    fused >= better + HYBRID_MARGIN_METATOOL,
                    "{name}: hybrid nDCG@5 {fused:.2} < the better of lexical {ours:.2} and dense {dense:.2} + {HYBRID_MARGIN_METATOOL}"
                );
            }
        }
    }
}
