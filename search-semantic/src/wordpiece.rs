//! BERT's uncased WordPiece tokenizer, as `tokenizer.json` describes it: clean the text, put
//! spaces around CJK characters, strip accents and lowercase, split at whitespace and
//! punctuation, then cut each word into the longest vocabulary pieces from the left
//! (`##`-prefixed after the first). For a static model's mean, punctuation and stop words are
//! left out; for a transformer ([`WordPiece::bert`]) they are kept, as BERT's own tokenizer
//! keeps them.
//!
//! Why written here rather than taken from the `tokenizers` crate: a static model needs only
//! the pre-tokenizer and WordPiece's greedy longest match (about 150 lines with tests), while
//! `tokenizers` (0.21) brings its whole pipeline (BPE, Unigram, byte-level, templates,
//! padding), `rayon`, `regex`, `onig` (a C library, compiled with `cc`) and `esaxx-rs` (C++) by
//! default: several dozen crates and a C/C++ toolchain in every toolgate build, for a tokenizer
//! of which one function is used. What is not WordPiece with a BERT normalizer is refused at
//! load, saying so, rather than tokenized differently from the model's training.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Bumped when the reading of a text changes (what splits words, what is dropped): it is part of
/// every model's id, so vectors computed under another reading are refused as another model's
/// and computed again. 2: non-ASCII symbols (`€`, `©`) stay inside their word, as BERT's
/// tokenizer keeps them.
pub(crate) const READING_VERSION: u64 = 2;

/// A WordPiece vocabulary and its settings.
#[derive(Debug, Clone)]
pub(crate) struct WordPiece {
    vocab: HashMap<String, u32>,
    prefix: String,
    max_chars: usize,
    lowercase: bool,
    strip_accents: bool,
    /// `None`: a static model's reading (stop words, punctuation and unknown words left out).
    /// `Some(unk)`: BERT's own, for a transformer: every word and mark kept, a word the
    /// vocabulary cannot cover becoming the `[UNK]` id `unk`.
    unk: Option<u32>,
}

impl WordPiece {
    pub(crate) fn new(
        vocab: HashMap<String, u32>,
        prefix: String,
        max_chars: usize,
        lowercase: bool,
        strip_accents: bool,
    ) -> WordPiece {
        WordPiece {
            vocab,
            prefix,
            max_chars,
            lowercase,
            strip_accents,
            unk: None,
        }
    }

    /// The same vocabulary read as BERT reads it (for a transformer): stop words and
    /// punctuation kept, an uncovered word becoming `unk`.
    pub(crate) fn bert(self, unk: u32) -> WordPiece {
        WordPiece {
            unk: Some(unk),
            ..self
        }
    }

    /// The id of `token` (e.g. `[CLS]`), if the vocabulary has it.
    pub(crate) fn id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    /// The largest id plus one.
    pub(crate) fn len(&self) -> usize {
        self.vocab.values().max().map_or(0, |m| *m as usize + 1)
    }

    /// The vocabulary ids of `text`, without special tokens. In a static model's reading
    /// unknown words are left out (their `[UNK]` vector says nothing about them); in BERT's
    /// ([`WordPiece::bert`]) each is one `[UNK]`.
    pub(crate) fn ids(&self, text: &str, out: &mut Vec<u32>) {
        let normal = self.normalize(text);
        let mut word = String::new();
        for c in normal.chars() {
            if c.is_whitespace() {
                self.word_ids(&word, out);
                word.clear();
            } else if is_punctuation(c) {
                // A word boundary; for a static model the mark itself says nothing about
                // meaning, for BERT it is a token of its own.
                self.word_ids(&word, out);
                word.clear();
                if self.unk.is_some() {
                    let mut mark = [0u8; 4];
                    self.word_ids(c.encode_utf8(&mut mark), out);
                }
            } else {
                word.push(c);
            }
        }
        self.word_ids(&word, out);
    }

    fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
                continue;
            }
            if is_cjk(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
            } else if c.is_whitespace() {
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        if self.strip_accents && !out.is_ascii() {
            out = out.nfd().filter(|c| !is_combining_mark(*c)).collect();
        }
        if self.lowercase {
            out = out.to_lowercase();
        }
        out
    }

    fn word_ids(&self, word: &str, out: &mut Vec<u32>) {
        // Stop words say little about what a text means, and in a static model (no context to
        // discount them) they pull every sentence towards the same vector.
        if word.is_empty() {
            return;
        }
        if self.unk.is_none() && word.is_ascii() && toolgate_search::is_stop_word(word) {
            return;
        }
        if word.chars().count() > self.max_chars {
            out.extend(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                // Back off one character.
                end = word[..end]
                    .char_indices()
                    .next_back()
                    .map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    // The whole word is unknown (BERT: one `[UNK]`).
                    out.truncate(start_len);
                    out.extend(self.unk);
                    return;
                }
            }
        }
    }
}

/// BERT's punctuation, as its tokenizer has it: every ASCII printable character that is not a
/// letter or digit (symbols such as `$`, `+` and `|` included), and every other character of a
/// Unicode punctuation category (`P*`). Other symbols (`€`, `©`, `±`) are not punctuation: they
/// stay inside their word, as BERT keeps them.
fn is_punctuation(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    c.is_ascii_punctuation()
        || (!c.is_ascii()
            && matches!(
                get_general_category(c),
                G::ConnectorPunctuation
                    | G::DashPunctuation
                    | G::OpenPunctuation
                    | G::ClosePunctuation
                    | G::InitialPunctuation
                    | G::FinalPunctuation
                    | G::OtherPunctuation
            ))
}

/// The CJK Unified Ideographs blocks BERT's tokenizer isolates.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wp(words: &[&str]) -> WordPiece {
        let vocab = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i as u32))
            .collect();
        WordPiece::new(vocab, "##".into(), 100, true, true)
    }

    fn ids(w: &WordPiece, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        w.ids(text, &mut out);
        out
    }

    #[test]
    fn words_split_into_longest_pieces_from_the_left() {
        let w = wp(&["[UNK]", "un", "##aff", "##able", "weather"]);
        assert_eq!(ids(&w, "unaffable Weather"), vec![1, 2, 3, 4]);
    }

    #[test]
    fn stop_words_are_left_out() {
        let w = wp(&["[UNK]", "the", "weather"]);
        assert_eq!(ids(&w, "The weather"), vec![2]);
    }

    #[test]
    fn punctuation_separates_words_and_is_left_out() {
        let w = wp(&["[UNK]", "get", "weather", "_", ","]);
        assert_eq!(ids(&w, "get_weather,"), vec![1, 2]);
    }

    #[test]
    fn accents_are_stripped_before_lookup() {
        let w = wp(&["[UNK]", "cafe"]);
        assert_eq!(ids(&w, "Café"), vec![1]);
    }

    #[test]
    fn a_word_with_no_full_cover_is_left_out() {
        let w = wp(&["[UNK]", "un", "weather"]);
        assert_eq!(ids(&w, "unxyz weather"), vec![2]);
    }

    #[test]
    fn berts_reading_keeps_stop_words_and_marks_and_marks_unknown_words() {
        let w = wp(&["[UNK]", "the", "weather", "?", "un"]).bert(0);
        assert_eq!(ids(&w, "The weather, unxyz?"), vec![1, 2, 0, 0, 3]);
    }

    #[test]
    fn a_symbol_stays_inside_its_word_and_unicode_punctuation_splits() {
        let w = wp(&["[UNK]", "€", "##100", "—", "ok"]).bert(0);
        assert_eq!(ids(&w, "€100—ok"), vec![1, 2, 3, 4]);
    }

    #[test]
    fn cjk_characters_are_separate_words() {
        let w = wp(&["[UNK]", "天", "气"]);
        assert_eq!(ids(&w, "天气"), vec![1, 2]);
    }
}
