//! Quick nDCG@5 table (x100): ours vs BM25 on both halves of each data set.
//! `cargo run --release --example qeval`.

use toolgate_search::{Ranking, SearchIndex};
use toolgate_search_eval::{self as eval, Bm25Baseline, DATASETS, EvalQuery, Half};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = eval::datasets_dir();
    // TG_R="bigram=0.5,name_substring=0.3,k1=1.2,w0=3,b1=0.75"
    let mut r = Ranking::default();
    for kv in std::env::var("TG_R").unwrap_or_default().split(',') {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let v: f32 = v.parse()?;
        match k {
            "k1" => r.k1 = v,
            "prefix" => r.prefix_factor = v,
            "typo" => r.typo_factor = v,
            "cov" => r.coverage_exponent = v,
            "name_cov" => r.name_coverage = v,
            "bigram" => r.bigram = v,
            "name_substring" => r.name_substring = v,
            "idf_cov" => r.idf_coverage = v,
            "number" => r.number_weight = v,
            "div" => r.diversity = v,
            "enum" => r.enum_match = v,
            "desc_cov" => r.desc_coverage = v,
            "quote" => r.quote_weight = v,
            k if k.starts_with('w') => r.weight[k[1..].parse::<usize>()?] = v,
            k if k.starts_with('b') => r.b[k[1..].parse::<usize>()?] = v,
            _ => return Err(format!("unknown {k}").into()),
        }
    }
    let only = std::env::var("TG_ONLY").unwrap_or_default();
    for name in DATASETS {
        if !only.is_empty() && !only.contains(name) {
            continue;
        }
        let data = eval::load_dataset(&dir, name)?;
        let bm25 = Bm25Baseline::new(&data.catalog);
        let index = SearchIndex::build(data.catalog)?.with_ranking(r);
        let mut line = format!("{name:<10}");
        for half in [Half::Tune, Half::Holdout] {
            let qs: Vec<&EvalQuery> = data
                .queries
                .iter()
                .filter(|q| eval::half_of(&q.id) == half)
                .collect();
            let b = eval::evaluate(&bm25, qs.iter().copied()).ndcg_at_5 * 100.0;
            let o = eval::evaluate(&index, qs.iter().copied()).ndcg_at_5 * 100.0;
            line += &format!("  {half:?}: ours {o:.1} bm25 {b:.1} (+{:.1})", o - b);
        }
        println!("{line}");
    }
    Ok(())
}
