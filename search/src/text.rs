//! Text normalisation shared by the index and the query side.
//!
//! Both sides of a search must turn text into terms in exactly the same way,
//! otherwise a tool can never be found by the words of its own description.
//! This module is that single place. It has three parts:
//!
//! * **Splitting.** Free text is split on every character that is not
//!   alphanumeric (Unicode-aware), so `get_weather`, `math.factorial` and
//!   `read-file` fall apart at the separators. Each piece is split again at
//!   camelCase humps (`getWeatherData` → `get`, `weather`, `data`, and
//!   `HTTPServer` → `http`, `server`) and at letter/digit boundaries
//!   (`sha256` → `sha`, `256`).
//! * **Stop words.** A short, fixed list of English function words (`the`,
//!   `of`, `please`, ...) is dropped. They carry no information about which
//!   tool is meant and only add noise to scores.
//! * **Stemming.** [`stem`] is a deliberately small English suffix stripper
//!   (plurals, `-ing`, `-ed`, `-ation`, a final `-e`). It is not Porter: it
//!   only has to map the forms that appear in tool catalogs and agent
//!   requests (`files`/`file`, `calculating`/`calculate`/`calculation`) onto
//!   one key, deterministically.
//!
//! Everything is lowercased with Unicode rules ([`str::to_lowercase`]).

use std::borrow::Cow;

/// The English function words that are never indexed nor searched.
///
/// NLTK's English list without the words that carry meaning in a tool
/// request (`up`, `down`, `on`, `off`, `all`, `not`, `before`, ...) plus the
/// politeness of requests (`please`, `could`, `tell`, `want`, `need`). A word
/// such as `get`, `find` or `list` looks generic but is often the first part
/// of a tool name, so it stays.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "again",
    "against",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "being",
    "between",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "during",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
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
    "it",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "like",
    "may",
    "me",
    "might",
    "must",
    "my",
    "myself",
    "nd",
    "need",
    "now",
    "of",
    "once",
    "only",
    "or",
    "our",
    "ours",
    "ourselves",
    "own",
    "please",
    "rd",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "st",
    "such",
    "tell",
    "th",
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
    "until",
    "very",
    "want",
    "was",
    "we",
    "were",
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
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Returns true if `word` (already lowercased) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    // Runs for every word indexed, and for every word of a query: most words are longer than
    // any stop word, and the others are looked up as one integer each in an open-addressed
    // table a half full (one or two probes), not by a binary search of seven unpredictable
    // comparisons.
    let bytes = word.as_bytes();
    if bytes.is_empty() || bytes.len() > LONGEST_STOP_WORD {
        return false;
    }
    let mut padded = [0u8; 16];
    padded[..bytes.len()].copy_from_slice(bytes);
    let key = u128::from_be_bytes(padded);
    let mut slot = stop_slot(key);
    loop {
        match STOP_TABLE[slot] {
            k if k == key => return true,
            0 => return false,
            _ => slot = (slot + 1) % STOP_TABLE.len(),
        }
    }
}

/// The length in bytes of the longest stop word.
const LONGEST_STOP_WORD: usize = 10;

/// A word of at most 16 bytes as one integer: its bytes, big-endian, padded
/// with zeros (never 0 for a word that is not empty).
const fn stop_key(word: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let mut i = 0;
    while i < word.len() && i < 16 {
        bytes[i] = word[i];
        i += 1;
    }
    u128::from_be_bytes(bytes)
}

/// Where the search for `key` starts in [`STOP_TABLE`].
const fn stop_slot(key: u128) -> usize {
    let h = ((key >> 64) as u64) ^ (key as u64).rotate_left(29);
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize
}

/// [`STOP_WORDS`] as [`stop_key`]s in an open-addressed table (linear probing from
/// [`stop_slot`]), 0 marking an empty slot.
const STOP_TABLE: [u128; 256] = {
    let mut table = [0u128; 256];
    let mut i = 0;
    while i < STOP_WORDS.len() {
        let key = stop_key(STOP_WORDS[i].as_bytes());
        let mut slot = stop_slot(key);
        while table[slot] != 0 {
            slot = (slot + 1) % table.len();
        }
        table[slot] = key;
        i += 1;
    }
    table
};

/// Splits `text` into lowercased words: first at every non-alphanumeric
/// character, then at camelCase humps and letter/digit boundaries.
///
/// Stop words are *not* removed here; see `for_each_term`.
///
/// `getWeather_v2` gives `get`, `weather`, `v`, `2`; `HTTPServer` gives `http`, `server`.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// Calls `f` with each of the [`words`] of `text`, in order, without
/// allocating a string per word (the word is only valid during the call).
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    if text.is_ascii() {
        for_each_ascii_word(text, &mut f);
    } else {
        for_each_unicode_word(text, &mut f);
    }
}

/// [`for_each_word`] for ASCII text, byte by byte: the same rules, since
/// for an ASCII character Unicode's alphanumeric, lowercase, uppercase,
/// alphabetic and numeric classes are the ASCII ones. Words already in
/// lowercase are handed out without a copy.
fn for_each_ascii_word(text: &str, f: &mut impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut lower = String::new();
    let mut emit = |start: usize, end: usize| {
        let part = &text[start..end];
        if !part.bytes().any(|b| b.is_ascii_uppercase()) {
            f(part);
        } else if part.len() <= SHORT_WORD {
            // Lowercased on the stack: a capitalised word of a query allocated a string, once
            // per token, since each token of a query is split on its own.
            let mut buf = [0u8; SHORT_WORD];
            let buf = &mut buf[..part.len()];
            buf.copy_from_slice(part.as_bytes());
            buf.make_ascii_lowercase();
            f(std::str::from_utf8(buf).unwrap_or_default());
        } else {
            lower.clear();
            lower.push_str(part);
            lower.make_ascii_lowercase();
            f(&lower);
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let mut start = i;
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
            let (prev, cur) = (bytes[i - 1], bytes[i]);
            let next_is_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_is_lower)
                || (prev.is_ascii_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_ascii_alphabetic());
            if boundary {
                emit(start, i);
                start = i;
            }
            i += 1;
        }
        emit(start, i);
    }
}

/// The longest word [`for_each_ascii_word`] lowercases on the stack, in bytes.
const SHORT_WORD: usize = 32;

/// Calls `f` with `part` lowercased: an ASCII part in `lower` (reused, no allocation), any
/// other by `str::to_lowercase`.
fn emit_lowercase(part: &str, lower: &mut String, f: &mut impl FnMut(&str)) {
    if part.is_ascii() {
        lower.clear();
        lower.push_str(part);
        lower.make_ascii_lowercase();
        f(lower);
    } else {
        f(&part.to_lowercase());
    }
}

/// [`for_each_word`] for any text, character by character.
///
/// Each character's classes are looked up once, as it is read: outside ASCII, telling whether
/// a character is alphabetic or numeric searches Unicode's tables (thousands of instructions
/// for some scripts' letters), and splitting at the characters that are neither, then testing
/// each pair for a boundary, asked twice each (callgrind: the Thai requests among the 195
/// slowest queries at BFCL's 2,723 tools spent about a fifth of their search there).
fn for_each_unicode_word(text: &str, f: &mut impl FnMut(&str)) {
    let mut lower = String::new();
    let mut emit = |part: &str| emit_lowercase(part, &mut lower, f);
    // The characters of the run of alphanumeric ones being read (a piece of the text between
    // characters that are neither): where each starts, and its classes.
    let mut chars: Vec<(usize, Classes)> = Vec::new();
    for (at, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let classes = Classes::of(c);
        if classes.alphabetic || classes.numeric {
            chars.push((at, classes));
            continue;
        }
        let Some(&(start, _)) = chars.first() else {
            continue;
        };
        // The piece ends where this character starts.
        let mut from = start;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1].1, chars[i].1);
            let next_is_lower = chars.get(i + 1).is_some_and(|c| c.1.lowercase);
            let boundary =
                // fooBar
                (prev.lowercase && cur.uppercase)
                // HTTPServer: the last capital of a run starts a new word
                || (prev.uppercase && cur.uppercase && next_is_lower)
                // sha256, v2x
                || (prev.alphabetic && cur.numeric)
                || (prev.numeric && cur.alphabetic);
            if boundary {
                emit(&text[from..chars[i].0]);
                from = chars[i].0;
            }
        }
        emit(&text[from..at]);
        chars.clear();
    }
}

/// The classes of a character that [`for_each_unicode_word`] splits by.
#[derive(Clone, Copy)]
struct Classes {
    alphabetic: bool,
    numeric: bool,
    lowercase: bool,
    uppercase: bool,
}

impl Classes {
    fn of(c: char) -> Classes {
        Classes {
            alphabetic: c.is_alphabetic(),
            numeric: c.is_numeric(),
            lowercase: c.is_lowercase(),
            uppercase: c.is_uppercase(),
        }
    }
}

/// The words of `text` with stop words removed: what gets indexed ([`for_each_term`]'s
/// words, collected; for the tests).
#[cfg(test)]
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |w| out.push(w.to_string()));
    out
}

/// Calls `f` with each term of `text`, in order: its words with stop words removed, what
/// gets indexed.
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    for_each_word(text, |w| {
        if !is_stop_word(w) {
            f(w)
        }
    });
}

/// The terms of a tool *name*: its parts (as [`for_each_term`], but keeping stop
/// words, since in a name every part was chosen on purpose) plus the whole
/// name lowercased, so that a query quoting the exact name matches it best.
/// `fs__readFile` gives `fs`, `read`, `file`, `fs__readfile`.
///
/// The index adds a name's terms without building this vector (`fields.rs`); this is the
/// rule its tests check that against.
#[cfg(test)]
pub fn name_terms(name: &str) -> Vec<String> {
    let mut out = words(name);
    let whole = name.to_lowercase();
    if out.len() != 1 || out[0] != whole {
        out.push(whole);
    }
    out
}

/// Reduces an English word to a stem, so that inflected forms match.
///
/// The rules, applied in order to lowercase words of more than three
/// characters (shorter words are returned unchanged):
///
/// 1. plural: `-ies` → `-y`, `-sses` → `-ss`, otherwise a final `-s` is
///    dropped unless the word ends in `-ss`, `-us` or `-is`;
/// 2. `-ing` / `-ed` are dropped if at least three characters remain, and a
///    doubled final consonant left behind is undoubled (`running` → `run`);
/// 3. `-ation` → `-at` (`calculation` → `calculat`);
/// 4. a final `-e` is dropped from words of four or more characters.
///
/// Rule 4 makes `calculate`, `calculated`, `calculating` and `calculation`
/// all stem to `calculat`. The stemmer is idempotent on its own output for
/// the suffixes it knows, and never returns an empty string.
///
/// `queries` stems to `query`; `calculating` and `calculation` have one stem, as do `files`
/// and `file`.
///
/// Every rule but the first `-ies` → `-y` only shortens the word, so the
/// stem borrows from `word` unless that rule applied.
pub fn stem(word: &str) -> Cow<'_, str> {
    // Nearly every word is of ASCII letters: its characters are its bytes.
    let bytes = word.as_bytes();
    if bytes.iter().all(u8::is_ascii_alphabetic) {
        return stem_ascii(word);
    }
    if word.is_ascii() {
        // A character that is no letter.
        return Cow::Borrowed(word);
    }
    stem_chars(word)
}

/// [`stem`] for a word of ASCII letters (which the caller knows it is), byte by byte: the same rules, without decoding
/// characters (deciding each rule character by character took 170 instructions a word of a
/// query; callgrind, the 195 slowest queries at BFCL's 2,723 tools).
pub(crate) fn stem_ascii(word: &str) -> Cow<'_, str> {
    if word.len() <= 3 {
        return Cow::Borrowed(word);
    }
    let mut w = word;
    // Each rule is tried only if the word ends with its suffix's last letter.
    // 1. plurals
    if w.ends_with('s') {
        if let Some(base) = w.strip_suffix("ies") {
            if base.len() >= 2 {
                // None of the later rules applies to a word ending in `y`.
                return Cow::Owned(format!("{base}y"));
            }
        } else if w.ends_with("sses") {
            w = &w[..w.len() - 2];
        } else if !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
            w = &w[..w.len() - 1];
        }
    }
    // 2. -ing, -ed
    let suffix = match w.as_bytes().last() {
        Some(b'g') => "ing",
        Some(b'd') => "ed",
        _ => "",
    };
    if !suffix.is_empty()
        && let Some(base) = w.strip_suffix(suffix)
        && base.len() >= 3
        && base.bytes().any(|b| is_vowel(char::from(b)))
    {
        w = undouble_ascii(base);
    }
    // 3. -ation
    if w.ends_with('n')
        && let Some(base) = w.strip_suffix("ation")
        && base.len() >= 3
    {
        w = &w[..w.len() - "ion".len()];
    }
    // 4. final -e
    if w.len() >= 4 && w.ends_with('e') {
        w = &w[..w.len() - 1];
    }
    Cow::Borrowed(w)
}

/// [`undouble`] for ASCII letters.
fn undouble_ascii(w: &str) -> &str {
    match w.as_bytes() {
        [.., a, b] if a == b && !is_vowel(char::from(*a)) && !matches!(a, b'l' | b's' | b'z') => {
            &w[..w.len() - 1]
        }
        _ => w,
    }
}

/// [`stem`] for any word, character by character.
fn stem_chars(word: &str) -> Cow<'_, str> {
    let mut chars = word.chars();
    if chars.nth(3).is_none() || !word.chars().all(char::is_alphabetic) {
        return Cow::Borrowed(word);
    }
    let mut w = word;
    // 1. plurals
    if let Some(base) = w.strip_suffix("ies") {
        if base.len() >= 2 {
            // None of the later rules applies to a word ending in `y`.
            return Cow::Owned(format!("{base}y"));
        }
    } else if w.ends_with("sses") {
        w = &w[..w.len() - 2];
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w = &w[..w.len() - 1];
    }
    // 2. -ing, -ed
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.chars().nth(2).is_some()
            && base.chars().any(is_vowel)
        {
            w = undouble(base);
            break;
        }
    }
    // 3. -ation
    if let Some(base) = w.strip_suffix("ation")
        && base.chars().nth(2).is_some()
    {
        w = &w[..w.len() - "ion".len()];
    }
    // 4. final -e
    if w.ends_with('e') && w.chars().nth(3).is_some() {
        w = &w[..w.len() - 1];
    }
    Cow::Borrowed(w)
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

/// `runn` → `run`, `stopp` → `stop`, but `call`, `pass`, `buzz` stay.
fn undouble(w: &str) -> &str {
    let mut it = w.chars().rev();
    if let (Some(a), Some(b)) = (it.next(), it.next())
        && a == b
        && !is_vowel(a)
        && !matches!(a, 'l' | 's' | 'z')
        && a.is_alphabetic()
    {
        &w[..w.len() - a.len_utf8()]
    } else {
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_word_table_holds_exactly_the_stop_words() {
        let mut words: Vec<String> = Vec::new();
        let letters: Vec<char> = ('a'..='z').collect();
        for &a in &letters {
            words.push(a.to_string());
            for &b in &letters {
                words.push(format!("{a}{b}"));
                for &c in &letters {
                    words.push(format!("{a}{b}{c}"));
                }
            }
        }
        for w in STOP_WORDS {
            for at in 0..w.len() {
                let mut changed = w.as_bytes().to_vec();
                changed[at] = if changed[at] == b'z' {
                    b'a'
                } else {
                    changed[at] + 1
                };
                words.push(String::from_utf8(changed).unwrap());
                words.push(format!("{}{}", &w[..at], &w[at + 1..]));
            }
            words.push(w.to_string());
        }
        for w in &words {
            assert_eq!(is_stop_word(w), STOP_WORDS.contains(&w.as_str()), "{w:?}");
        }
    }

    #[test]
    fn no_stop_word_is_longer_than_the_length_check() {
        let longest = STOP_WORDS.iter().map(|w| w.len()).max();
        assert_eq!(longest, Some(LONGEST_STOP_WORD));
    }

    #[test]
    fn every_stop_word_and_only_those_is_a_stop_word() {
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
            // A key pads with zeros, so a longer or shorter word never
            // shares one.
            assert!(!is_stop_word(&format!("{w}a")), "{w}a");
        }
        assert!(!is_stop_word("weather"));
        assert!(!is_stop_word(""));
    }

    fn unicode_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_unicode_word(text, &mut |w: &str| out.push(w.to_string()));
        out
    }

    /// [`for_each_unicode_word`] as it was written first: split at the characters that are
    /// not alphanumeric, then each piece at its boundaries, asking each character's classes
    /// anew.
    fn reference_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let f = &mut |w: &str| out.push(w.to_string());
        let mut lower = String::new();
        let mut chars: Vec<(usize, char)> = Vec::new();
        for piece in text.split(|c: char| !c.is_alphanumeric()) {
            if piece.is_empty() {
                continue;
            }
            chars.clear();
            chars.extend(piece.char_indices());
            let mut emit = |part: &str| emit_lowercase(part, &mut lower, f);
            let mut start = 0;
            for i in 1..chars.len() {
                let (prev, cur) = (chars[i - 1].1, chars[i].1);
                let next_is_lower = chars.get(i + 1).is_some_and(|c| c.1.is_lowercase());
                let boundary =
                    // fooBar
                    (prev.is_lowercase() && cur.is_uppercase())
                    // HTTPServer: the last capital of a run starts a new word
                    || (prev.is_uppercase() && cur.is_uppercase() && next_is_lower)
                    // sha256, v2x
                    || (prev.is_alphabetic() && cur.is_numeric())
                    || (prev.is_numeric() && cur.is_alphabetic());
                if boundary {
                    emit(&piece[start..chars[i].0]);
                    start = chars[i].0;
                }
            }
            emit(&piece[start..]);
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn unicode_text_splits_as_the_first_splitter_split_it(
            text in "[a-zA-Z0-9 _.éÉßΣσςⅫ٣\u{e01}\u{e32}\u{e49}İ-]{0,30}"
        ) {
            proptest::prop_assert_eq!(unicode_words(&text), reference_words(&text));
        }

        #[test]
        fn ascii_text_splits_as_the_unicode_path_splits_it(text in "[ -~]{0,40}") {
            proptest::prop_assert_eq!(words(&text), unicode_words(&text));
        }

        #[test]
        fn ascii_words_stem_as_the_character_rules_stem_them(word in "[a-zA-Z]{0,12}(ing|ed|ation|ies|sses|s|e)?") {
            proptest::prop_assert_eq!(stem(&word), stem_chars(&word));
        }

        #[test]
        fn a_stem_is_a_prefix_of_its_word_or_ends_in_y(word in "[a-zA-Zé]{0,12}") {
            let stem = stem(&word);
            proptest::prop_assert!(!stem.is_empty() || word.is_empty());
            proptest::prop_assert!(word.starts_with(&*stem) || word.ends_with("ies") && stem.ends_with('y'));
            proptest::prop_assert_eq!(matches!(stem, Cow::Owned(_)), !word.starts_with(&*stem));
        }
    }

    #[test]
    fn stop_word_list_is_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn words_split_on_underscore_dash_dot_and_double_underscore() {
        assert_eq!(words("a_b-c.d__e"), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn words_split_camel_case_and_acronyms() {
        assert_eq!(words("analyzeEvidence"), ["analyze", "evidence"]);
        assert_eq!(words("parseJSONBody"), ["parse", "json", "body"]);
        assert_eq!(words("HTTPServer"), ["http", "server"]);
        assert_eq!(words("getWeather_v2"), ["get", "weather", "v", "2"]);
    }

    #[test]
    fn words_split_letter_digit_boundaries() {
        assert_eq!(words("sha256sum"), ["sha", "256", "sum"]);
    }

    #[test]
    fn words_lowercase_unicode() {
        assert_eq!(words("ÜberPreis"), ["über", "preis"]);
    }

    #[test]
    fn ascii_words_are_lowercased_and_split_like_the_rest() {
        assert_eq!(
            words("  getHTTPResponse2xx, v2 "),
            ["get", "http", "response", "2", "xx", "v", "2"]
        );
        assert_eq!(words("already_lower"), ["already", "lower"]);
    }

    #[test]
    fn terms_drop_stop_words() {
        assert_eq!(
            terms("Find the area of a triangle"),
            ["find", "area", "triangle"]
        );
    }

    #[test]
    fn name_terms_keep_the_whole_name() {
        assert_eq!(
            name_terms("math.factorial"),
            ["math", "factorial", "math.factorial"]
        );
        assert_eq!(name_terms("weather"), ["weather"]);
        assert_eq!(
            name_terms("fs__readFile"),
            ["fs", "read", "file", "fs__readfile"]
        );
    }

    #[test]
    fn stem_maps_inflections_to_one_key() {
        for (a, b) in [
            ("files", "file"),
            ("queries", "query"),
            ("running", "run"),
            ("calculated", "calculate"),
            ("conversions", "conversion"),
            ("boxes", "box"),
            ("calculating", "calculation"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_eq!(stem("queries"), "query");
    }

    #[test]
    fn stem_leaves_short_words_and_numbers_alone() {
        assert_eq!(stem("bus"), "bus");
        assert_eq!(stem("2024s"), "2024s");
    }

    #[test]
    fn stem_does_not_strip_ss_us_is() {
        assert_eq!(stem("address"), "address");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("analysis"), "analysis");
    }
}
