//! Tunes the ranking parameters by coordinate search on the *tune* half of
//! every data set, maximising the smallest nDCG@5 gain over plain BM25.
//! The holdout half is never looked at. `cargo run --release --example tune`.

use toolgate_search::{Ranking, SearchIndex};
use toolgate_search_eval::{self as eval, Bm25Baseline, DATASETS, EvalQuery, Half};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = eval::datasets_dir();
    let mut sets = Vec::new();
    for name in DATASETS {
        let data = eval::load_dataset(&dir, name)?;
        let tune: Vec<EvalQuery> = data
            .queries
            .into_iter()
            .filter(|q| eval::half_of(&q.id) == Half::Tune)
            .collect();
        let bm25 = eval::evaluate(&Bm25Baseline::new(&data.catalog), &tune).ndcg_at_5;
        let index = SearchIndex::build(data.catalog)?;
        sets.push((name, index, tune, bm25));
    }
    // Mean nDCG@5 of `index` over `queries`, on two threads.
    let ndcg = |index: &SearchIndex, queries: &[EvalQuery]| -> f64 {
        let half = queries.len().div_ceil(2).max(1);
        let sums: Vec<f64> = std::thread::scope(|scope| {
            let jobs: Vec<_> = queries
                .chunks(half)
                .map(|chunk| {
                    scope.spawn(move || eval::evaluate(index, chunk).ndcg_at_5 * chunk.len() as f64)
                })
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("no panic"))
                .collect()
        });
        sums.iter().sum::<f64>() / queries.len().max(1) as f64
    };
    // The smallest gain over BM25 counts most; a data set falling below the
    // gain it started with is penalised, so no data set pays for another.
    let mut floor: Option<Vec<f64>> = None;
    let mut objective = |r: &Ranking, sets: &mut Vec<(&str, SearchIndex, Vec<EvalQuery>, f64)>| {
        let mut gains = Vec::new();
        for (_, index, tune, bm25) in sets.iter_mut() {
            let idx = std::mem::replace(index, SearchIndex::build(Vec::new()).expect("empty"));
            let idx = idx.with_ranking(*r);
            gains.push(100.0 * (ndcg(&idx, tune) - *bm25));
            *index = idx;
        }
        let floor = floor.get_or_insert_with(|| gains.clone());
        let below: f64 = gains
            .iter()
            .zip(floor.iter())
            .map(|(g, f)| (f - g).max(0.0))
            .sum();
        let min = gains.iter().copied().fold(f64::INFINITY, f64::min);
        (min + 0.1 * gains.iter().sum::<f64>() - 2.0 * below, gains)
    };
    let mut best = Ranking::default();
    // TG_START="diversity=0.1": start values for parameters whose
    // default is 0 (which a multiplicative search cannot move).
    for kv in std::env::var("TG_START").unwrap_or_default().split(',') {
        if let Some((k, v)) = kv.split_once('=') {
            let v: f32 = v.parse()?;
            match k {
                "name_substring" => best.name_substring = v,
                "number_weight" => best.number_weight = v,
                "diversity" => best.diversity = v,
                _ => return Err(format!("unknown {k}").into()),
            }
        }
    }
    let (mut best_score, gains) = objective(&best, &mut sets);
    println!("start {best_score:.2} {gains:.1?}");
    let rounds: usize = std::env::var("TG_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    for round in 0..rounds {
        for p in 0..25 {
            for factor in [0.5f32, 0.75, 1.33, 2.0] {
                let mut r = best;
                let slot: &mut f32 = match p {
                    0 => &mut r.k1,
                    1..=6 => &mut r.weight[p - 1],
                    7..=12 => &mut r.b[p - 7],
                    13 => &mut r.prefix_factor,
                    14 => &mut r.typo_factor,
                    15 => &mut r.coverage_exponent,
                    16 => &mut r.name_coverage,
                    17 => &mut r.bigram,
                    18 => &mut r.name_substring,
                    19 => &mut r.idf_coverage,
                    20 => &mut r.number_weight,
                    21 => &mut r.diversity,
                    22 => &mut r.enum_match,
                    23 => &mut r.desc_coverage,
                    _ => &mut r.quote_weight,
                };
                // b, diversity and the quote weight are fractions.
                let max = if (7..=12).contains(&p) || p == 21 || p == 24 {
                    1.0
                } else {
                    100.0
                };
                *slot = (*slot * factor).min(max);
                let (score, gains) = objective(&r, &mut sets);
                if score > best_score + 0.01 {
                    best_score = score;
                    best = r;
                    println!("round {round} p{p} x{factor}: {score:.2} {gains:.1?} {best:?}");
                }
            }
        }
    }
    println!("best {best_score:.2} {best:?}");
    Ok(())
}
