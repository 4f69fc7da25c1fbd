//! Quoted text in a query: usually an argument value (a name, a title, a message to send), not
//! words that describe the tool (see [`crate::Ranking::quote_weight`]).

use std::ops::Range;

/// The byte ranges of `free` inside quotes (`'...'`, `"..."`, and the
/// typographic pairs): an opening quote starts the text or follows a space
/// or an opening bracket, colon or comma; its closing quote is followed by
/// the end, a space or punctuation, so the apostrophes of `it's` or
/// `Adriel's` neither open nor close. A pair around the whole text is not
/// counted (a request pasted with its quotes), nor is a quoted identifier
/// (`'get_weather'`, `'math.sqrt'`): that names a tool.
///
/// The text is scanned for the bytes a quote can start with, not character by character:
/// decoding every character took an eighth of `query_terms` on the 200 slowest queries at
/// 100,000 tools (callgrind). The character before a quote, which says whether it opens, is
/// decoded backwards from it.
pub(crate) fn quoted_spans(free: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let trimmed = free.trim();
    let lead = free.len() - free.trim_start().len();
    let mut unclosed: Vec<char> = Vec::new();
    let bytes = free.as_bytes();
    // Where to look for the next quote from.
    let mut from = 0;
    while let Some(i) = bytes
        .get(from..)
        .and_then(next_quote_byte)
        .map(|at| from + at)
    {
        let Some(c) = free.get(i..).and_then(|rest| rest.chars().next()) else {
            break;
        };
        from = i + c.len_utf8();
        let close = match c {
            '\'' => '\'',
            '"' => '"',
            '\u{2018}' => '\u{2019}',
            '\u{201C}' => '\u{201D}',
            _ => continue,
        };
        let prev = free.get(..i).and_then(|before| before.chars().next_back());
        let opens =
            prev.is_none_or(|p| p.is_whitespace() || matches!(p, '(' | '[' | '{' | ':' | ','));
        if !opens {
            continue;
        }
        if unclosed.contains(&close) {
            continue;
        }
        let start = from;
        let rest = &free[start..];
        let end = rest
            .match_indices(close)
            .find(|&(j, _)| {
                rest[j + close.len_utf8()..]
                    .chars()
                    .next()
                    .is_none_or(|n| !n.is_alphanumeric())
            })
            .map(|(j, _)| start + j);
        let Some(end) = end else {
            // No later quote of this kind can close either: do not scan
            // the rest again for each of them.
            unclosed.push(close);
            continue;
        };
        let inner = &free[start..end];
        let whole = i == lead && end + close.len_utf8() == lead + trimmed.len();
        let identifier = inner.contains(['_', '.'])
            && inner.chars().any(char::is_alphabetic)
            && inner
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !whole && !identifier && !inner.trim().is_empty() {
            out.push(start..end);
        }
        if !whole {
            // Go on after the closing quote.
            from = end + close.len_utf8();
        }
    }
    out
}

/// Whether `b` may start a quote: `'`, `"`, or the first byte of a typographic quote (0xE2).
fn quote_byte(b: u8) -> bool {
    matches!(b, b'\'' | b'"' | 0xE2)
}

/// Where the first byte of `hay` is that may start a quote ([`quote_byte`]), found eight
/// bytes at a time in a `u64`: testing the bytes of a long request one by one was four fifths
/// of finding its quotes (callgrind, the 195 slowest queries at BFCL's 2,723 tools).
fn next_quote_byte(hay: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `v` that is `b`, and perhaps of bytes after such a byte
    // (a borrow carries on from a zero byte), so the lowest bit set is the first byte that is.
    let bytes_of = |v: u64, b: u8| {
        let x = v ^ (ONES * u64::from(b));
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    let (words, rest) = hay.as_chunks::<8>();
    for (k, word) in words.iter().enumerate() {
        let v = u64::from_le_bytes(*word);
        let found = bytes_of(v, b'\'') | bytes_of(v, b'"') | bytes_of(v, 0xE2);
        if found != 0 {
            return Some(k * 8 + found.trailing_zeros() as usize / 8);
        }
    }
    rest.iter()
        .position(|&b| quote_byte(b))
        .map(|i| words.len() * 8 + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Just;

    fn quoted(free: &str) -> Vec<&str> {
        quoted_spans(free).into_iter().map(|r| &free[r]).collect()
    }

    proptest::proptest! {
        #[test]
        fn the_next_quote_byte_is_the_first_one(hay in proptest::collection::vec(
            proptest::prop_oneof![
                20 => proptest::num::u8::ANY,
                1 => Just(b'\''),
                1 => Just(b'"'),
                1 => Just(0xE2u8),
                1 => Just(0xE3u8),
                1 => Just(0u8),
            ],
            0..100,
        )) {
            proptest::prop_assert_eq!(next_quote_byte(&hay), hay.iter().position(|&b| quote_byte(b)));
        }
    }

    #[test]
    fn quotes_around_values_are_found() {
        assert_eq!(quoted("the gene 'BRCA1' of a human"), ["BRCA1"]);
        assert_eq!(
            quoted("play \"Hotel California\" now"),
            ["Hotel California"]
        );
        assert_eq!(quoted("topic: 'charts', in Spanish"), ["charts"]);
    }

    #[test]
    fn apostrophes_are_not_quotes() {
        assert!(quoted("it's Adriel's project, isn't it").is_empty());
        assert_eq!(
            quoted("a review 'I love it! It's fresh.' please"),
            ["I love it! It's fresh."]
        );
    }

    #[test]
    fn identifiers_and_whole_requests_are_not_payload() {
        assert!(quoted("use the 'solve_quadratic' function").is_empty());
        assert!(quoted("call 'math.sqrt' on it").is_empty());
        assert!(quoted("\"Find the roots of x^2 = 4.\"").is_empty());
        assert_eq!(quoted("\"Say 'hi' to Bob.\""), ["hi"]);
        assert_eq!(quoted("version '1.0.0' please"), ["1.0.0"]);
    }

    #[test]
    fn unclosed_quotes_are_not_spans() {
        assert!(quoted(&" 'a".repeat(1000)).is_empty());
        assert_eq!(quoted("it 'rains today"), Vec::<&str>::new());
        assert_eq!(quoted("'a 'b 'c' d"), ["a 'b 'c"]);
    }

    /// The definition, character by character, as `quoted_spans` was written before it
    /// scanned for quote bytes.
    fn quoted_spans_char_by_char(free: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let trimmed = free.trim();
        let lead = free.len() - free.trim_start().len();
        let mut prev: Option<char> = None;
        let mut unclosed: Vec<char> = Vec::new();
        let mut iter = free.char_indices().peekable();
        while let Some((i, c)) = iter.next() {
            let close = match c {
                '\'' => '\'',
                '"' => '"',
                '\u{2018}' => '\u{2019}',
                '\u{201C}' => '\u{201D}',
                _ => {
                    prev = Some(c);
                    continue;
                }
            };
            let opens =
                prev.is_none_or(|p| p.is_whitespace() || matches!(p, '(' | '[' | '{' | ':' | ','));
            prev = Some(c);
            if !opens {
                continue;
            }
            if unclosed.contains(&close) {
                continue;
            }
            let start = i + c.len_utf8();
            let rest = &free[start..];
            let mut end = None;
            for (j, d) in rest.char_indices() {
                if d == close {
                    let next = rest[j + d.len_utf8()..].chars().next();
                    if next.is_none_or(|n| !n.is_alphanumeric()) {
                        end = Some(start + j);
                        break;
                    }
                }
            }
            let Some(end) = end else {
                // No later quote of this kind can close either: do not scan
                // the rest again for each of them.
                unclosed.push(close);
                continue;
            };
            let inner = &free[start..end];
            let whole = i == lead && end + close.len_utf8() == lead + trimmed.len();
            let identifier = inner.contains(['_', '.'])
                && inner.chars().any(char::is_alphabetic)
                && inner
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !whole && !identifier && !inner.trim().is_empty() {
                out.push(start..end);
            }
            if !whole {
                // Skip to the closing quote.
                while iter.peek().is_some_and(|&(k, _)| k <= end) {
                    iter.next();
                }
                prev = Some(close);
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn spans_found_by_scanning_for_quotes_are_those_found_char_by_char(
            free in "[a ,:(.'\"_\u{2018}\u{2019}\u{201C}\u{201D}\u{2014}é\u{a0}]{0,16}"
        ) {
            proptest::prop_assert_eq!(quoted_spans(&free), quoted_spans_char_by_char(&free));
        }
    }
}
