//! The tests of `terms.rs` (apart so that it stays under 800 lines): query terms and their
//! stems, quotes, identifiers, and the one-pass word test against the splitting path.

use super::*;

#[test]
fn a_token_of_several_words_is_also_a_whole_identifier() {
    let stems = |free: &str| -> Vec<String> {
        query_terms(free, &[])
            .0
            .into_iter()
            .map(|t| t.stem.to_string())
            .collect()
    };
    assert_eq!(stems("(getWeather)"), ["get", "weather", "getweather"]);
    assert_eq!(
        stems("sha256 cafébar_x"),
        ["sha", "256", "cafébar", "x", "sha256", "cafébar_x"]
    );
    assert_eq!(stems("Weather, café"), ["weather", "café"]);
}

#[test]
fn only_words_never_outside_quotes_are_quoted() {
    let (terms, _) = query_terms("find the food review 'I love the food here'", &[]);
    let quoted: Vec<&str> = terms
        .iter()
        .filter(|t| t.quoted)
        .map(|t| t.word.as_str())
        .collect();
    assert_eq!(quoted, ["love"]);
}

fn typos_of(free: &str) -> Vec<(String, bool)> {
    query_terms(free, &[])
        .0
        .into_iter()
        .map(|t| (t.word.to_string(), t.typos))
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
        .0
        .into_iter()
        .map(|t| t.stem.to_string())
        .take(expected.len())
        .collect();
    assert_eq!(found, expected);
}

fn seq_stems(free: &str) -> Vec<String> {
    let (terms, words) = query_terms(free, &[]);
    words
        .seq
        .iter()
        .map(|&id| match terms.get(id as usize) {
            Some(t) => t.stem.to_string(),
            None => words.extra[id as usize - MAX_QUERY_TERMS].to_string(),
        })
        .collect()
}

#[test]
fn the_free_texts_words_are_numbered_by_the_query_term_with_their_stem() {
    let (terms, words) = query_terms("files +report; file reports", &["Send".to_string()]);
    let stems: Vec<&str> = terms.iter().map(|t| t.stem.as_str()).collect();
    assert_eq!(stems, ["send", "fil", "report"]);
    assert_eq!(words.seq, [1, 2, 1, 2]);
    assert!(words.extra.is_empty());
}

#[test]
fn stems_past_the_most_terms_are_numbered_after_them_each_once() {
    // Distinct three-letter words: `zaa`, `zab`, ...
    let word = |i: usize| {
        format!(
            "z{}{}",
            (b'a' + (i / 26) as u8) as char,
            (b'a' + (i % 26) as u8) as char
        )
    };
    let free: Vec<String> = (0..MAX_QUERY_TERMS + 2).map(word).collect();
    let free = format!("{} {} {}", free.join(" "), word(MAX_QUERY_TERMS), word(0));
    let (terms, words) = query_terms(&free, &[]);
    assert_eq!(terms.len(), MAX_QUERY_TERMS);
    assert_eq!(
        words.extra,
        [
            word(MAX_QUERY_TERMS).as_str(),
            word(MAX_QUERY_TERMS + 1).as_str()
        ]
    );
    let past = MAX_QUERY_TERMS as u32;
    assert_eq!(words.seq[MAX_QUERY_TERMS..], [past, past + 1, past, 0]);
}

/// The sentences of `free`, as the second stage defines them: they end at `.`, `!`, `?` or
/// `;` followed by a space or the end of the text (the last one at the end of the text).
fn sentences(free: &str) -> Vec<&str> {
    let bytes = free.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..bytes.len() {
        let end = i + 1 == bytes.len();
        let boundary = matches!(bytes[i], b'.' | b'!' | b'?' | b';')
            && bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace());
        if boundary || end {
            out.push(&free[start..=i]);
            start = i + 1;
        }
    }
    out
}

#[test]
fn sentences_end_at_punctuation_before_a_space_or_the_end() {
    let free = "Book a flight. Then v1.2 hotels? Pay;x; ok!";
    assert_eq!(
        sentences(free),
        ["Book a flight.", " Then v1.2 hotels?", " Pay;x;", " ok!"]
    );
    // book flight | v 1 2 hotel | pay x | ok
    assert_eq!(query_terms(free, &[]).1.sentences, [2, 6, 8, 9]);
}

proptest::proptest! {
    #[test]
    fn free_words_split_by_sentence_are_the_sentences_stems(
        free in "([a-zA-Zé0-9]{1,6}[ .;!?,_\u{b}\u{a0}-]{0,2}){0,12}"
    ) {
        let words = query_terms(&free, &[]).1;
        let mut expected = Vec::new();
        let mut ends = Vec::new();
        for sentence in sentences(&free) {
            text::for_each_term(sentence, |w| expected.push(text::stem(w).into_owned()));
            ends.push(expected.len());
        }
        proptest::prop_assert_eq!(seq_stems(&free), expected);
        proptest::prop_assert_eq!(words.sentences, ends);
    }
}

/// A query term as plain values: its word, stem, and whether it is quoted and has typos.
type Plain = (String, String, bool, bool);

/// Everything [`query_terms`] gives, as plain values: the terms, and the free words'
/// numbers, sentence ends and extra stems.
fn split(free: &str, one_words: bool) -> (Vec<Plain>, Vec<u32>, Vec<usize>, Vec<String>) {
    let (terms, words) = query_terms_split(free, &[], one_words);
    (
        terms
            .into_iter()
            .map(|t| (t.word.to_string(), t.stem.to_string(), t.quoted, t.typos))
            .collect(),
        words.seq,
        words.sentences,
        words.extra.iter().map(|s| s.to_string()).collect(),
    )
}

proptest::proptest! {
    #[test]
    fn tokens_of_one_word_give_what_splitting_them_gives(
        free in "([a-zA-Z]{1,9}|[A-Z0-9]{1,3}|[a-z0-9@/_.,;:!?()'\"-]{1,4}| |\t){0,40}"
    ) {
        proptest::prop_assert_eq!(split(&free, true), split(&free, false));
    }
}

#[test]
fn a_token_of_one_word_is_told_with_its_typos() {
    for (token, word) in [
        ("Book", Some(("book", true))),
        ("(flights),", Some(("flights", true))),
        ("USA.", Some(("usa", true))),
        ("2024,", Some(("2024", false))),
        ("@home", Some(("home", false))),
        ("mail/", Some(("mail", false))),
        ("getWeather", None),
        ("IDs", None),
        ("v2", None),
        ("a.b", None),
        ("...", None),
    ] {
        let mut buf = [0; ODD_TOKEN_CHARS];
        let found = one_word(token).map(|w| (w.lowercase(token, &mut buf), w.typos));
        assert_eq!(found, word, "{token}");
    }
    assert!(one_word(&"a".repeat(ODD_TOKEN_CHARS + 1)).is_none());
}

#[test]
fn a_word_outside_the_quotes_in_a_token_they_cut_is_not_quoted() {
    let (terms, _) = query_terms("post 'hello world',world", &[]);
    let quoted: Vec<(&str, bool)> = terms.iter().map(|t| (t.word.as_str(), t.quoted)).collect();
    assert_eq!(quoted, [("post", false), ("hello", true), ("world", false)]);
}

proptest::proptest! {
    #[test]
    fn tokens_are_split_at_whitespace_as_split_whitespace_does(
        free in "[a-z.\\' \t\n\u{b}\u{c}\r\u{a0}\u{2003}é]{0,24}|([a-z]{0,9}[ \t\n\u{b}\u{c}\r\u{1}\u{8}\u{e}\u{1f}!]{0,2}){0,8}"
    ) {
        let mut found = Vec::new();
        for_each_token(&free, |start, token| {
            found.push(token);
            assert_eq!(&free[start..start + token.len()], token);
        });
        let expected: Vec<&str> = free.split_whitespace().collect();
        proptest::prop_assert_eq!(found, expected);
    }

    #[test]
    fn tokens_are_trimmed_to_alphanumeric_as_trim_matches_does(token in "[a-zA-Z0-9.,'_(é\u{b2}]{0,12}") {
        proptest::prop_assert_eq!(
            trim_to_alphanumeric(&token),
            token.trim_matches(|c: char| !c.is_alphanumeric())
        );
    }
}
