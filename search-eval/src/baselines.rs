//! The two baselines the index is compared with: the reference system's keyword scoring and
//! textbook BM25 (see the parent module's documentation).

use std::collections::HashMap;

use toolgate_search::ToolDoc;

use crate::Ranker;

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
                .map(|d| toolgate_search::words(&d.name))
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
            for w in toolgate_search::words(&doc.name)
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
}
