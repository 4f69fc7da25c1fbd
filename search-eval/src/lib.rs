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

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use toolgate_search::{Query, SearchIndex, ToolDoc, read_catalog_jsonl};

mod baselines;
pub mod loo;
mod training;

pub use baselines::{Bm25Baseline, KeywordBaseline};
pub use training::{TrainingError, check_training, semantic_mirror_model_dir};

/// The data sets shipped under the data set directory.
pub const DATASETS: [&str; 3] = ["bfcl", "sealtools", "metatool"];

/// Every data set of the quality benchmarks: the three shared ones ([`DATASETS`]) and those
/// kept in this crate's `data/` folder ([`LOCAL_DATASETS`]).
pub const ALL_DATASETS: [&str; 4] = ["bfcl", "sealtools", "metatool", "apibench"];

/// The data sets kept in this crate's `data/` folder, each with its `SOURCE.txt`: built from
/// public tool-retrieval data no ranking or model of toolgate was tuned on.
pub const LOCAL_DATASETS: [&str; 1] = ["apibench"];

/// The folder that holds data set `name`: this crate's `data/` for [`LOCAL_DATASETS`], else
/// [`datasets_dir`].
pub fn dataset_dir_of(name: &str) -> PathBuf {
    if LOCAL_DATASETS.contains(&name) {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
    } else {
        datasets_dir()
    }
}

/// Reads data set `name` from its folder ([`dataset_dir_of`]).
pub fn load_named(name: &str) -> Result<Dataset, DatasetError> {
    load_dataset(&dataset_dir_of(name), name)
}

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
    Catalog(#[from] toolgate_search::CatalogError),
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

/// The environment variable that names the embedding model (static or transformer) the
/// quality checks of the semantic stage use.
pub const SEMANTIC_MODEL_ENV: &str = "TOOLGATE_SEMANTIC_MODEL";

/// The embedding model for the semantic quality checks: `$TOOLGATE_SEMANTIC_MODEL` if
/// set, else `.tools/models/minilm-l6-general` in the workspace, where `scripts/model.sh`
/// distils it (the general model: it saw no text of any data set).
pub fn semantic_model_dir() -> PathBuf {
    match std::env::var_os(SEMANTIC_MODEL_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/models/minilm-l6-general"),
    }
}

/// Ranks by the semantic stage alone: the tools nearest the query (the dense baseline).
pub struct DenseRanker<'a> {
    index: &'a SearchIndex,
    names: Vec<String>,
}

impl<'a> DenseRanker<'a> {
    /// The dense ranking of `index`'s semantic stage (none if it has none).
    pub fn new(index: &'a SearchIndex) -> DenseRanker<'a> {
        DenseRanker {
            index,
            names: index.names().map(str::to_string).collect(),
        }
    }
}

impl Ranker for DenseRanker<'_> {
    fn rank(&self, query: &str, k: usize) -> Vec<String> {
        let Some(sem) = toolgate_search_semantic::SemanticIndex::semantic(self.index) else {
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
}
