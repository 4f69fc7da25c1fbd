//! Fusing the lexical (BM25F) ranking with the dense one.

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
    /// evidence: [`Fusion::Rrf`] with the dense weight `dense_weight * (s / (s + top))^2`, `top`
    /// the best lexical score (BM25F; 0 when no tool matched a word). A query whose words name a
    /// tool outright (a high top score) keeps the lexical order; one that says what it wants in
    /// other words (a low top score) is ranked mostly by meaning.
    AdaptiveRrf {
        /// The rank offset `k`.
        k: f32,
        /// The weight of the dense ranking when no tool matched a word lexically.
        dense_weight: f32,
        /// The lexical top score `s` at which the dense weight is down to a quarter.
        lexical_scale: f32,
    },
    /// Reciprocal-rank fusion that trusts the dense ranking less the clearer the lexical
    /// winner: [`Fusion::Rrf`] with the dense weight `dense_weight * (s / (s + gap))^2`, `gap`
    /// the best lexical score's lead over the second (the best score itself when only one tool
    /// matched; 0 when none did). A query whose words single out one tool keeps it first; one
    /// that matches several tools about equally well (words they all share) is ordered by
    /// meaning.
    MarginRrf {
        /// The rank offset `k`.
        k: f32,
        /// The weight of the dense ranking when the lexical ranking has no clear winner.
        dense_weight: f32,
        /// The lead `s` of the lexical winner at which the dense weight is down to a quarter.
        margin_scale: f32,
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
    /// The fusion chosen on the tune half of the quality data sets (`cargo bench -p
    /// toolgate-search --features semantic --bench quality -- --tune-fusion`), by the largest
    /// worst margin over the better of the lexical and the dense ranking on any set, then the
    /// mean: adaptive RRF with `k` 3, dense weight 3 and lexical scale 2. Every fixed weight lost
    /// somewhere: plain RRF (`k` 5, weight 0.2) at best by 0.55 (Seal-Tools); the linear and
    /// min-max blends by at least 1.0; a heavier fixed dense weight gained on MetaTool only what it
    /// lost on Seal-Tools (RRF `k` 2, weight 1: MetaTool 60.3, Seal-Tools 84.2). It was chosen
    /// with the model distilled from each token alone; it was kept, not chosen again, for the
    /// model `scripts/model.sh` now fits to MiniLM's sentence vectors, whose training text holds
    /// the tune half's queries (MetaTool's tune half is no longer unseen by the dense ranking, so a
    /// fusion tuned there would trust it too much). With that model, on the held-out halves:
    /// BFCL 64.5, Seal-Tools 93.4 and MetaTool 67.1 (lexical 64.4, 93.5 and 53.8, dense 51.1,
    /// 62.2 and 66.8; with the previous model 64.4, 93.5 and 60.6, dense 49.0, 63.6 and 56.5).
    fn default() -> Self {
        Fusion::AdaptiveRrf {
            k: 3.0,
            dense_weight: 3.0,
            lexical_scale: 2.0,
        }
    }
}

/// Fuses `lexical` (`(score, tool)`, best first) and `dense` (`(cosine, tool)`, best first)
/// and returns `(fused score, tool)`, best first, ties by tool number. `cosine` gives the
/// cosine of any tool with the query (the linear blends score every candidate by it, so a tool
/// the dense list missed is not taken for one with cosine 0).
pub(crate) fn fuse(
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
        } => {
            let top = lexical.first().map_or(0.0, |x| x.0.max(0.0));
            rrf(k, damped(dense_weight, lexical_scale, top), lexical, dense, &mut out);
        }
        Fusion::MarginRrf {
            k,
            dense_weight,
            margin_scale,
        } => {
            let top = lexical.first().map_or(0.0, |x| x.0.max(0.0));
            let second = lexical.get(1).map_or(0.0, |x| x.0.max(0.0));
            let gap = (top - second).max(0.0);
            rrf(k, damped(dense_weight, margin_scale, gap), lexical, dense, &mut out);
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
    out.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    out
}

/// `weight * (scale / (scale + evidence))^2`: the dense weight left when the lexical evidence
/// (a score or a lead, never negative) is `evidence`; 0 if that is not a number.
fn damped(weight: f32, scale: f32, evidence: f32) -> f32 {
    let trust = scale / (scale + evidence);
    if trust.is_finite() {
        weight * trust * trust
    } else {
        0.0
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

    const MARGIN: Fusion = Fusion::MarginRrf {
        k: 3.0,
        dense_weight: 3.0,
        margin_scale: 0.5,
    };

    #[test]
    fn margin_rrf_keeps_a_clear_lexical_winner_first() {
        // Lead 10: trust (0.5 / 10.5)^2, a dense weight under 0.01.
        let lexical = [(12.0, 1), (2.0, 2)];
        let dense = [(0.9, 2), (0.8, 1)];
        let fused = fuse(MARGIN, &lexical, &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![1, 2]);
    }

    #[test]
    fn margin_rrf_follows_the_dense_order_when_lexical_scores_are_close() {
        // A high top score but a lead of 0: the full dense weight of 3; tool 2 scores 1/5 + 3/4
        // against tool 1's 1/4 + 3/5.
        let lexical = [(30.0, 1), (30.0, 2)];
        let dense = [(0.9, 2), (0.8, 1)];
        let fused = fuse(MARGIN, &lexical, &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![2, 1]);
    }

    #[test]
    fn margin_rrf_counts_a_lone_lexical_match_as_leading_by_its_score() {
        // One tool matched, with score 12: the lead is 12, the dense weight under 0.01.
        let lexical = [(12.0, 1)];
        let dense = [(0.9, 2), (0.8, 1)];
        let fused = fuse(MARGIN, &lexical, &dense, |_| 0.0);
        assert_eq!(fused[0].1, 1);
    }

    #[test]
    fn adaptive_rrf_ranks_by_meaning_alone_when_no_tool_matched_a_word() {
        let dense = [(0.9, 7), (0.8, 3)];
        let fused = fuse(ADAPTIVE, &[], &dense, |_| 0.0);
        let order: Vec<u32> = fused.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![7, 3]);
    }
}
