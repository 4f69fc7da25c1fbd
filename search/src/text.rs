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
    // Most words of a description are longer than any stop word; this
    // check runs for every word indexed.
    word.len() <= LONGEST_STOP_WORD && STOP_WORDS.binary_search(&word).is_ok()
}

/// The length in bytes of the longest stop word.
const LONGEST_STOP_WORD: usize = 10;

/// Splits `text` into lowercased words: first at every non-alphanumeric
/// character, then at camelCase humps and letter/digit boundaries.
///
/// Stop words are *not* removed here; see [`terms`].
///
/// ```
/// use toolgate_search::text::words;
/// assert_eq!(words("getWeather_v2"), ["get", "weather", "v", "2"]);
/// assert_eq!(words("HTTPServer"), ["http", "server"]);
/// ```
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// Calls `f` with each of the [`words`] of `text`, in order, without
/// allocating a string per word (the word is only valid during the call).
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut lower = String::new();
    let mut chars: Vec<(usize, char)> = Vec::new();
    for piece in text.split(|c: char| !c.is_alphanumeric()) {
        if piece.is_empty() {
            continue;
        }
        chars.clear();
        chars.extend(piece.char_indices());
        let mut emit = |part: &str| {
            if part.is_ascii() {
                lower.clear();
                lower.push_str(part);
                lower.make_ascii_lowercase();
                f(&lower);
            } else {
                f(&part.to_lowercase());
            }
        };
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
}

/// The words of `text` with stop words removed: what gets indexed.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |w| out.push(w.to_string()));
    out
}

/// Calls `f` with each of the [`terms`] of `text`, in order, without
/// allocating a string per term.
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    for_each_word(text, |w| {
        if !is_stop_word(w) {
            f(w)
        }
    });
}

/// The terms of a tool *name*: its parts (as [`terms`], but keeping stop
/// words, since in a name every part was chosen on purpose) plus the whole
/// name lowercased, so that a query quoting the exact name matches it best.
///
/// ```
/// use toolgate_search::text::name_terms;
/// assert_eq!(name_terms("fs__readFile"), ["fs", "read", "file", "fs__readfile"]);
/// ```
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
/// ```
/// use toolgate_search::text::stem;
/// assert_eq!(stem("queries"), "query");
/// assert_eq!(stem("calculating"), stem("calculation"));
/// assert_eq!(stem("files"), stem("file"));
/// ```
pub fn stem(word: &str) -> String {
    if word.chars().count() <= 3 || !word.chars().all(|c| c.is_alphabetic()) {
        return word.to_string();
    }
    let mut w = word.to_string();
    // 1. plurals
    if let Some(base) = w.strip_suffix("ies") {
        if base.len() >= 2 {
            w = format!("{base}y");
        }
    } else if let Some(base) = w.strip_suffix("sses") {
        w = format!("{base}ss");
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    // 2. -ing, -ed
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.chars().count() >= 3
            && base.chars().any(is_vowel)
        {
            w = base.to_string();
            undouble(&mut w);
            break;
        }
    }
    // 3. -ation
    if let Some(base) = w.strip_suffix("ation")
        && base.chars().count() >= 3
    {
        w = format!("{base}at");
    }
    // 4. final -e
    if w.ends_with('e') && w.chars().count() >= 4 {
        w.pop();
    }
    w
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

/// `runn` → `run`, `stopp` → `stop`, but `call`, `pass`, `buzz` stay.
fn undouble(w: &mut String) {
    let mut it = w.chars().rev();
    if let (Some(a), Some(b)) = (it.next(), it.next())
        && a == b
        && !is_vowel(a)
        && !matches!(a, 'l' | 's' | 'z')
        && a.is_alphabetic()
    {
        w.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_stop_word_is_longer_than_the_length_check() {
        let longest = STOP_WORDS.iter().map(|w| w.len()).max();
        assert_eq!(longest, Some(LONGEST_STOP_WORD));
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
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
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
