//! Fusing the lexical (BM25F) ranking with the dense one.

use std::cmp::Ordering;

/// How the lexical and the dense rankings are combined.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fusion {
    /// Reciprocal-rank fusion: a tool scores `1 / (k + lexical rank) + dense_weight / (k +
    /// dense rank)`, ranks counted from 1, a list the tool is not in adding nothing.
    Rrf {
        /// The rank offset `k`.
        k: f32,
        /// The weight of the dense ranking (the lexical one weighs 1).
        dense_weight: f32,
    },
    /// Reciprocal-rank fusion that trusts the dense ranking less the stronger the lexical
    /// evidence: [`Fusion::Rrf`] with the dense weight `dense_weight * (s / (s + top))^power`,
    /// `top` the best lexical score (BM25F; 0 when no tool matched a word). A query whose words
    /// name a tool outright (a high top score) keeps the lexical order; one that says what it
    /// wants in other words (a low top score) is ranked mostly by meaning. The higher the power,
    /// the sooner lexical evidence silences the dense ranking.
    AdaptiveRrf {
        /// The rank offset `k`.
        k: f32,
        /// The weight of the dense ranking when no tool matched a word lexically.
        dense_weight: f32,
        /// The lexical top score `s` at which the dense weight is down to `0.5^power` of itself.
        lexical_scale: f32,
        /// How steeply the dense weight falls with the lexical top score.
        power: f32,
        /// The confidence gate: the dense ranking counts only when its best tool's (centred)
        /// cosine with the query is at least this; below, the lexical order is kept as it is.
        /// 0 keeps the dense ranking whenever the query has a vector.
        min_cosine: f32,
    },
    /// A linear blend of scores: `lexical / best lexical + dense_weight * cosine`, a tool missing
    /// from the lexical list counting 0 there, one missing from the dense list its cosine 0.
    Linear {
        /// The weight of the cosine.
        dense_weight: f32,
    },
    /// Both scores scaled to 0..1 over the candidates (min-max), then `lexical + dense_weight *
    /// cosine`.
    Blend {
        /// The weight of the scaled cosine.
        dense_weight: f32,
    },
}

impl Default for Fusion {
    /// The fusion chosen, with the general model (`scripts/model.sh`: it saw no text of any data
    /// set), on the tune halves of all four quality sets (BFCL, Seal-Tools, MetaTool, APIBench)
    /// by the leave-one-out objective (`toolgate_search_eval::loo::choose_from`: the largest
    /// worst lower bound of the paired 95% interval of the margin over lexical, then the largest
    /// worst and mean margins) among 540 adaptive RRF settings: `k` 5, dense weight 1, lexical
    /// scale 4, power 8 and the confidence gate at a centred cosine of 0.3. Tune margins over
    /// lexical (nDCG@5 x100): BFCL +0.01, Seal-Tools +0.10, MetaTool +1.83, APIBench +0.02. The
    /// dense ranking weighs at most as much as the lexical one, only when the nearest tool is
    /// near the query, and fades fast as the best lexical score rises (`(4 / (4 + top))^8`:
    /// 0.10 at a top score of 1.3, 0.004 at 4): it reorders paraphrased queries and leaves those
    /// that name a tool's words alone. The held-out figures, each set's fusion chosen without
    /// it, are in `docs/search.md`.
    fn default() -> Self {
        Fusion::AdaptiveRrf {
            k: 5.0,
            dense_weight: 1.0,
            lexical_scale: 4.0,
            power: 8.0,
            min_cosine: 0.3,
        }
    }
}

impl Fusion {
    /// False when the dense ranking cannot change the order of `lexical` (`(score, tool)`,
    /// best first, `len` long) whatever it holds: under [`Fusion::AdaptiveRrf`], when the most a
    /// dense rank can add (`dense_weight * trust / (k + 1)`) is less than the smallest gap
    /// between two consecutive lexical reciprocal ranks (`1 / (k + len - 1) - 1 / (k + len)`):
    /// no lexical tool can pass the one above it, and a tool only the dense ranking found
    /// stays below the last lexical one. The search then skips embedding the query.
    pub fn dense_can_matter(&self, lexical: &[(f32, u32)]) -> bool {
        match *self {
            Fusion::AdaptiveRrf {
                k,
                dense_weight,
                lexical_scale,
                power,
                ..
            } => {
                let Some(&(top, _)) = lexical.first() else {
                    return true;
                };
                let trust = (lexical_scale / (lexical_scale + top.max(0.0))).powf(power);
                let n = lexical.len() as f32;
                let gap = 1.0 / (k + n - 1.0) - 1.0 / (k + n);
                !(trust.is_finite() && dense_weight * trust / (k + 1.0) < gap)
            }
            _ => true,
        }
    }
}

/// Fuses `lexical` (`(score, tool)`, best first) and `dense` (`(cosine, tool)`, best first)
/// and returns `(fused score, tool)`, best first, ties by tool number. `cosine` gives the
/// cosine of any tool with the query (the linear blends score every candidate by it, so a tool
/// the dense list missed is not taken for one with cosine 0).
pub fn fuse(
    fusion: Fusion,
    lexical: &[(f32, u32)],
    dense: &[(f32, u32)],
    cosine: impl Fn(u32) -> f32,
) -> Vec<(f32, u32)> {
    let mut out: Vec<(f32, u32)> = Vec::with_capacity(lexical.len() + dense.len());
    match fusion {
        Fusion::Rrf { k, dense_weight } => rrf(k, dense_weight, lexical, dense, &mut out),
        Fusion::AdaptiveRrf {
            k,
            dense_weight,
            lexical_scale,
            power,
            min_cosine,
        } => {
            let top = lexical.first().map_or(0.0, |x| x.0.max(0.0));
            let trust = (lexical_scale / (lexical_scale + top)).powf(power);
            let confident = dense.first().is_some_and(|d| d.0 >= min_cosine);
            let dense_weight = if trust.is_finite() && confident {
                dense_weight * trust
            } else {
                0.0
            };
            rrf(k, dense_weight, lexical, dense, &mut out);
        }
        Fusion::Linear { dense_weight } => {
            let best = lexical.first().map_or(1.0, |x| x.0);
            let best = if best > 0.0 { best } else { 1.0 };
            for &(s, t) in lexical {
                add(t, s / best, &mut out);
            }
            for &(_, t) in dense {
                add(t, 0.0, &mut out);
            }
            for e in &mut out {
                e.0 += dense_weight * cosine(e.1);
            }
        }
        Fusion::Blend { dense_weight } => {
            let (lo, hi) = bounds(lexical.iter().map(|x| x.0));
            for &(s, t) in lexical {
                add(t, (s - lo) / (hi - lo).max(f32::EPSILON), &mut out);
            }
            for &(_, t) in dense {
                add(t, 0.0, &mut out);
            }
            let cos: Vec<f32> = out.iter().map(|e| cosine(e.1)).collect();
            let (lo, hi) = bounds(cos.iter().copied());
            for (e, c) in out.iter_mut().zip(cos) {
                e.0 += dense_weight * (c - lo) / (hi - lo).max(f32::EPSILON);
            }
        }
    }
    out.sort_unstable_by(by_rank);
    out
}

/// Best score first, ties by tool number.
pub(crate) fn by_rank(a: &(f32, u32), b: &(f32, u32)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Keeps the best `k` of `ranked` by [`by_rank`], in no particular order.
pub(crate) fn keep_best(ranked: &mut Vec<(f32, u32)>, k: usize) {
    if ranked.len() <= k {
        return;
    }
    match k.checked_sub(1) {
        Some(last) => {
            ranked.select_nth_unstable_by(last, by_rank);
            ranked.truncate(k);
        }
        None => ranked.clear(),
    }
}

/// Adds each tool's reciprocal-rank scores to `out` (see [`Fusion::Rrf`]).
fn rrf(
    k: f32,
    dense_weight: f32,
    lexical: &[(f32, u32)],
    dense: &[(f32, u32)],
    out: &mut Vec<(f32, u32)>,
) {
    for (r, &(_, t)) in lexical.iter().enumerate() {
        add(t, 1.0 / (k + r as f32 + 1.0), out);
    }
    for (r, &(_, t)) in dense.iter().enumerate() {
        add(t, dense_weight / (k + r as f32 + 1.0), out);
    }
}

/// Adds `s` to the score of `tool` in `out`, or appends the tool with score `s`.
fn add(tool: u32, s: f32, out: &mut Vec<(f32, u32)>) {
    match out.iter_mut().find(|(_, t)| *t == tool) {
        Some(e) => e.0 += s,
        None => out.push((s, tool)),
    }
}

fn bounds(xs: impl Iterator<Item = f32>) -> (f32, f32) {
    xs.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_puts_a_tool_both_lists_rank_high_first() {
        let lexical = [(9.0, 1), (5.0, 2)];
        let dense = [(0.9, 3), (0.8, 2)];
        let rrf = Fusion::Rrf {
            k: 1.0,
            dense_weight: 1.0,
        };
        let fused = fuse(rrf, &lexical, &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        // 2: 1/3 + 1/3; 1 and 3: 1/2 each, tied, by tool number.
        assert_eq!(order, vec![2, 1, 3]);
    }

    #[test]
    fn linear_blend_scales_lexical_scores_by_the_best() {
        let lexical = [(10.0, 1), (5.0, 2)];
        let dense = [(0.9, 2)];
        let fused = fuse(
            Fusion::Linear { dense_weight: 1.0 },
            &lexical,
            &dense,
            |t| if t == 2 { 0.9 } else { 0.0 },
        );
        assert_eq!(fused[0].1, 2);
        assert!((fused[0].0 - 1.4).abs() < 1e-6);
        assert_eq!(fused[1], (1.0, 1));
    }

    const ADAPTIVE: Fusion = Fusion::AdaptiveRrf {
        k: 3.0,
        dense_weight: 3.0,
        lexical_scale: 2.0,
        power: 2.0,
        min_cosine: 0.0,
    };

    #[test]
    fn adaptive_rrf_keeps_the_lexical_order_when_the_lexical_top_score_is_high() {
        // Top 38: trust (2 / 40)^2 = 1/400, a dense weight under 0.01.
        let lexical = [(38.0, 1), (30.0, 2)];
        let dense = [(0.9, 2), (0.8, 1)];
        let fused = fuse(ADAPTIVE, &lexical, &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![1, 2]);
    }

    #[test]
    fn adaptive_rrf_follows_the_dense_order_when_the_lexical_top_score_is_low() {
        // Top 0.5: trust (2 / 2.5)^2 = 0.64, a dense weight of 1.92; tool 2 scores 1/5 +
        // 1.92/4 = 0.68 against tool 1's 1/4 + 1.92/5 = 0.63.
        let lexical = [(0.5, 1), (0.4, 2)];
        let dense = [(0.9, 2), (0.8, 1)];
        let fused = fuse(ADAPTIVE, &lexical, &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![2, 1]);
    }

    #[test]
    fn adaptive_rrf_with_a_higher_power_keeps_the_lexical_order_at_a_lower_top_score() {
        // Top 0.5, scale 2: power 2 leaves a dense weight of 3 * 0.8^2 = 1.92, the dense order
        // (see above); power 8 leaves 3 * 0.8^8 = 0.50, and tool 1 scores 1/4 + 0.50/5 = 0.35
        // against tool 2's 1/5 + 0.50/4 = 0.33.
        let lexical = [(0.5, 1), (0.4, 2)];
        let dense = [(0.9, 2), (0.8, 1)];
        let steep = Fusion::AdaptiveRrf {
            k: 3.0,
            dense_weight: 3.0,
            lexical_scale: 2.0,
            power: 8.0,
            min_cosine: 0.0,
        };
        let order = |f| -> Vec<u32> {
            fuse(f, &lexical, &dense, |_| 0.0)
                .iter()
                .map(|x| x.1)
                .collect()
        };
        assert_eq!(order(ADAPTIVE), vec![2, 1]);
        assert_eq!(order(steep), vec![1, 2]);
    }

    #[test]
    fn the_confidence_gate_keeps_the_lexical_order_when_the_nearest_tool_is_far() {
        let lexical = [(0.5, 1), (0.4, 2)];
        let dense = [(0.2, 2), (0.1, 1)];
        let gated = Fusion::AdaptiveRrf {
            k: 3.0,
            dense_weight: 3.0,
            lexical_scale: 2.0,
            power: 2.0,
            min_cosine: 0.3,
        };
        let order = |f| -> Vec<u32> {
            fuse(f, &lexical, &dense, |_| 0.0)
                .iter()
                .map(|x| x.1)
                .collect()
        };
        assert_eq!(order(ADAPTIVE), vec![2, 1]);
        assert_eq!(order(gated), vec![1, 2]);
    }

    #[test]
    fn a_query_whose_lexical_top_score_silences_the_dense_ranking_keeps_the_lexical_order_unembedded()
     {
        let fusion = Fusion::default();
        let strong: Vec<(f32, u32)> = (0..50).map(|i| (30.0 - i as f32 * 0.1, i)).collect();
        assert!(!fusion.dense_can_matter(&strong));
        // Whatever the dense ranking says, the order is the lexical one.
        let dense: Vec<(f32, u32)> = (0..50).rev().map(|i| (0.9, i + 25)).collect();
        let order: Vec<u32> = fuse(fusion, &strong, &dense, |_| 0.0)
            .iter()
            .map(|x| x.1)
            .take(50)
            .collect();
        assert_eq!(order, (0..50).collect::<Vec<u32>>());
        let weak: Vec<(f32, u32)> = (0..50).map(|i| (1.0 - i as f32 * 0.01, i)).collect();
        assert!(fusion.dense_can_matter(&weak));
    }

    #[test]
    fn adaptive_rrf_ranks_by_meaning_alone_when_no_tool_matched_a_word() {
        let dense = [(0.9, 7), (0.8, 3)];
        let fused = fuse(ADAPTIVE, &[], &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![7, 3]);
    }
}
