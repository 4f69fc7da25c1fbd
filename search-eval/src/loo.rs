//! Leave-one-data-set-out evaluation of the semantic stage: for each set X, the fusion is
//! chosen on the other sets' tune halves (with a model that saw no text of X), then X's
//! held-out half is scored once: lexical, dense and hybrid nDCG@5, each compared with lexical
//! by a paired bootstrap over queries.
//!
//! The rankings of each query are computed once ([`Ranked`]: the lexical and dense top
//! [`FUSION_DEPTH`] with their scores); a fusion is then scored from them without searching
//! again, so a grid of fusions costs little more than one.

use std::collections::HashMap;

use toolgate_search::{Query, SearchIndex};
use toolgate_search_semantic::{FUSION_DEPTH, Fusion, Semantic, fuse};

use crate::EvalQuery;

/// One query's rankings, as tool numbers, and the tools relevant to it.
#[derive(Clone, Debug)]
pub struct Ranked {
    /// The lexical top [`FUSION_DEPTH`], `(score, tool)`, best first.
    pub lexical: Vec<(f32, u32)>,
    /// The dense top [`FUSION_DEPTH`], `(cosine, tool)`, best first.
    pub dense: Vec<(f32, u32)>,
    /// The relevant tools (names not in the catalog left out).
    pub relevant: Vec<u32>,
}

/// The rankings of `queries` by `index` (lexical) and `semantic` (dense).
pub fn rank_all<'a>(
    index: &SearchIndex,
    semantic: &Semantic,
    queries: impl IntoIterator<Item = &'a EvalQuery>,
) -> Vec<Ranked> {
    let numbers: HashMap<&str, u32> = index.names().zip(0u32..).collect();
    let queries: Vec<&EvalQuery> = queries.into_iter().collect();
    let texts: Vec<&str> = queries.iter().map(|q| q.query.as_str()).collect();
    let dense = semantic.nearest_many(&texts, FUSION_DEPTH);
    queries
        .into_iter()
        .zip(dense)
        .map(|(q, dense)| {
            let lexical = match Query::parse(&q.query) {
                Ok(parsed) => index
                    .search(&parsed, FUSION_DEPTH)
                    .hits
                    .iter()
                    .filter_map(|h| Some((h.score, *numbers.get(h.name.as_str())?)))
                    .collect(),
                Err(_) => Vec::new(),
            };
            Ranked {
                lexical,
                dense,
                relevant: q
                    .relevant
                    .iter()
                    .filter_map(|n| numbers.get(n.as_str()).copied())
                    .collect(),
            }
        })
        .collect()
}

/// nDCG@5 of a ranking of tool numbers.
fn ndcg5(ranked: impl Iterator<Item = u32>, relevant: &[u32], relevant_len: usize) -> f64 {
    let gain = |rank: usize| 1.0 / ((rank + 2) as f64).log2();
    let dcg: f64 = ranked
        .take(5)
        .enumerate()
        .filter(|(_, t)| relevant.contains(t))
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..relevant_len.min(5)).map(gain).sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

/// Which ranking to score.
#[derive(Clone, Copy, Debug)]
pub enum System {
    /// The lexical ranking alone.
    Lexical,
    /// The dense ranking alone.
    Dense,
    /// The two fused.
    Hybrid(Fusion),
}

/// Each query's nDCG@5 (x100) under `system`. `relevant_len` counts the relevant names of the
/// query as labelled (a name missing from the catalog still counts against the ranking).
pub fn per_query(ranked: &[Ranked], labels: &[usize], system: System) -> Vec<f64> {
    ranked
        .iter()
        .zip(labels)
        .map(|(r, &n)| {
            100.0
                * match system {
                    System::Lexical => ndcg5(r.lexical.iter().map(|x| x.1), &r.relevant, n),
                    System::Dense => ndcg5(r.dense.iter().map(|x| x.1), &r.relevant, n),
                    System::Hybrid(f) => ndcg5(
                        fuse(f, &r.lexical, &r.dense, |_| 0.0).iter().map(|x| x.1),
                        &r.relevant,
                        n,
                    ),
                }
        })
        .collect()
}

/// The mean of `xs` (0 for none).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// The paired bootstrap 95% interval of `mean(a) - mean(b)` over queries (`resamples`
/// resamples of the queries with replacement, a fixed seed): `(low, high)`.
pub fn paired_ci(a: &[f64], b: &[f64], resamples: usize) -> (f64, f64) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    if d.is_empty() {
        return (0.0, 0.0);
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let mut s = 0.0;
            for _ in 0..d.len() {
                s += d[(next() % d.len() as u64) as usize];
            }
            s / d.len() as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |p: f64| means[((means.len() - 1) as f64 * p).round() as usize];
    (at(0.025), at(0.975))
}

/// The fusions the leave-one-out choice considers: adaptive RRF over a grid of `k`, dense
/// weight, lexical scale, power and confidence gate.
pub fn grid() -> Vec<Fusion> {
    let mut out = Vec::new();
    for k in [2.0, 3.0, 5.0] {
        for dense_weight in [1.0, 2.0, 4.0, 6.0] {
            for lexical_scale in [1.0, 4.0, 16.0] {
                for power in [2.0, 8.0, 16.0] {
                    for min_cosine in [0.0, 0.2, 0.3, 0.4, 0.5] {
                        out.push(Fusion::AdaptiveRrf {
                            k,
                            dense_weight,
                            lexical_scale,
                            power,
                            min_cosine,
                        });
                    }
                }
            }
        }
    }
    out
}

/// A tuning set: one data set's tune-half rankings and label counts.
pub struct TuneSet<'a> {
    /// The data set's name.
    pub name: &'a str,
    /// Its tune half's rankings.
    pub ranked: &'a [Ranked],
    /// The number of relevant names of each of those queries.
    pub labels: &'a [usize],
}

/// What a fusion did on one tuning set against lexical (nDCG@5 x100).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Margin {
    /// The mean difference.
    pub mean: f64,
    /// The lower end of its paired bootstrap 95% interval.
    pub low: f64,
}

/// Each set's margin over lexical under each fusion of `grid`: `table[set][fusion]`. Computed
/// once, then [`choose_from`] picks for any subset of the sets.
pub fn margins(sets: &[TuneSet<'_>], grid: &[Fusion]) -> Vec<Vec<Margin>> {
    sets.iter()
        .map(|s| {
            let lexical = per_query(s.ranked, s.labels, System::Lexical);
            grid.iter()
                .map(|f| {
                    let hybrid = per_query(s.ranked, s.labels, System::Hybrid(*f));
                    let (low, _) = paired_ci(&hybrid, &lexical, 200);
                    Margin {
                        mean: mean(&hybrid) - mean(&lexical),
                        low,
                    }
                })
                .collect()
        })
        .collect()
}

/// The fusion of `grid` that does best on the sets whose rows of `table` ([`margins`]) are
/// `rows`, by the objective fixed before any held-out query was scored, amended once (see
/// `docs/search.md`): the largest worst lower bound of the margin's interval across those sets
/// (a fusion whose gain is reliable, not large on average), then the largest worst mean margin,
/// then the largest mean margin. Returns it with its mean margin on each of those sets.
pub fn choose_from(table: &[Vec<Margin>], rows: &[usize], grid: &[Fusion]) -> (Fusion, Vec<f64>) {
    let mut best: Option<((f64, f64, f64), usize)> = None;
    for (i, _) in grid.iter().enumerate() {
        let m: Vec<Margin> = rows.iter().map(|&r| table[r][i]).collect();
        let low = m.iter().map(|x| x.low).fold(f64::INFINITY, f64::min);
        let worst = m.iter().map(|x| x.mean).fold(f64::INFINITY, f64::min);
        let avg = m.iter().map(|x| x.mean).sum::<f64>() / m.len().max(1) as f64;
        let key = (low, worst, avg);
        let better = match best {
            None => true,
            Some((b, _)) => {
                let eps = 1e-9;
                key.0 > b.0 + eps
                    || ((key.0 - b.0).abs() <= eps
                        && (key.1 > b.1 + eps || ((key.1 - b.1).abs() <= eps && key.2 > b.2 + eps)))
            }
        };
        if better {
            best = Some((key, i));
        }
    }
    match best {
        Some((_, i)) => (grid[i], rows.iter().map(|&r| table[r][i].mean).collect()),
        None => (Fusion::default(), Vec::new()),
    }
}

/// [`choose_from`] over all of `sets`.
pub fn choose(sets: &[TuneSet<'_>], grid: &[Fusion]) -> (Fusion, Vec<f64>) {
    let table = margins(sets, grid);
    let rows: Vec<usize> = (0..sets.len()).collect();
    choose_from(&table, &rows, grid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ndcg_at;

    #[test]
    fn the_bootstrap_interval_of_a_constant_difference_is_that_difference() {
        let a = vec![3.0; 50];
        let b = vec![1.0; 50];
        assert_eq!(paired_ci(&a, &b, 200), (2.0, 2.0));
    }

    #[test]
    fn the_bootstrap_interval_holds_the_mean_difference() {
        let a: Vec<f64> = (0..200).map(|i| (i % 7) as f64).collect();
        let b: Vec<f64> = (0..200).map(|i| (i % 5) as f64).collect();
        let (lo, hi) = paired_ci(&a, &b, 500);
        let m = mean(&a) - mean(&b);
        assert!(lo <= m && m <= hi && lo < hi, "{lo} {m} {hi}");
    }

    #[test]
    fn ndcg_of_tool_numbers_matches_the_name_based_one() {
        let names = |v: &[u32]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let ranked = [4u32, 9, 2, 7];
        let relevant = [2u32, 7];
        let by_name = ndcg_at(&names(&ranked), &names(&relevant), 5);
        assert!((ndcg5(ranked.iter().copied(), &relevant, 2) - by_name).abs() < 1e-12);
    }

    #[test]
    fn the_choice_prefers_the_fusion_with_the_larger_worst_margin() {
        // One query whose lexical ranking misses and whose dense ranking finds the tool: a
        // fusion that trusts the dense ranking wins; the gate at cosine 0.95 keeps lexical.
        let r = Ranked {
            lexical: vec![(0.5, 1), (0.4, 2)],
            dense: vec![(0.6, 3), (0.5, 1)],
            relevant: vec![3],
        };
        let ranked = [r];
        let sets = [TuneSet {
            name: "s",
            ranked: &ranked,
            labels: &[1],
        }];
        let open = Fusion::AdaptiveRrf {
            k: 3.0,
            dense_weight: 6.0,
            lexical_scale: 16.0,
            power: 2.0,
            min_cosine: 0.0,
        };
        let gated = Fusion::AdaptiveRrf {
            k: 3.0,
            dense_weight: 6.0,
            lexical_scale: 16.0,
            power: 2.0,
            min_cosine: 0.95,
        };
        let (chosen, margins) = choose(&sets, &[gated, open]);
        assert_eq!(chosen, open);
        assert!(margins[0] > 0.0);
    }
}
