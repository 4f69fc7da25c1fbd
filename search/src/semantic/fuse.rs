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
    /// toolgate-search --features semantic --bench quality -- --tune-fusion`), by the smallest
    /// loss on any set against the better of the lexical and the dense ranking: with the
    /// MiniLM-L6 static model, RRF with `k` 5 and dense weight 0.2 loses at most 0.5 (Seal-Tools
    /// 92.9 against lexical 93.4; BFCL 64.9 against 65.1; MetaTool 55.9 against dense 56.1 and
    /// lexical 54.0). Of the other settings tried, the linear and min-max blends (every
    /// candidate scored by its exact cosine) lose at least 0.8 somewhere, and any heavier dense
    /// weight (RRF `k` 5, weight 0.3: MetaTool 56.8) costs more on Seal-Tools and BFCL than it
    /// gains on MetaTool.
    fn default() -> Self {
        Fusion::Rrf {
            k: 5.0,
            dense_weight: 0.2,
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
    let add = |tool: u32, s: f32, out: &mut Vec<(f32, u32)>| match out
        .iter_mut()
        .find(|(_, t)| *t == tool)
    {
        Some(e) => e.0 += s,
        None => out.push((s, tool)),
    };
    match fusion {
        Fusion::Rrf { k, dense_weight } => {
            for (r, &(_, t)) in lexical.iter().enumerate() {
                add(t, 1.0 / (k + r as f32 + 1.0), &mut out);
            }
            for (r, &(_, t)) in dense.iter().enumerate() {
                add(t, dense_weight / (k + r as f32 + 1.0), &mut out);
            }
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
}
