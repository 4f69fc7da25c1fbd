//! Measuring search quality: retrieval metrics, labelled data sets and two
//! baselines to compare against.
//!
//! A labelled data set is a catalog plus queries, each with the names of the
//! tools that answer it. A [`Ranker`] turns a query into a ranked list of
//! names, and [`evaluate`] scores that list with four standard measures
//! ([`Metrics`]), all with binary relevance:
//!
//! * **recall@k**: the fraction of the relevant tools among the first `k`;
//! * **nDCG@k**: discounted cumulative gain, `sum 1 / log2(rank + 1)` over the
//!   relevant tools in the first `k`, divided by the best possible value;
//! * **MRR@k**: `1 / rank` of the first relevant tool, 0 if none is in the
//!   first `k`.
//!
//! Two baselines put the numbers in context:
//!
//! * [`KeywordBaseline`] reproduces the keyword scoring of the reference
//!   system: for each query word, 10 points if a part of the tool name equals
//!   it, else 5 if a name part contains it, else 3 if the whole name does;
//!   plus 2 if the description contains it.
//! * [`Bm25Baseline`] is textbook Okapi BM25 (`k1 = 1.2`, `b = 0.75`) over
//!   name, description and parameter schema as one bag of words, English
//!   stop words removed.
//!
//! To guard against tuning to the test data, [`half_of`] splits queries by a
//! hash of their id: tune on [`Half::Tune`], check on [`Half::Holdout`].

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::catalog::{ToolDoc, read_catalog_jsonl};
use crate::index::SearchIndex;
use crate::query::Query;

/// The data sets shipped under the data set directory.
pub const DATASETS: [&str; 3] = ["bfcl", "sealtools", "metatool"];

/// The environment variable that overrides the data set directory.
pub const DATASETS_ENV: &str = "TOOLGATE_DATASETS";

/// One labelled query.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct EvalQuery {
    /// A unique id.
    pub id: String,
    /// What the user asked.
    pub query: String,
    /// The names of the tools that answer it.
    pub relevant: Vec<String>,
}

/// A catalog with its labelled queries.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// The data set's name (its directory).
    pub name: String,
    /// The tools.
    pub catalog: Vec<ToolDoc>,
    /// The labelled queries.
    pub queries: Vec<EvalQuery>,
}

/// An error loading a data set.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The catalog could not be read.
    #[error(transparent)]
    Catalog(#[from] crate::catalog::CatalogError),
    /// The queries file could not be read.
    #[error("cannot read queries {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A query line is malformed.
    #[error("{path}:{line}: not a labelled query")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

/// The data set directory: `$TOOLGATE_DATASETS` if set, else
/// `../shared/datasets/toolsearch` relative to the workspace root (the
/// parent of this crate's directory).
pub fn datasets_dir() -> PathBuf {
    match std::env::var_os(DATASETS_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/toolsearch"),
    }
}

/// The environment variable that names the static embedding model the quality checks of the
/// semantic stage use.
pub const SEMANTIC_MODEL_ENV: &str = "TOOLGATE_SEMANTIC_MODEL";

/// The static embedding model for the semantic quality checks: `$TOOLGATE_SEMANTIC_MODEL` if
/// set, else `.tools/models/minilm-l6-static` in the workspace, where `scripts/model.sh`
/// distils it.
pub fn semantic_model_dir() -> PathBuf {
    match std::env::var_os(SEMANTIC_MODEL_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/models/minilm-l6-static"),
    }
}

/// The mirror model: [`semantic_model_dir`] with `-mirror` appended to its name, where
/// `scripts/model.sh --mirror` distils the same model fitted to the tune half's *fuse* part
/// instead of its fit part. Only the fusion tuning reads it: it ranks the fit part with the
/// mirror and the fuse part with the model, so that the fusion is chosen on the whole tune half,
/// each query ranked by a model that never saw it (cross-fitting).
pub fn semantic_mirror_model_dir() -> PathBuf {
    let mut dir = semantic_model_dir().into_os_string();
    dir.push("-mirror");
    PathBuf::from(dir)
}

/// Why a model's `training.json` (written by `scripts/distill_static.py`) does not say it was
/// fitted to exactly the queries of one tune part.
#[derive(Debug, thiserror::Error)]
pub enum TrainingError {
    /// The file could not be read.
    #[error("cannot read {path} (a model distilled before it was written: run scripts/model.sh)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path}: not JSON")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The queries the model saw differ from the part's.
    #[error(
        "{path}: on {dataset} the model saw {seen} queries, the {part:?} part has {expected}; \
         {unexpected} seen outside the part (first: {first:?}), {missing} of the part not seen"
    )]
    Queries {
        /// The file.
        path: PathBuf,
        /// The data set.
        dataset: String,
        /// The tune part the model should have been fitted to.
        part: TunePart,
        /// How many queries of the set the model saw.
        seen: usize,
        /// How many queries the part has.
        expected: usize,
        /// How many of the seen queries are not in the part.
        unexpected: usize,
        /// The first of those, if any.
        first: Option<String>,
        /// How many of the part's queries the model did not see.
        missing: usize,
    },
}

/// Checks that the model in `model_dir` was fitted to exactly the `part` queries of each of
/// `datasets` (by its `training.json`): a model that saw held-out queries flatters the held-out
/// figures, and one that saw the queries the fusion is chosen on makes the fusion over-trust it.
/// The distiller repeats [`tune_part_of`] in Python; this holds the two to the same queries.
pub fn check_training(
    model_dir: &Path,
    part: TunePart,
    datasets: &[Dataset],
) -> Result<(), TrainingError> {
    let path = model_dir.join("training.json");
    let text = std::fs::read_to_string(&path).map_err(|source| TrainingError::Io {
        path: path.clone(),
        source,
    })?;
    let training: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| TrainingError::Parse {
            path: path.clone(),
            source,
        })?;
    for data in datasets {
        let mut expected: Vec<&str> = data
            .queries
            .iter()
            .filter(|q| tune_part_of(&q.id) == Some(part))
            .map(|q| q.id.as_str())
            .collect();
        expected.sort_unstable();
        let mut seen: Vec<&str> = training["query_ids"][data.name.as_str()]
            .as_array()
            .map(|ids| ids.iter().filter_map(|id| id.as_str()).collect())
            .unwrap_or_default();
        seen.sort_unstable();
        let unexpected: Vec<&str> = seen
            .iter()
            .copied()
            .filter(|id| expected.binary_search(id).is_err())
            .collect();
        let missing = expected
            .iter()
            .filter(|id| seen.binary_search(id).is_err())
            .count();
        if expected.is_empty()
            || !unexpected.is_empty()
            || missing > 0
            || seen.len() != expected.len()
        {
            return Err(TrainingError::Queries {
                path,
                dataset: data.name.clone(),
                part,
                seen: seen.len(),
                expected: expected.len(),
                unexpected: unexpected.len(),
                first: unexpected.first().map(|id| id.to_string()),
                missing,
            });
        }
    }
    Ok(())
}

/// Ranks by the semantic stage alone: the tools nearest the query (the dense baseline).
#[cfg(feature = "semantic")]
pub struct DenseRanker<'a> {
    index: &'a SearchIndex,
    names: Vec<String>,
}

#[cfg(feature = "semantic")]
impl<'a> DenseRanker<'a> {
    /// The dense ranking of `index`'s semantic stage (none if it has none).
    pub fn new(index: &'a SearchIndex) -> DenseRanker<'a> {
        DenseRanker {
            index,
            names: index.names().map(str::to_string).collect(),
        }
    }
}

#[cfg(feature = "semantic")]
impl Ranker for DenseRanker<'_> {
    fn rank(&self, query: &str, k: usize) -> Vec<String> {
        let Some(sem) = self.index.semantic() else {
            return Vec::new();
        };
        sem.nearest(query, k)
            .into_iter()
            .filter_map(|(_, t)| self.names.get(t as usize).cloned())
            .collect()
    }
}

/// Reads `<dir>/<name>/catalog.jsonl` and `<dir>/<name>/queries.jsonl`.
pub fn load_dataset(dir: &Path, name: &str) -> Result<Dataset, DatasetError> {
    let catalog = read_catalog_jsonl(&dir.join(name).join("catalog.jsonl"))?;
    let path = dir.join(name).join("queries.jsonl");
    let io = |source| DatasetError::Io {
        path: path.clone(),
        source,
    };
    let mut queries = Vec::new();
    for (i, line) in BufReader::new(File::open(&path).map_err(io)?)
        .lines()
        .enumerate()
    {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let q = serde_json::from_str(&line).map_err(|source| DatasetError::Parse {
            path: path.clone(),
            line: i + 1,
            source,
        })?;
        queries.push(q);
    }
    Ok(Dataset {
        name: name.to_string(),
        catalog,
        queries,
    })
}

/// Which half of a data set a query belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// Used to tune ranking parameters.
    Tune,
    /// Never used for tuning; reported to check that tuning generalises.
    Holdout,
}

/// Splits queries by the FNV-1a hash of their id (its lowest bit).
pub fn half_of(id: &str) -> Half {
    if id_hash(id) & 1 == 0 {
        Half::Tune
    } else {
        Half::Holdout
    }
}

/// Which part of the tune half a query belongs to (see [`tune_part_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunePart {
    /// The queries the semantic stage's model is fitted to (`scripts/distill_static.py` reads
    /// them, with the catalogs' tool texts).
    Fit,
    /// The queries the model never saw: the fusion of the lexical and dense rankings is chosen
    /// on these, so that it learns how far to trust the dense ranking on unseen queries.
    Fuse,
}

/// Splits the tune half in two by the second-lowest bit of the same hash as [`half_of`] (the
/// distiller, `scripts/distill_static.py`, repeats this rule in Python); `None` for a held-out
/// query.
pub fn tune_part_of(id: &str) -> Option<TunePart> {
    let h = id_hash(id);
    match (h & 1, h & 2) {
        (0, 0) => Some(TunePart::Fit),
        (0, _) => Some(TunePart::Fuse),
        _ => None,
    }
}

/// The FNV-1a hash of a query id.
fn id_hash(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Anything that ranks tools for a query.
pub trait Ranker {
    /// Up to `k` tool names, best first.
    fn rank(&self, query: &str, k: usize) -> Vec<String>;
}

impl Ranker for SearchIndex {
    /// Parses `query` and searches; a query that does not parse ranks nothing.
    fn rank(&self, query: &str, k: usize) -> Vec<String> {
        match Query::parse(query) {
            Ok(q) => self
                .search(&q, k)
                .hits
                .into_iter()
                .map(|h| h.name)
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// Retrieval quality averaged over queries, each value in `0..=1`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    /// Mean recall@1.
    pub recall_at_1: f64,
    /// Mean recall@5.
    pub recall_at_5: f64,
    /// Mean nDCG@5.
    pub ndcg_at_5: f64,
    /// Mean reciprocal rank, cut off at 10.
    pub mrr_at_10: f64,
    /// The number of queries averaged.
    pub queries: usize,
}

/// The fraction of `relevant` found in the first `k` of `ranked`.
pub fn recall_at(ranked: &[String], relevant: &[String], k: usize) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|n| relevant.contains(n))
        .count();
    found as f64 / relevant.len() as f64
}

/// Normalised discounted cumulative gain of the first `k` of `ranked`.
pub fn ndcg_at(ranked: &[String], relevant: &[String], k: usize) -> f64 {
    let gain = |rank: usize| 1.0 / ((rank + 2) as f64).log2();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, n)| relevant.contains(n))
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..relevant.len().min(k)).map(gain).sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

/// `1 / rank` of the first relevant name within the first `k`, else 0.
pub fn reciprocal_rank(ranked: &[String], relevant: &[String], k: usize) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|n| relevant.contains(n))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Averages the metrics of `ranker` over `queries`.
pub fn evaluate<'a>(
    ranker: &dyn Ranker,
    queries: impl IntoIterator<Item = &'a EvalQuery>,
) -> Metrics {
    let mut m = Metrics::default();
    for q in queries {
        let ranked = ranker.rank(&q.query, 10);
        m.recall_at_1 += recall_at(&ranked, &q.relevant, 1);
        m.recall_at_5 += recall_at(&ranked, &q.relevant, 5);
        m.ndcg_at_5 += ndcg_at(&ranked, &q.relevant, 5);
        m.mrr_at_10 += reciprocal_rank(&ranked, &q.relevant, 10);
        m.queries += 1;
    }
    if m.queries > 0 {
        let n = m.queries as f64;
        m.recall_at_1 /= n;
        m.recall_at_5 /= n;
        m.ndcg_at_5 /= n;
        m.mrr_at_10 /= n;
    }
    m
}

/// Sorts `(score, index)` pairs best first, ties by name, and returns the
/// first `k` names.
fn top_k(mut scored: Vec<(f64, usize)>, names: &[String], k: usize) -> Vec<String> {
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| names[a.1].cmp(&names[b.1]))
    });
    scored
        .into_iter()
        .take(k)
        .map(|(_, i)| names[i].clone())
        .collect()
}

/// Lowercased runs of alphanumeric characters.
fn plain_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// English stop words removed by [`Bm25Baseline`]: NLTK's list (the forms
/// without apostrophes; the tokenizer splits at them).
const BASELINE_STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "ma",
    "me",
    "mightn",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "wouldn",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The reference system's keyword scoring (see the module documentation).
#[derive(Clone, Debug)]
pub struct KeywordBaseline {
    names: Vec<String>,
    lower_names: Vec<String>,
    name_parts: Vec<Vec<String>>,
    descriptions: Vec<String>,
}

impl KeywordBaseline {
    /// Prepares the catalog.
    pub fn new(catalog: &[ToolDoc]) -> KeywordBaseline {
        KeywordBaseline {
            names: catalog.iter().map(|d| d.name.clone()).collect(),
            lower_names: catalog.iter().map(|d| d.name.to_lowercase()).collect(),
            name_parts: catalog
                .iter()
                .map(|d| crate::text::words(&d.name))
                .collect(),
            descriptions: catalog
                .iter()
                .map(|d| d.description.to_lowercase())
                .collect(),
        }
    }

    /// The score of tool `i` for the lowercased query `words`.
    fn score(&self, i: usize, words: &[String]) -> f64 {
        let mut s = 0.0;
        for w in words {
            if self.name_parts[i].iter().any(|p| p == w) {
                s += 10.0;
            } else if self.name_parts[i].iter().any(|p| p.contains(w.as_str())) {
                s += 5.0;
            } else if self.lower_names[i].contains(w.as_str()) {
                s += 3.0;
            }
            if self.descriptions[i].contains(w.as_str()) {
                s += 2.0;
            }
        }
        s
    }
}

impl Ranker for KeywordBaseline {
    fn rank(&self, query: &str, k: usize) -> Vec<String> {
        let words: Vec<String> = plain_words(query).collect();
        let scored = (0..self.names.len())
            .map(|i| (self.score(i, &words), i))
            .filter(|&(s, _)| s > 0.0)
            .collect();
        top_k(scored, &self.names, k)
    }
}

/// Okapi BM25 over name, description and parameters as one bag of words,
/// the usual strong lexical baseline: names split like ours (camelCase
/// too), everything lowercased, English stop words removed, no stemming.
#[derive(Clone, Debug)]
pub struct Bm25Baseline {
    names: Vec<String>,
    postings: HashMap<String, Vec<(usize, u32)>>,
    lengths: Vec<f64>,
    avg_length: f64,
}

impl Bm25Baseline {
    /// `k1` of the baseline.
    pub const K1: f64 = 1.2;
    /// `b` of the baseline.
    pub const B: f64 = 0.75;

    /// Indexes the catalog: the words of the name, the description and the
    /// JSON text of the parameter schema.
    pub fn new(catalog: &[ToolDoc]) -> Bm25Baseline {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(catalog.len());
        for (i, doc) in catalog.iter().enumerate() {
            let params = doc.parameters.to_string();
            let mut tf: HashMap<String, u32> = HashMap::new();
            let mut len = 0;
            for w in crate::text::words(&doc.name)
                .into_iter()
                .chain(plain_words(&doc.description))
                .chain(plain_words(&params))
            {
                if BASELINE_STOP_WORDS.binary_search(&w.as_str()).is_ok() {
                    continue;
                }
                *tf.entry(w).or_default() += 1;
                len += 1;
            }
            for (w, n) in tf {
                postings.entry(w).or_default().push((i, n));
            }
            lengths.push(f64::from(len));
        }
        let avg_length = lengths.iter().sum::<f64>() / (lengths.len().max(1) as f64);
        Bm25Baseline {
            names: catalog.iter().map(|d| d.name.clone()).collect(),
            postings,
            lengths,
            avg_length,
        }
    }
}

impl Ranker for Bm25Baseline {
    fn rank(&self, query: &str, k: usize) -> Vec<String> {
        let n = self.names.len() as f64;
        let mut scores = vec![0.0; self.names.len()];
        for w in plain_words(query) {
            if BASELINE_STOP_WORDS.binary_search(&w.as_str()).is_ok() {
                continue;
            }
            let Some(list) = self.postings.get(&w) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(i, tf) in list {
                let tf = f64::from(tf);
                let norm = 1.0 - Self::B + Self::B * self.lengths[i] / self.avg_length;
                scores[i] += idf * tf * (Self::K1 + 1.0) / (tf + Self::K1 * norm);
            }
        }
        let scored = scores
            .into_iter()
            .enumerate()
            .filter(|&(_, s)| s > 0.0)
            .map(|(i, s)| (s, i));
        top_k(scored.collect(), &self.names, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recall_counts_relevant_tools_in_the_first_k() {
        let ranked = names(&["a", "x", "b", "y"]);
        let relevant = names(&["a", "b"]);
        assert_eq!(recall_at(&ranked, &relevant, 1), 0.5);
        assert_eq!(recall_at(&ranked, &relevant, 2), 0.5);
        assert_eq!(recall_at(&ranked, &relevant, 3), 1.0);
    }

    #[test]
    fn ndcg_of_a_perfect_ranking_is_one() {
        let ranked = names(&["a", "b", "x"]);
        assert_eq!(ndcg_at(&ranked, &names(&["b", "a"]), 5), 1.0);
    }

    #[test]
    fn ndcg_discounts_by_log_of_rank() {
        // One relevant tool at rank 3: DCG = 1/log2(4) = 0.5, ideal = 1.
        let ranked = names(&["x", "y", "a"]);
        assert!((ndcg_at(&ranked, &names(&["a"]), 5) - 0.5).abs() < 1e-12);
        // Two relevant, found at ranks 1 and 3: (1 + 0.5) / (1 + 1/log2(3)).
        let ranked = names(&["a", "y", "b"]);
        let expected = 1.5 / (1.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&ranked, &names(&["a", "b"]), 5) - expected).abs() < 1e-12);
    }

    #[test]
    fn ndcg_ignores_hits_after_k() {
        let ranked = names(&["x", "y", "a"]);
        assert_eq!(ndcg_at(&ranked, &names(&["a"]), 2), 0.0);
    }

    #[test]
    fn reciprocal_rank_is_one_over_first_relevant_rank() {
        let ranked = names(&["x", "a", "b"]);
        assert_eq!(reciprocal_rank(&ranked, &names(&["b", "a"]), 10), 0.5);
        assert_eq!(reciprocal_rank(&ranked, &names(&["b"]), 2), 0.0);
    }

    #[test]
    fn evaluate_averages_over_queries() {
        struct Fixed;
        impl Ranker for Fixed {
            fn rank(&self, _: &str, _: usize) -> Vec<String> {
                vec!["a".into()]
            }
        }
        let q = |id: &str, rel: &str| EvalQuery {
            id: id.into(),
            query: "q".into(),
            relevant: vec![rel.into()],
        };
        let m = evaluate(&Fixed, &[q("1", "a"), q("2", "b")]);
        assert_eq!(m.queries, 2);
        assert_eq!(m.recall_at_1, 0.5);
        assert_eq!(m.mrr_at_10, 0.5);
    }

    #[test]
    fn keyword_baseline_scores_name_parts_then_description() {
        let catalog = vec![
            ToolDoc::new("weather_now", "current conditions"),
            ToolDoc::new("forecast", "weather for tomorrow"),
            ToolDoc::new("weatherstation", "sensors"),
        ];
        let kb = KeywordBaseline::new(&catalog);
        // 10 (part equal) vs 5 (part contains) vs 2 (description)
        assert_eq!(
            kb.rank("weather", 3),
            ["weather_now", "weatherstation", "forecast"]
        );
    }

    #[test]
    fn bm25_baseline_prefers_the_rarer_word() {
        let catalog = vec![
            ToolDoc::new("a", "common words rare"),
            ToolDoc::new("b", "common words"),
            ToolDoc::new("c", "common"),
        ];
        let bm = Bm25Baseline::new(&catalog);
        assert_eq!(bm.rank("rare common", 1), ["a"]);
    }

    #[test]
    fn baseline_stop_words_are_sorted_for_binary_search() {
        assert!(BASELINE_STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn halves_split_roughly_evenly_and_stably() {
        let tune = (0..1000)
            .filter(|i| half_of(&format!("q{i}")) == Half::Tune)
            .count();
        assert!((400..600).contains(&tune), "{tune}");
        assert_eq!(half_of("q1"), half_of("q1"));
    }

    #[test]
    fn tune_parts_split_the_tune_half_roughly_evenly() {
        let ids: Vec<String> = (0..1000).map(|i| format!("q{i}")).collect();
        let fit = ids
            .iter()
            .filter(|id| tune_part_of(id) == Some(TunePart::Fit))
            .count();
        let fuse = ids
            .iter()
            .filter(|id| tune_part_of(id) == Some(TunePart::Fuse))
            .count();
        assert!((200..300).contains(&fit), "{fit}");
        assert!((200..300).contains(&fuse), "{fuse}");
    }

    #[test]
    fn a_query_has_a_tune_part_exactly_when_it_is_in_the_tune_half() {
        for i in 0..1000 {
            let id = format!("q{i}");
            assert_eq!(
                tune_part_of(&id).is_some(),
                half_of(&id) == Half::Tune,
                "{id}"
            );
        }
    }

    fn dataset_of(ids: &[&str]) -> Dataset {
        Dataset {
            name: "set".to_string(),
            catalog: Vec::new(),
            queries: ids
                .iter()
                .map(|id| EvalQuery {
                    id: id.to_string(),
                    query: "q".to_string(),
                    relevant: Vec::new(),
                })
                .collect(),
        }
    }

    /// A model directory whose `training.json` lists `seen` as the set's query ids.
    fn model_that_saw(seen: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let json = serde_json::json!({ "part": "fit", "query_ids": { "set": seen } });
        std::fs::write(dir.path().join("training.json"), json.to_string()).expect("write");
        dir
    }

    fn ids_in(part: Option<TunePart>) -> Vec<String> {
        (0..200)
            .map(|i| format!("q{i}"))
            .filter(|id| tune_part_of(id) == part)
            .collect()
    }

    #[test]
    fn check_training_accepts_a_model_fitted_to_exactly_the_part() {
        let all: Vec<String> = (0..200).map(|i| format!("q{i}")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let fit = ids_in(Some(TunePart::Fit));
        let fit: Vec<&str> = fit.iter().rev().map(String::as_str).collect();
        let dir = model_that_saw(&fit);
        check_training(dir.path(), TunePart::Fit, &[dataset_of(&all)]).expect("fitted to the part");
    }

    #[test]
    fn check_training_names_a_held_out_query_the_model_saw() {
        let all: Vec<String> = (0..200).map(|i| format!("q{i}")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let held = ids_in(None);
        let mut seen = ids_in(Some(TunePart::Fit));
        seen.push(held[0].clone());
        let seen: Vec<&str> = seen.iter().map(String::as_str).collect();
        let dir = model_that_saw(&seen);
        let err = check_training(dir.path(), TunePart::Fit, &[dataset_of(&all)])
            .expect_err("a held-out query was seen");
        match err {
            TrainingError::Queries {
                unexpected,
                first,
                missing,
                ..
            } => {
                assert_eq!(unexpected, 1);
                assert_eq!(first.as_deref(), Some(held[0].as_str()));
                assert_eq!(missing, 0);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn check_training_counts_the_part_queries_the_model_missed() {
        let all: Vec<String> = (0..200).map(|i| format!("q{i}")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let fuse = ids_in(Some(TunePart::Fuse));
        let seen: Vec<&str> = fuse[1..].iter().map(String::as_str).collect();
        let dir = model_that_saw(&seen);
        let err = check_training(dir.path(), TunePart::Fuse, &[dataset_of(&all)])
            .expect_err("one fuse query unseen");
        assert!(
            matches!(
                err,
                TrainingError::Queries {
                    missing: 1,
                    unexpected: 0,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn check_training_says_which_file_is_missing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = check_training(dir.path(), TunePart::Fit, &[dataset_of(&["q1"])])
            .expect_err("no training.json");
        assert!(matches!(err, TrainingError::Io { .. }), "{err}");
        assert!(err.to_string().contains("training.json"), "{err}");
    }

    #[test]
    fn mirror_model_dir_is_the_model_dir_with_a_mirror_suffix() {
        let model = semantic_model_dir();
        let mirror = semantic_mirror_model_dir();
        assert_eq!(mirror.parent(), model.parent());
        assert_eq!(
            mirror
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string),
            model
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| format!("{n}-mirror"))
        );
    }
}
