//! Automata over the term dictionary's keys: [`SingleWord`] keeps to single words (not whole
//! names such as `get_weather`), and picks them out of the dictionary when an index is opened
//! ([`crate::words`]); [`WordLevenshtein`] tells the words within a small edit distance of a
//! query word, run on the few candidates the word tables find.

use fst::automaton::Automaton;

/// Matches the keys without a name separator (`_`, `.`, `-`): single
/// words, not whole names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SingleWord;

impl SingleWord {
    fn is_separator(byte: u8) -> bool {
        matches!(byte, b'_' | b'.' | b'-')
    }
}

impl Automaton for SingleWord {
    type State = bool;

    fn start(&self) -> bool {
        true
    }

    fn is_match(&self, state: &bool) -> bool {
        *state
    }

    fn can_match(&self, state: &bool) -> bool {
        *state
    }

    fn accept(&self, state: &bool, byte: u8) -> bool {
        *state && !SingleWord::is_separator(byte)
    }
}

/// Longest word [`WordLevenshtein`] handles, in characters.
const LEV_MAX: usize = 40;

/// The largest distance [`WordLevenshtein`] handles.
const MAX_DISTANCE: usize = 2;

/// Matches the single-word keys within `distance` edits (insertions,
/// deletions, substitutions of characters) of a word, as fst's
/// `Levenshtein` does, but lazily: the state is computed as the fst is
/// walked, so nothing is built up front. (fst's automaton builds its whole
/// DFA first, which took milliseconds for a long word, more than the rest
/// of the query.) Keys are UTF-8: the bytes of a multi-byte character are
/// gathered and the character compared whole. A name separator ends the
/// walk: whole names (`get_weather`) are not typo matches of a word.
///
/// The state is the edit-distance automaton of the word run bit-parallel
/// (Wu and Manber's): per number of edits `k` up to the distance, a word of
/// bits where bit `i` says the key read so far is within `k` edits of the
/// word's first `i` characters. A key character moves every bit at once by
/// a few shifts, ands and ors with the character's bits in the word (a
/// table for ASCII). Before, the state was the band of the edit-distance
/// row within the distance of its diagonal, computed cell by cell: 151
/// instructions a key byte (`accept` with its step, 2,000 random queries
/// over 100,000 tools), now 61 (callgrind); the lookups of the 400 slowest
/// queries went from 0.49 to 0.38 M instructions a query.
#[derive(Clone, Debug)]
pub(crate) struct WordLevenshtein {
    word: [char; LEV_MAX],
    len: usize,
    distance: u8,
    /// Per ASCII character, bit `i` set where the word's character `i` is it.
    ascii: [u64; 128],
}

/// A [`WordLevenshtein`] state: the automaton's bits after `read`
/// characters, and a partly read character.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LevState {
    /// Entry `k` (up to the distance): bit `i` set if the characters read
    /// are within `k` edits of the word's first `i` characters.
    within: [u64; MAX_DISTANCE + 1],
    /// Characters read.
    read: u8,
    /// Continuation bytes still to come.
    need: u8,
    /// The bits of the character read so far.
    pending: u32,
}

impl WordLevenshtein {
    /// `None` for an empty word, a word of [`LEV_MAX`] characters or more, or a distance
    /// past [`MAX_DISTANCE`].
    pub(crate) fn new(word: &str, distance: u8) -> Option<WordLevenshtein> {
        if usize::from(distance) > MAX_DISTANCE {
            return None;
        }
        let mut w = ['\0'; LEV_MAX];
        let mut ascii = [0u64; 128];
        let mut len = 0;
        for c in word.chars() {
            // One slot is kept for the row's extra column.
            if len + 1 >= LEV_MAX {
                return None;
            }
            w[len] = c;
            if let Some(bits) = ascii.get_mut(c as usize) {
                *bits |= 1 << len;
            }
            len += 1;
        }
        (len > 0).then_some(WordLevenshtein {
            word: w,
            len,
            distance,
            ascii,
        })
    }

    /// Bit `i` set where the word's character `i` is `c`.
    #[inline]
    fn bits_of(&self, c: u32) -> u64 {
        match self.ascii.get(c as usize) {
            Some(&bits) => bits,
            None => self.word[..self.len]
                .iter()
                .enumerate()
                .filter(|&(_, &w)| w as u32 == c)
                .fold(0, |bits, (i, _)| bits | 1 << i),
        }
    }

    /// The bits of the prefixes of the word: `0..=len`.
    fn prefixes(&self) -> u64 {
        (1u64 << (self.len + 1)) - 1
    }

    /// The next state after reading character `c` in state `s`, or `None`
    /// once no key going on from here can be within the distance.
    ///
    /// Written for each distance as a constant, so that the loop over edit counts is unrolled.
    fn step(&self, s: &LevState, c: u32) -> Option<LevState> {
        match self.distance {
            0 => self.step_within::<0>(s, c),
            1 => self.step_within::<1>(s, c),
            _ => self.step_within::<2>(s, c),
        }
    }

    /// [`WordLevenshtein::step`] for the distance `D` (this automaton's, at most
    /// [`MAX_DISTANCE`]).
    #[inline(always)]
    fn step_within<const D: usize>(&self, s: &LevState, c: u32) -> Option<LevState> {
        // The first character must be right: slips at the start of a word
        // are rare, and this keeps the walk to one branch of the
        // dictionary instead of all of it.
        if s.read == 0 && self.word[0] as u32 != c {
            return None;
        }
        let read = s.read.checked_add(1)?;
        let matches = self.bits_of(c);
        let keep = self.prefixes();
        let mut within = [0u64; MAX_DISTANCE + 1];
        // No edit: a character of the word read.
        within[0] = ((s.within[0] & matches) << 1) & keep;
        for k in 1..=D {
            // A match within k edits; or, at one more edit than k - 1 allowed: the key's
            // character inserted (the word's position stays), substituted (both move), or a
            // word character deleted after this one (from the new state of k - 1 edits).
            within[k] = (((s.within[k] & matches) << 1)
                | s.within[k - 1]
                | (s.within[k - 1] << 1)
                | (within[k - 1] << 1))
                & keep;
        }
        (within[D] != 0).then_some(LevState {
            within,
            read,
            need: 0,
            pending: 0,
        })
    }
}

impl WordLevenshtein {
    /// True if this automaton accepts the whole `key`: as running [`Automaton::accept`] over
    /// its bytes from [`Automaton::start`] and asking [`Automaton::is_match`] at the end, but
    /// for a key of ASCII bytes with the state's words in registers, without the state's
    /// character decoding and copies: the typo lookups run it on each candidate word, and
    /// byte by byte through `accept` it took 71 instructions a byte (callgrind, the 195
    /// slowest queries at BFCL's 2,723 tools).
    pub(crate) fn accepts(&self, key: &[u8]) -> bool {
        if !key.is_ascii() || key.len() > usize::from(u8::MAX) {
            let mut state = self.start();
            for &b in key {
                state = self.accept(&state, b);
                if state.is_none() {
                    return false;
                }
            }
            return self.is_match(&state);
        }
        match self.distance {
            0 => self.accepts_ascii::<0>(key),
            1 => self.accepts_ascii::<1>(key),
            _ => self.accepts_ascii::<2>(key),
        }
    }

    /// [`WordLevenshtein::accepts`] for an ASCII `key` of at most 255 bytes and the distance
    /// `D` (this automaton's): [`WordLevenshtein::step_within`] byte by byte.
    #[inline(always)]
    fn accepts_ascii<const D: usize>(&self, key: &[u8]) -> bool {
        let Some(start) = self.start() else {
            return false;
        };
        let (Some(&first), keep) = (key.first(), self.prefixes()) else {
            return self.is_match(&Some(start));
        };
        if self.word[0] as u32 != u32::from(first) {
            return false;
        }
        let mut within = start.within;
        for &b in key {
            if matches!(b, b'_' | b'.' | b'-') {
                return false;
            }
            let matches = self.ascii[usize::from(b) & 0x7F];
            let mut next = [0u64; MAX_DISTANCE + 1];
            next[0] = ((within[0] & matches) << 1) & keep;
            for k in 1..=D {
                next[k] = (((within[k] & matches) << 1)
                    | within[k - 1]
                    | (within[k - 1] << 1)
                    | (next[k - 1] << 1))
                    & keep;
            }
            if next[D] == 0 {
                return false;
            }
            within = next;
        }
        within[D] >> self.len & 1 != 0
    }
}

impl Automaton for WordLevenshtein {
    /// `None` once no key going on from here can match.
    type State = Option<LevState>;

    fn start(&self) -> Self::State {
        // Before any key character, the word's first `i` characters are `i` deletions away.
        let mut within = [0u64; MAX_DISTANCE + 1];
        for (k, bits) in within.iter_mut().enumerate() {
            *bits = ((1u64 << (k.min(self.len) + 1)) - 1) & self.prefixes();
        }
        Some(LevState {
            within,
            read: 0,
            need: 0,
            pending: 0,
        })
    }

    fn is_match(&self, state: &Self::State) -> bool {
        state.as_ref().is_some_and(|s| {
            s.need == 0 && s.within[usize::from(self.distance)] >> self.len & 1 != 0
        })
    }

    fn can_match(&self, state: &Self::State) -> bool {
        state.is_some()
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        let s = state.as_ref()?;
        if s.need > 0 {
            // A continuation byte of the character being read.
            let pending = (s.pending << 6) | u32::from(byte & 0x3F);
            if s.need > 1 {
                return Some(LevState {
                    pending,
                    need: s.need - 1,
                    ..*s
                });
            }
            return self.step(s, pending);
        }
        let (pending, need) = match byte {
            b'_' | b'.' | b'-' => return None,
            0x00..=0x7F => return self.step(s, u32::from(byte)),
            0xC0..=0xDF => (u32::from(byte & 0x1F), 1),
            0xE0..=0xEF => (u32::from(byte & 0x0F), 2),
            // 0xF0 and up; a stray continuation byte cannot start a key
            // character of valid UTF-8, so treat it like a lead byte.
            _ => (u32::from(byte & 0x07), 3),
        };
        Some(LevState {
            pending,
            need,
            ..*s
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fst::{IntoStreamer, Set, Streamer};

    /// The edit distance between `a` and `b`, in characters, by the full table.
    fn distance(a: &[char], b: &[char]) -> usize {
        let mut row: Vec<usize> = (0..=a.len()).collect();
        for (j, cb) in b.iter().enumerate() {
            let mut next = vec![j + 1; a.len() + 1];
            for i in 1..=a.len() {
                let cost = usize::from(a[i - 1] != *cb);
                next[i] = (row[i - 1] + cost).min(row[i] + 1).min(next[i - 1] + 1);
            }
            row = next;
        }
        row[a.len()]
    }

    /// What [`WordLevenshtein`] is to match: a key without a name separator, starting with
    /// the word's first character (or empty), within `d` edits.
    fn within(word: &str, key: &str, d: u8) -> bool {
        let (w, k): (Vec<char>, Vec<char>) = (word.chars().collect(), key.chars().collect());
        !key.contains(['_', '.', '-'])
            && (k.is_empty() || k[0] == w[0])
            && distance(&w, &k) <= usize::from(d)
    }

    fn accepts(lev: &WordLevenshtein, key: &str) -> bool {
        let mut state = lev.start();
        for &b in key.as_bytes() {
            state = lev.accept(&state, b);
            if !lev.can_match(&state) {
                return false;
            }
        }
        lev.is_match(&state)
    }

    #[test]
    fn a_typo_inside_the_word_matches_and_one_in_its_first_letter_does_not() {
        let lev = WordLevenshtein::new("weather", 1);
        let lev = lev.as_ref();
        assert!(lev.is_some_and(|l| accepts(l, "wether")));
        assert!(lev.is_some_and(|l| accepts(l, "weathers")));
        assert!(lev.is_some_and(|l| !accepts(l, "feather")));
        assert!(lev.is_some_and(|l| !accepts(l, "wheter")));
    }

    proptest::proptest! {
        #[test]
        fn matches_exactly_the_keys_within_the_distance(
            word in "[abcé]{1,9}",
            key in "[abcé_]{0,11}",
            d in 1u8..=2,
        ) {
            let lev = WordLevenshtein::new(&word, d);
            proptest::prop_assert!(lev.is_some());
            if let Some(lev) = lev {
                proptest::prop_assert_eq!(accepts(&lev, &key), within(&word, &key, d));
            }
        }

        #[test]
        fn a_whole_key_is_accepted_as_byte_by_byte_and_within_the_distance(
            word in "[abcé]{1,9}",
            key in "[abcé_.]{0,11}",
            d in 0u8..=2,
        ) {
            let lev = WordLevenshtein::new(&word, d);
            proptest::prop_assert!(lev.is_some());
            if let Some(lev) = lev {
                proptest::prop_assert_eq!(lev.accepts(key.as_bytes()), accepts(&lev, &key));
                proptest::prop_assert_eq!(lev.accepts(key.as_bytes()), within(&word, &key, d));
            }
        }

        #[test]
        fn a_dictionary_walk_finds_exactly_the_keys_within_the_distance(
            word in "[abé]{1,7}",
            keys in proptest::collection::btree_set("[abé.]{0,8}", 0..60),
            d in 1u8..=2,
        ) {
            let set = Set::from_iter(keys.iter());
            proptest::prop_assert!(set.is_ok());
            let lev = WordLevenshtein::new(&word, d);
            proptest::prop_assert!(lev.is_some());
            if let (Ok(set), Some(lev)) = (set, lev) {
                let mut found = Vec::new();
                let mut stream = set.search(lev).into_stream();
                while let Some(key) = stream.next() {
                    found.push(String::from_utf8_lossy(key).into_owned());
                }
                let expected: Vec<String> =
                    keys.iter().filter(|k| within(&word, k, d)).cloned().collect();
                proptest::prop_assert_eq!(found, expected);
            }
        }
    }
}
