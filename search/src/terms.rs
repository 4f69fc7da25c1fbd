//! The terms a free-text query is searched with.

use crate::quotes::quoted_spans;
use crate::text;

/// A normalised query term.
#[derive(Clone, Debug)]
pub(crate) struct QueryTerm {
    /// The lowercased word.
    pub(crate) word: String,
    /// Its stem, the dictionary key.
    pub(crate) stem: String,
    /// From a `+word`.
    pub(crate) required: bool,
    /// Found in the free text only inside quotes (see [`quoted_spans`]).
    pub(crate) quoted: bool,
}

/// The most distinct terms a query is searched with; the rest are ignored.
pub(crate) const MAX_QUERY_TERMS: usize = 64;

/// Required terms first (all their parts, stop words kept), then the free
/// text's terms and any whole identifiers in it (`get_weather`), each stem
/// once.
pub(crate) fn query_terms(free: &str, required: &[String]) -> Vec<QueryTerm> {
    let mut out: Vec<QueryTerm> = Vec::new();
    // The stems of the text outside quotes (and that text, lowercased),
    // if anything is quoted.
    let spans = quoted_spans(free);
    let outside: Option<(Vec<String>, String)> = (!spans.is_empty()).then(|| {
        let mut text = free.to_string();
        for sp in &spans {
            text.replace_range(sp.clone(), &" ".repeat(sp.len()));
        }
        let mut stems: Vec<String> = text::terms(&text)
            .iter()
            .map(|w| text::stem(w).into_owned())
            .collect();
        stems.sort_unstable();
        (stems, text.to_lowercase())
    });
    let mut push = |word: &str, required: bool| {
        let stem = text::stem(word);
        if out.len() < MAX_QUERY_TERMS && !out.iter().any(|t| t.stem == stem) {
            // A whole identifier is not split into terms: look for it
            // as it is written.
            let quoted = !required
                && outside.as_ref().is_some_and(|(stems, lower)| {
                    stems.binary_search_by(|s| s.as_str().cmp(&stem)).is_err()
                        && !(word.contains(['_', '.', '-']) && lower.contains(word))
                });
            out.push(QueryTerm {
                stem: stem.into_owned(),
                word: word.to_string(),
                required,
                quoted,
            });
        }
    };
    for r in required {
        text::for_each_word(r, |w| push(w, true));
    }
    text::for_each_term(free, |w| push(w, false));
    for token in free.split_whitespace() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        if several_words(token) && !token.contains(char::is_whitespace) {
            let whole = token.to_lowercase();
            if whole
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                push(&whole, false);
            }
        }
    }
    out
}

/// True if `token` holds more than one of the [`text::words`].
fn several_words(token: &str) -> bool {
    let mut words = 0;
    text::for_each_word(token, |_| words += 1);
    words > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_words_never_outside_quotes_are_quoted() {
        let terms = query_terms("find the food review 'I love the food here'", &[]);
        let quoted: Vec<&str> = terms
            .iter()
            .filter(|t| t.quoted)
            .map(|t| t.word.as_str())
            .collect();
        assert_eq!(quoted, ["love"]);
    }
}
