//! The `tool_search` query language.
//!
//! A query is one of two things:
//!
//! * **Free text**, e.g. `weather forecast for a city`. Words are matched
//!   against every indexed field. A word written as `+word` is *required*:
//!   every hit must contain it (see [`Query::Terms`]).
//! * **A selection**, `select:name_a,name_b`: the named tools, exactly, in
//!   the given order. This is how a model that already knows a tool's name
//!   makes it visible without a fuzzy search.
//!
//! [`Query::parse`] rejects queries that cannot mean anything, with messages
//! written for the model that sent them.

use crate::{terms, text};

/// The longest query accepted, in bytes. A tool search query is a few words;
/// anything longer is a mistake (a pasted document, a runaway loop) and is
/// refused rather than searched.
pub(crate) const MAX_QUERY_BYTES: usize = 4096;
const _: () = assert!(
    MAX_QUERY_BYTES == 4096,
    "the docs of `QueryError::TooLong` say 4096"
);

/// The longest tool name accepted by `select:` (rule N1).
pub(crate) const MAX_NAME_BYTES: usize = 128;

/// A parsed search query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Free-text search.
    Terms {
        /// The free text, without the `+word` tokens.
        text: String,
        /// The `+word` tokens, without the `+`, in query order. A hit must
        /// match each after normalisation (lowercase, split, stemmed), by an
        /// exact or stem match; typo and prefix matches do not satisfy a
        /// required word, since the model asked for that word precisely.
        required: Vec<String>,
    },
    /// `select:a,b`: the tools with exactly these names, in this order,
    /// duplicates removed.
    Select(Vec<String>),
}

/// Why a query was refused. The `Display` text tells the model what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Nothing but whitespace.
    #[error("the query is empty: describe the tool you need in a few words, or use select:name")]
    Empty,
    /// Longer than 4096 bytes (`MAX_QUERY_BYTES`).
    #[error(
        "the query is {len} bytes long, the limit is {max}: search with a few keywords instead"
    )]
    TooLong {
        /// Length of the query in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Only punctuation or stop words: nothing that could match a tool.
    #[error(
        "the query has no searchable words (only punctuation or words like 'the'): use words that describe the tool"
    )]
    NoSearchableWords,
    /// `+word` where `word` has no searchable term.
    #[error(
        "required word '+{0}' has no searchable letters or digits: drop the '+' or use another word"
    )]
    BadRequiredWord(String),
    /// `select:` followed by no names.
    #[error("select: needs at least one tool name, e.g. select:get_weather,send_email")]
    SelectWithoutNames,
    /// A name in `select:` breaks rule N1.
    #[error(
        "'{0}' is not a valid tool name (1-128 characters of A-Z a-z 0-9 _ . -): select takes exact tool names separated by commas"
    )]
    InvalidName(String),
}

impl Query {
    /// Parses the text a model sent as the `query` argument of `tool_search`.
    ///
    /// ```
    /// use toolgate_search::Query;
    /// let q = Query::parse("send +email quickly").unwrap();
    /// assert_eq!(q, Query::Terms { text: "send quickly".into(), required: vec!["email".into()] });
    /// let q = Query::parse("select:b, a").unwrap();
    /// assert_eq!(q, Query::Select(vec!["b".into(), "a".into()]));
    /// assert!(Query::parse("   ").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Query, QueryError> {
        if s.len() > MAX_QUERY_BYTES {
            return Err(QueryError::TooLong {
                len: s.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let s = s.trim();
        if s.is_empty() {
            return Err(QueryError::Empty);
        }
        if let Some(rest) = strip_prefix_ignore_case(s, "select:") {
            return parse_select(rest);
        }
        // Most queries have no `+word` and are already single-spaced: their free text is the
        // query itself (splitting and joining it again was a tenth of parsing a long one).
        if !s.contains('+') && single_spaced(s) {
            if !has_terms(s) {
                return Err(QueryError::NoSearchableWords);
            }
            return Ok(Query::Terms {
                text: s.to_string(),
                required: Vec::new(),
            });
        }
        let mut free = Vec::new();
        let mut required = Vec::new();
        for token in s.split_whitespace() {
            match token.strip_prefix('+') {
                Some(word) if !word.is_empty() => {
                    if text::words(word).is_empty() {
                        return Err(QueryError::BadRequiredWord(word.to_string()));
                    }
                    required.push(word.to_string());
                }
                _ => free.push(token),
            }
        }
        let text = free.join(" ");
        if required.is_empty() && !has_terms(&text) {
            return Err(QueryError::NoSearchableWords);
        }
        Ok(Query::Terms { text, required })
    }
}

/// Whether `text` has any terms ([`text::for_each_term`]), told without allocating them
/// (collecting them took a third of parsing a long query: callgrind), and token by token up to
/// the first that has one (words never span whitespace): splitting the whole text here was 6.5%
/// of a search at BFCL's 2,723 tools, the words found again by the search itself. A token of
/// one word ([`terms::one_word`]) is told without splitting it: many requests start with a
/// few stop words (`I would like to`), and splitting each cost 770 instructions (callgrind,
/// the 195 slowest queries at BFCL's 2,723 tools).
fn has_terms(text: &str) -> bool {
    let has_term = |token: &str| {
        let mut any = false;
        text::for_each_term(token, |_| any = true);
        any
    };
    if !text.is_ascii() {
        return text.split_whitespace().any(has_term);
    }
    // The tokens `split_whitespace` gives an ASCII text, and empty ones.
    text.split(|c: char| matches!(c, ' ' | '\t'..='\r'))
        .any(|token| match terms::one_word(token) {
            Some(word) => {
                let mut buf = [0u8; terms::ODD_TOKEN_CHARS];
                !text::is_stop_word(word.lowercase(token, &mut buf))
            }
            None => has_term(token),
        })
}

/// True if the whitespace of `s` (trimmed) is single ASCII spaces, so that its
/// whitespace-separated tokens joined by a space are `s` again.
fn single_spaced(s: &str) -> bool {
    // Each test is a pass the compiler vectorises or a substring search, not a test per pair
    // of bytes.
    s.is_ascii()
        && !s.contains("  ")
        && !s
            .bytes()
            .fold(false, |found, b| found | matches!(b, b'\t'..=b'\r'))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn parse_select(rest: &str) -> Result<Query, QueryError> {
    let mut names: Vec<String> = Vec::new();
    for name in rest.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !is_valid_name(name) {
            return Err(QueryError::InvalidName(name.to_string()));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    if names.is_empty() {
        return Err(QueryError::SelectWithoutNames);
    }
    Ok(Query::Select(names))
}

/// Rule N1: 1-128 bytes of `[A-Za-z0-9_.-]`. The policy crate owns the rule
/// (`toolgate_policy::check_tool_name`, with reasons); this copy keeps the index free of the
/// policy crate's YAML and schema dependencies, and a property test in the engine fails if
/// the two ever disagree.
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_query_is_an_error() {
        assert_eq!(Query::parse(""), Err(QueryError::Empty));
    }

    #[test]
    fn whitespace_only_query_is_an_error() {
        assert_eq!(Query::parse(" \t\n "), Err(QueryError::Empty));
    }

    #[test]
    fn punctuation_only_query_is_an_error() {
        assert_eq!(
            Query::parse("?!... --- ,;"),
            Err(QueryError::NoSearchableWords)
        );
    }

    #[test]
    fn stop_words_only_query_is_an_error() {
        assert_eq!(
            Query::parse("the of and"),
            Err(QueryError::NoSearchableWords)
        );
    }

    #[test]
    fn hundred_kilobyte_query_is_an_error() {
        let q = "weather ".repeat(100 * 1024 / 8);
        assert!(matches!(Query::parse(&q), Err(QueryError::TooLong { .. })));
    }

    #[test]
    fn query_at_the_limit_is_accepted() {
        let q = "a".repeat(MAX_QUERY_BYTES);
        assert!(Query::parse(&q).is_ok());
    }

    #[test]
    fn plus_words_are_required() {
        let q = Query::parse("+weather in +Paris today").unwrap();
        assert_eq!(
            q,
            Query::Terms {
                text: "in today".into(),
                required: vec!["weather".into(), "Paris".into()]
            }
        );
    }

    #[test]
    fn a_lone_plus_is_ordinary_text() {
        let q = Query::parse("a + b weather").unwrap();
        assert_eq!(
            q,
            Query::Terms {
                text: "a + b weather".into(),
                required: vec![]
            }
        );
    }

    #[test]
    fn required_punctuation_is_an_error() {
        assert_eq!(
            Query::parse("weather +!!"),
            Err(QueryError::BadRequiredWord("!!".into()))
        );
    }

    #[test]
    fn select_keeps_order_and_drops_duplicates() {
        let q = Query::parse("select: c ,a,c,b").unwrap();
        assert_eq!(q, Query::Select(vec!["c".into(), "a".into(), "b".into()]));
    }

    #[test]
    fn select_prefix_is_case_insensitive() {
        assert_eq!(
            Query::parse("SELECT:a").unwrap(),
            Query::Select(vec!["a".into()])
        );
    }

    #[test]
    fn select_without_names_is_an_error() {
        assert_eq!(Query::parse("select:"), Err(QueryError::SelectWithoutNames));
        assert_eq!(
            Query::parse("select: , ,"),
            Err(QueryError::SelectWithoutNames)
        );
    }

    #[test]
    fn select_with_invalid_name_is_an_error() {
        assert_eq!(
            Query::parse("select:ok,not ok"),
            Err(QueryError::InvalidName("not ok".into()))
        );
        let long = "x".repeat(129);
        assert_eq!(
            Query::parse(&format!("select:{long}")),
            Err(QueryError::InvalidName(long))
        );
    }

    proptest::proptest! {
        #[test]
        fn free_text_is_the_tokens_joined_by_single_spaces(
            s in "[a-z +\t\n\u{b}\u{c}\r\u{a0}\u{2003}é]{0,24}"
        ) {
            if let Ok(Query::Terms { text, required }) = Query::parse(&s) {
                let free: Vec<&str> = s
                    .split_whitespace()
                    .filter(|t| !(t.starts_with('+') && t.len() > 1))
                    .collect();
                proptest::prop_assert_eq!(text, free.join(" "));
                proptest::prop_assert_eq!(
                    required.len(),
                    s.split_whitespace().filter(|t| t.starts_with('+') && t.len() > 1).count()
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_text_has_terms_if_splitting_it_finds_any(
            free in "((the|of|I|The|TO|to|[a-zA-Z0-9]{1,5}|[.,'@-]{1,2}|é)[ \t]{0,2}){0,8}"
        ) {
            let mut any = false;
            text::for_each_term(&free, |_| any = true);
            proptest::prop_assert_eq!(has_terms(&free), any);
        }
    }

    #[test]
    fn error_messages_tell_the_model_what_to_do() {
        assert!(QueryError::Empty.to_string().contains("select:name"));
        assert!(QueryError::SelectWithoutNames.to_string().contains("e.g."));
    }
}
