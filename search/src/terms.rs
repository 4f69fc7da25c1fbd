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
    /// May be expanded by typo (see [`crate::lookup`]): not when every occurrence is part of
    /// a token that cannot be a misspelt word (see [`odd_token`]).
    pub(crate) typos: bool,
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
    let mut push = |word: &str, required: bool, typos: bool| {
        let stem = text::stem(word);
        if let Some(t) = out.iter_mut().find(|t| t.stem == stem) {
            t.typos |= typos;
        } else if out.len() < MAX_QUERY_TERMS {
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
                typos,
            });
        }
    };
    for r in required {
        text::for_each_word(r, |w| push(w, true, false));
    }
    // Token by token (words never span whitespace): the same terms as the whole text's.
    for token in free.split_whitespace() {
        let typos = !odd_token(token);
        text::for_each_term(token, |w| push(w, false, typos));
    }
    for token in free.split_whitespace() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        if several_words(token) && !token.contains(char::is_whitespace) {
            let whole = token.to_lowercase();
            if whole
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                push(&whole, false, false);
            }
        }
    }
    out
}

/// True if the whitespace-separated `token` cannot be a misspelt word, so its words are not
/// expanded by typo: an e-mail address or a URL (`@`, `/`), a token with digits (`4111-1111`,
/// `B07XJ8C8F5`), or one longer than [`ODD_TOKEN_CHARS`].
fn odd_token(token: &str) -> bool {
    token.len() > ODD_TOKEN_CHARS
        || token
            .bytes()
            .any(|b| matches!(b, b'@' | b'/') || b.is_ascii_digit())
}

/// Tokens longer than this many bytes are not words (a hash, a key, a pasted identifier).
const ODD_TOKEN_CHARS: usize = 24;

/// True if `token` holds more than one of the [`text::words`].
///
/// A token of lowercase ASCII letters only (most of a long query's) is at most one word and
/// is told so without splitting it: splitting every token of the longest queries a second
/// time took a third of `query_terms` (callgrind).
fn several_words(token: &str) -> bool {
    if token.bytes().all(|b| b.is_ascii_lowercase()) {
        return false;
    }
    let mut words = 0;
    text::for_each_word(token, |_| words += 1);
    words > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_words_are_told_from_one_word_whatever_its_case() {
        for (token, several) in [
            ("weather", false),
            ("", false),
            ("getWeather", true),
            ("get_weather", true),
            ("sha256", true),
            ("Weather", false),
            ("café", false),
            ("cafébar_x", true),
        ] {
            assert_eq!(several_words(token), several, "{token}");
        }
    }

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

    fn typos_of(free: &str) -> Vec<(String, bool)> {
        query_terms(free, &[])
            .into_iter()
            .map(|t| (t.word, t.typos))
            .collect()
    }

    #[test]
    fn words_of_an_address_or_a_token_with_digits_are_not_expanded_by_typo() {
        let terms = typos_of("mail jonathan@examplemail.com about order A7Bcdefgh");
        let no_typos: Vec<&str> = terms
            .iter()
            .filter(|(_, typos)| !typos)
            .map(|(w, _)| w.as_str())
            .collect();
        assert_eq!(
            no_typos,
            [
                "jonathan",
                "examplemail",
                "com",
                "7",
                "bcdefgh",
                "a7bcdefgh"
            ]
        );
    }

    #[test]
    fn a_token_longer_than_the_limit_is_not_expanded_by_typo() {
        let long = "a".repeat(ODD_TOKEN_CHARS + 1);
        assert_eq!(typos_of(&long), [(long.clone(), false)]);
        let at_limit = "a".repeat(ODD_TOKEN_CHARS);
        assert_eq!(typos_of(&at_limit), [(at_limit.clone(), true)]);
    }

    #[test]
    fn a_word_also_written_as_a_word_is_expanded_by_typo() {
        assert_eq!(
            typos_of("jonathan@example.org wrote to jonathan"),
            [
                ("jonathan".to_string(), true),
                ("example".to_string(), false),
                ("org".to_string(), false),
                ("wrote".to_string(), true),
            ]
        );
    }

    #[test]
    fn terms_split_token_by_token_are_the_texts_terms() {
        let free = "Ünïcode café, getWeather_v2 for São Paulo; naïve HTTPServer";
        let mut expected: Vec<String> = Vec::new();
        crate::text::for_each_term(free, |w| {
            let stem = crate::text::stem(w).into_owned();
            if !expected.contains(&stem) {
                expected.push(stem);
            }
        });
        let found: Vec<String> = query_terms(free, &[])
            .into_iter()
            .map(|t| t.stem)
            .take(expected.len())
            .collect();
        assert_eq!(found, expected);
    }
}
