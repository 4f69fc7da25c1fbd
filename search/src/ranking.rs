//! The ranking parameters ([`Ranking`]), and the part of them baked into an index's stored
//! impacts ([`ImpactParams`]).

use crate::field::{FIELDS, Field};
use crate::format;

/// The ranking parameters: a field-weighted BM25 (BM25F) with typo and
/// prefix penalties and a bonus for covering more of the query.
///
/// For each query term `t` and tool `d`, the field frequencies are first
/// combined into one pseudo frequency
///
/// ```text
/// tf(t, d) = sum over fields f of  weight[f] * tf_f / (1 - b[f] + b[f] * len_f / avg_len_f)
/// ```
///
/// and the tool's score is `sum over t of idf(t) * tf / (k1 + tf)`, with
/// `idf = ln(1 + (N - df + 0.5) / (df + 0.5))` over tools, multiplied by
/// `number_weight` for a query word made only of digits and by
/// `quote_weight` for a word the query has only inside quotes. A term reached
/// only by a prefix or a typo is multiplied by `prefix_factor` or
/// `typo_factor`. Finally the sum is multiplied by `coverage ^
/// coverage_exponent`, where `coverage` is the fraction of query terms the
/// tool matched at all (blended, by `idf_coverage`, with the fraction of the
/// query's total IDF it matched, so matching a rare word counts for more than
/// matching a common one), so a tool matching three different words beats
/// one matching a single rare word, and by `1 + name_coverage *
/// name_fraction`, where `name_fraction` is the fraction of the parts of the
/// tool's name that the query matched exactly or by stem: of
/// `get_current_weather`, a query with "current weather" explains two thirds.
///
/// A second stage re-scores the best 50 tools (`RERANK_DEPTH`) of that first
/// stage from their stored name and description: a bonus for each pair of
/// adjacent query words (stop words removed, stemmed) that is also adjacent
/// in the name or the description (`bigram`), a bonus for query words that
/// are allowed values of a parameter (`enum_match`; the `enum` arrays are
/// found by scanning the stored parameter JSON text, not by parsing it), a
/// bonus for the share of the description's words that the query holds
/// (`desc_coverage`), and
/// optionally for query words hidden inside an unsplit name
/// (`name_substring`). Then, for a query of
/// three or more sentences (a task of several steps), the first ten places
/// are filled greedily so that each sentence gets tools for it (`diversity`,
/// an xQuAD-style diversification with the sentences as the query's
/// aspects): the next place goes to the tool maximising
///
/// ```text
/// (1 - diversity) * score / best score + diversity * novel / total
/// ```
///
/// where `novel` sums, over the sentences, the IDF of the sentence's query
/// words that the tool's name or description holds and that no tool placed
/// before it holds, and `total` is that sum for all the sentences' words.
/// The scores returned stay those of the second stage, handed out in the
/// new order.
///
/// The defaults were tuned on the *tune* half of the labelled data sets only
/// (see `toolgate_search_eval::half_of`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ranking {
    /// Term frequency saturation.
    pub k1: f32,
    /// Weight of each field, indexed by [`Field`] as `usize`.
    pub weight: [f32; FIELDS],
    /// Length normalisation of each field (0 = none, 1 = full).
    pub b: [f32; FIELDS],
    /// Multiplier for prefix matches (less than 1).
    pub prefix_factor: f32,
    /// Multiplier for typo matches (less than `prefix_factor`).
    pub typo_factor: f32,
    /// Exponent of the query coverage factor (0 disables it).
    pub coverage_exponent: f32,
    /// Bonus for explaining the tool's name: the score is multiplied by
    /// `1 + name_coverage * (name parts matched / name parts)`.
    pub name_coverage: f32,
    /// Second stage, on the best 50 tools: the score is
    /// multiplied by `1 + bigram * (adjacent query word pairs found adjacent
    /// in the name or description) / (query word pairs)`.
    pub bigram: f32,
    /// Second stage: the score is multiplied by `1 + name_substring *
    /// (query words of 4+ letters found inside the tool name without being
    /// one of its parts, e.g. `forecast` in `airqualityforecast`) / (query
    /// words)`.
    pub name_substring: f32,
    /// How much the coverage factor weighs query words by their IDF (0:
    /// every word counts the same, 1: a word counts its IDF's share of the
    /// query's total).
    pub idf_coverage: f32,
    /// Multiplier of the IDF of a query word made only of digits (`2023`,
    /// the `11` of `11th`): numbers in a request are usually argument
    /// values, not words that describe the tool.
    pub number_weight: f32,
    /// Second stage, for queries of three or more sentences: how much the
    /// first ten places go to tools covering sentences not yet covered
    /// rather than to the best scores (0: off, 1: coverage only).
    pub diversity: f32,
    /// Second stage: the score is multiplied by `1 + enum_match * (IDF of
    /// the query words that are one of the allowed (`enum`) values of a
    /// parameter) / (IDF of all query words)`: a request naming a value the
    /// tool accepts (`Pop`, `app balance`, `regular`).
    pub enum_match: f32,
    /// Second stage: the score is multiplied by `1 + desc_coverage *
    /// (query terms the description holds) / (terms in the description)`:
    /// how much of what the tool says of itself the request explains. Of
    /// two tools matching the same query words, the one whose description
    /// is mostly those words gains; a long description that mentions them
    /// in passing does not.
    pub desc_coverage: f32,
    /// Multiplier of the IDF of a query word found only inside quotes
    /// (`'BRCA1'`, `"Hotel California"`, `'I love the food here!'`): quoted
    /// text is usually an argument value (a name, a title, a message to
    /// send), not words that describe the tool. A quoted identifier
    /// (`'solve_quadratic'`, `'math.sqrt'`) names a tool and keeps its
    /// weight, as does a pair of quotes around the whole request.
    pub quote_weight: f32,
}

/// How many of the best first-stage tools the second stage re-scores.
pub(crate) const RERANK_DEPTH: usize = 50;
const _: () = assert!(RERANK_DEPTH == 50, "the docs of `Ranking` say 50");

impl Default for Ranking {
    fn default() -> Ranking {
        Ranking {
            k1: 2.0,
            // name, description, parameter name, parameter description, alias, keyword
            weight: [3.0, 1.0, 1.6, 0.53, 2.5, 2.0],
            b: [0.75, 0.75, 0.5, 0.75, 0.5, 0.5],
            prefix_factor: 0.5,
            typo_factor: 0.11,
            coverage_exponent: 1.0,
            name_coverage: 0.7,
            bigram: 1.5,
            name_substring: 0.0,
            idf_coverage: 0.5,
            number_weight: 0.1,
            diversity: 0.7,
            enum_match: 0.75,
            desc_coverage: 0.3,
            quote_weight: 0.3,
        }
    }
}

/// The part of [`Ranking`] that is fixed when an index is built: the
/// stored impacts are computed from it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ImpactParams {
    pub(crate) k1: f32,
    pub(crate) weight: [f32; FIELDS],
    pub(crate) b: [f32; FIELDS],
}

impl ImpactParams {
    pub(crate) fn of(r: &Ranking) -> ImpactParams {
        ImpactParams {
            k1: r.k1,
            weight: r.weight,
            b: r.b,
        }
    }

    /// Per field, `weight / (1 - b + b * len / avg_len)`.
    pub(crate) fn norms(&self, lens: &[u16], avg_len: &[f32; FIELDS]) -> [f32; FIELDS] {
        let mut norm = [0f32; FIELDS];
        for f in 0..FIELDS {
            let avg = avg_len[f];
            let rel = if avg > 0.0 {
                f32::from(lens.get(f).copied().unwrap_or(0)) / avg
            } else {
                1.0
            };
            norm[f] = self.weight[f] / (1.0 - self.b[f] + self.b[f] * rel);
        }
        norm
    }

    /// The stored impact of a term with frequencies `tf` in a tool with
    /// field norms `norm`: `tf / (k1 + tf)` of the weighted frequency,
    /// scaled to `0..=IMPACT_MAX` and quantised (`format::quantise_impact`), plus the name bit.
    pub(crate) fn impact(&self, tf: &[u8; FIELDS], norm: &[f32; FIELDS]) -> u16 {
        let t: f32 = tf.iter().zip(norm).map(|(&t, w)| f32::from(t) * w).sum();
        let sat = if t > 0.0 && t.is_finite() {
            t / (self.k1.max(f32::MIN_POSITIVE) + t)
        } else {
            0.0
        };
        let q = (sat.clamp(0.0, 1.0) * f32::from(format::IMPACT_MAX)).round() as u16;
        let q = format::quantise_impact(q.min(format::IMPACT_MAX), t > 0.0);
        if tf[Field::Name as usize] > 0 {
            q | format::NAME_BIT
        } else {
            q
        }
    }
}
