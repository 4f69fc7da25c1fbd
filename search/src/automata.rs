//! Automata that walk the term dictionary for a query word's expansions: [`SingleWord`] keeps
//! a walk to single words (not whole names such as `get_weather`), [`WordLevenshtein`] finds
//! the words within a small edit distance.

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

/// Matches the single-word keys within `distance` edits (insertions,
/// deletions, substitutions of characters) of a word, as fst's
/// `Levenshtein` does, but lazily: the state is the current row of the
/// edit-distance table, computed as the fst is walked, so nothing is built
/// up front. (fst's automaton builds its whole DFA first, which took
/// milliseconds for a long word, more than the rest of the query.) Keys
/// are UTF-8: the bytes of a multi-byte character are gathered and the
/// character compared whole. A name separator ends the walk: whole names
/// (`get_weather`) are not typo matches of a word.
#[derive(Clone, Debug)]
pub(crate) struct WordLevenshtein {
    word: [char; LEV_MAX],
    len: usize,
    distance: u8,
}

/// A [`WordLevenshtein`] state: the row, and a partly read character.
#[derive(Clone, Debug)]
pub(crate) struct LevState {
    row: [u8; LEV_MAX],
    /// The bits of the character read so far.
    pending: u32,
    /// Continuation bytes still to come.
    need: u8,
}

impl WordLevenshtein {
    pub(crate) fn new(word: &str, distance: u8) -> Option<WordLevenshtein> {
        let mut w = ['\0'; LEV_MAX];
        let mut len = 0;
        for c in word.chars() {
            // One slot is kept for the row's extra column.
            if len + 1 >= LEV_MAX {
                return None;
            }
            w[len] = c;
            len += 1;
        }
        (len > 0).then_some(WordLevenshtein {
            word: w,
            len,
            distance,
        })
    }

    /// The next row after reading character `c`, or `None` once no key
    /// going on from here can be within the distance.
    fn step(&self, prev: &[u8; LEV_MAX], c: u32) -> Option<[u8; LEV_MAX]> {
        // The first character must be right: slips at the start of a word
        // are rare, and this keeps the walk to one branch of the
        // dictionary instead of all of it.
        if prev[0] == 0 && self.word[0] as u32 != c {
            return None;
        }
        let mut row = [0u8; LEV_MAX];
        row[0] = prev[0].saturating_add(1);
        let mut best = row[0];
        for i in 1..=self.len {
            let cost = u8::from(self.word[i - 1] as u32 != c);
            let v = prev[i - 1]
                .saturating_add(cost)
                .min(prev[i].saturating_add(1))
                .min(row[i - 1].saturating_add(1));
            row[i] = v;
            best = best.min(v);
        }
        (best <= self.distance).then_some(row)
    }
}

impl Automaton for WordLevenshtein {
    /// `None` once no key going on from here can match.
    type State = Option<LevState>;

    fn start(&self) -> Self::State {
        let mut row = [0u8; LEV_MAX];
        for (i, slot) in row.iter_mut().enumerate().take(self.len + 1) {
            *slot = i as u8;
        }
        Some(LevState {
            row,
            pending: 0,
            need: 0,
        })
    }

    fn is_match(&self, state: &Self::State) -> bool {
        state
            .as_ref()
            .is_some_and(|s| s.need == 0 && s.row[self.len] <= self.distance)
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
                    row: s.row,
                    pending,
                    need: s.need - 1,
                });
            }
            let row = self.step(&s.row, pending)?;
            return Some(LevState {
                row,
                pending: 0,
                need: 0,
            });
        }
        let (pending, need) = match byte {
            b'_' | b'.' | b'-' => return None,
            0x00..=0x7F => {
                let row = self.step(&s.row, u32::from(byte))?;
                return Some(LevState {
                    row,
                    pending: 0,
                    need: 0,
                });
            }
            0xC0..=0xDF => (u32::from(byte & 0x1F), 1),
            0xE0..=0xEF => (u32::from(byte & 0x0F), 2),
            // 0xF0 and up; a stray continuation byte cannot start a key
            // character of valid UTF-8, so treat it like a lead byte.
            _ => (u32::from(byte & 0x07), 3),
        };
        Some(LevState {
            row: s.row,
            pending,
            need,
        })
    }
}
