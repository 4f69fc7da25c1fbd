//! The terms a free-text query is searched with, and the free text's words in order for the
//! second stage ([`FreeWords`]), from one pass over the text.

use std::borrow::Cow;
use std::fmt;
use std::hash::Hasher;
use std::ops::{Deref, Range};

use crate::hash::FxHasher;
use crate::quotes::quoted_spans;
use crate::text;

/// A normalised query term.
#[derive(Clone, Debug)]
pub(crate) struct QueryTerm {
    /// The lowercased word.
    pub(crate) word: TermStr,
    /// Its stem, the dictionary key.
    pub(crate) stem: TermStr,
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

/// The free text's terms in text order, as numbers, and where its sentences end: what the
/// second stage ([`crate::rerank`]) reads phrases and sentences from. [`query_terms`] splits the
/// text once for both: splitting it again in the second stage cost a fifth of the re-ranking
/// of long queries (callgrind, the 200 slowest queries at 100,000 tools).
#[derive(Debug, Default)]
pub(crate) struct FreeWords {
    /// Per term of the free text, in order: the index of the query term with its stem, or,
    /// for a stem no query term has (those past [`MAX_QUERY_TERMS`]), `MAX_QUERY_TERMS` plus
    /// its index in `extra`.
    pub(crate) seq: Vec<u32>,
    /// Per sentence (see [`sentence_ends_after`]), how many of `seq` there are up to its end.
    pub(crate) sentences: Vec<usize>,
    /// The stems of the free text no query term has, in order of first occurrence.
    pub(crate) extra: Vec<TermStr>,
}

/// A word or stem of a query: a string of at most [`TermStr::INLINE`] bytes held in place,
/// a longer one on the heap. Nearly every word is that short, so a query's terms take no
/// allocation each: a `String` for each word and stem, and two for each stem past the
/// [`MAX_QUERY_TERMS`], were most of the 103 allocations of a slow query at BFCL's 2,723 tools
/// and a fifth of `query_terms` (callgrind, the 195 slowest queries).
#[derive(Clone)]
pub(crate) struct TermStr(Repr);

#[derive(Clone)]
enum Repr {
    /// `len` bytes of `bytes`, copied from a `str`.
    Inline {
        len: u8,
        bytes: [u8; TermStr::INLINE],
    },
    Heap(Box<str>),
}

impl TermStr {
    /// The longest string held in place, in bytes: with the length and the variant's tag, a
    /// `TermStr` is as large as a `String`.
    pub(crate) const INLINE: usize = 22;

    /// `s`, copied.
    pub(crate) fn new(s: &str) -> TermStr {
        let len = s.len();
        if len <= TermStr::INLINE {
            let mut bytes = [0u8; TermStr::INLINE];
            bytes[..len].copy_from_slice(s.as_bytes());
            TermStr(Repr::Inline {
                len: len as u8,
                bytes,
            })
        } else {
            TermStr(Repr::Heap(s.into()))
        }
    }

    /// The string.
    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                let bytes = &bytes[..usize::from(*len).min(TermStr::INLINE)];
                // SAFETY: the first `len` bytes were copied from a `str` in `TermStr::new`
                // (nothing else writes them), so they are UTF-8.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            Repr::Heap(s) => s,
        }
    }
}

impl Deref for TermStr {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for TermStr {
    fn from(s: &str) -> TermStr {
        TermStr::new(s)
    }
}

impl From<String> for TermStr {
    fn from(s: String) -> TermStr {
        TermStr::new(&s)
    }
}

impl PartialEq for TermStr {
    fn eq(&self, other: &TermStr) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TermStr {}

impl PartialEq<str> for TermStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TermStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<TermStr> for &str {
    fn eq(&self, other: &TermStr) -> bool {
        *self == other.as_str()
    }
}

impl fmt::Debug for TermStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for TermStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

/// Required terms first (all their parts, stop words kept), then the free
/// text's terms and any whole identifiers in it (`get_weather`), each stem
/// once; and the free text's terms as [`FreeWords`].
pub(crate) fn query_terms(free: &str, required: &[String]) -> (Vec<QueryTerm>, FreeWords) {
    query_terms_split(free, required, true)
}

/// [`query_terms`], taking the tokens of an ASCII text that are [`one_word`] as such if
/// `one_words` (the tests check that this changes nothing).
fn query_terms_split(
    free: &str,
    required: &[String],
    one_words: bool,
) -> (Vec<QueryTerm>, FreeWords) {
    // Room for the terms and words a text of this length can have, at most what a query may
    // have (growing these vectors a push at a time was a tenth of the allocator's share of a
    // search at BFCL's 2,723 tools: callgrind).
    let guess = (free.len() / 4 + required.len() + 1).min(MAX_QUERY_TERMS);
    let mut q = Terms {
        out: Vec::with_capacity(guess),
        stems: StemIndex::default(),
    };
    for r in required {
        text::for_each_word(r, |w| {
            q.push(w, true, false);
        });
    }
    let spans = quoted_spans(free);
    let mut quotes = Quotes::new(free, &spans);
    // Token by token (words never span whitespace): the same terms as the whole text's.
    // Tokens that may be whole identifiers are pushed after all the words.
    let mut identifiers: Vec<&str> = Vec::new();
    let mut words = FreeWords {
        seq: Vec::with_capacity(free.len() / 4 + 1),
        sentences: Vec::with_capacity(free.len() / 64 + 1),
        ..FreeWords::default()
    };
    // `words.extra`'s stems by their index there.
    let mut extra_ids = ExtraIndex::default();
    let bytes = free.as_bytes();
    let one_words = one_words && free.is_ascii();
    for_each_token(free, |start, token| {
        let end = start + token.len();
        let outside = quotes.outside(start..end);
        let mut term = |w: &str, stem: Cow<'_, str>, typos: bool| {
            let id = match q.add_stemmed(w, stem, false, typos) {
                Ok(id) => id,
                Err(stem) => extra_ids.id(&stem, &mut words.extra),
            };
            words.seq.push(id);
            if outside {
                quotes.stem_outside(id);
            }
        };
        if let Some(word) = one_words.then(|| one_word(token)).flatten() {
            let mut buf = [0u8; ODD_TOKEN_CHARS];
            let w = word.lowercase(token, &mut buf);
            if !text::is_stop_word(w) {
                // A word of letters is stemmed as such; digits are their own stem.
                let stem = if word.letters {
                    text::stem_ascii(w)
                } else {
                    Cow::Borrowed(w)
                };
                term(w, stem, word.typos);
            }
        } else {
            let typos = !odd_token(token);
            // Its words, counted as they are split: a token of several may be a whole
            // identifier (splitting it again to count them took a twentieth of `query_terms`
            // on the 195 slowest queries at BFCL's 2,723 tools).
            let mut count = 0;
            text::for_each_word(token, |w| {
                count += 1;
                if !text::is_stop_word(w) {
                    term(w, text::stem(w), typos);
                }
            });
            if count > 1 {
                // Trimming changes no word: words are runs of alphanumeric characters.
                identifiers.push(trim_to_alphanumeric(token));
            }
        }
        if sentence_ends_after(token, bytes.get(end).copied()) {
            words.sentences.push(words.seq.len());
        }
    });
    // The last sentence, unless the text ends with one.
    if !sentence_ends_after(free, None) && !free.is_empty() {
        words.sentences.push(words.seq.len());
    }
    // Each identifier lowercased in turn, in one string (a string each was a fifth of the
    // allocations left in `query_terms`).
    let mut whole = String::new();
    for token in identifiers {
        if token.is_ascii() {
            // An ASCII character is alphanumeric as an ASCII one.
            if !token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            {
                continue;
            }
            whole.clear();
            whole.push_str(token);
            whole.make_ascii_lowercase();
        } else {
            whole = token.to_lowercase();
            if !whole
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                continue;
            }
        }
        q.push(&whole, false, false);
    }
    if !spans.is_empty() {
        quotes.mark(&mut q);
    }
    (q.out, words)
}

/// What [`query_terms`] needs to tell which terms are quoted: the terms are marked quoted
/// whose stem is never found outside the quotes of the free text (see [`quoted_spans`]),
/// unless the term is a whole identifier written outside them. The text outside quotes is the
/// text with the quotes blanked; rather than splitting it all again, the terms of the tokens
/// outside every quote are taken as they are found, and only the tokens a quote cuts are split
/// again (splitting the whole blanked text again took a sixth of `query_terms` on the 200
/// slowest queries, half of which have quotes).
struct Quotes<'a> {
    free: &'a str,
    /// The quoted byte ranges of `free`, in order.
    spans: &'a [Range<usize>],
    /// How many of `spans` end before the token last asked about.
    passed: usize,
    /// The query terms (as bits) with a word outside quotes.
    outside: u64,
    /// The parts outside every quote of the tokens a quote cuts (byte ranges of `free`).
    pieces: Vec<Range<usize>>,
}

impl<'a> Quotes<'a> {
    fn new(free: &'a str, spans: &'a [Range<usize>]) -> Quotes<'a> {
        Quotes {
            free,
            spans,
            passed: 0,
            outside: 0,
            pieces: Vec::new(),
        }
    }

    /// True if the token at `range` of the free text (tokens asked about in text order) lies
    /// outside every quote; of a token a quote cuts, the parts outside quotes are kept for
    /// [`Quotes::mark`] (as the token blanked, split again, would give them: words never span
    /// the blanks).
    fn outside(&mut self, range: Range<usize>) -> bool {
        while self
            .spans
            .get(self.passed)
            .is_some_and(|sp| sp.end <= range.start)
        {
            self.passed += 1;
        }
        let (mut at, mut cut) = (range.start, false);
        for sp in self.spans[self.passed..]
            .iter()
            .take_while(|sp| sp.start < range.end)
        {
            cut = true;
            if sp.start > at {
                self.pieces.push(at..sp.start);
            }
            at = at.max(sp.end);
        }
        if cut && at < range.end {
            self.pieces.push(at..range.end);
        }
        !cut
    }

    /// Notes that the word numbered `id` (see [`FreeWords::seq`]) is outside quotes.
    fn stem_outside(&mut self, id: u32) {
        if (id as usize) < MAX_QUERY_TERMS {
            self.outside |= 1u64 << id;
        }
    }

    /// Marks the quoted terms of `q`.
    fn mark(mut self, q: &mut Terms) {
        let out = &q.out;
        let mut outside = self.outside;
        for piece in &self.pieces {
            text::for_each_term(&self.free[piece.clone()], |w| {
                let stem = text::stem(w);
                if let Ok(id) = q.stems.find(&stem, |id| out[id as usize].stem.as_str()) {
                    outside |= 1u64 << id;
                }
            });
        }
        self.outside = outside;
        // The text outside quotes, lowercased, if a term may be a whole identifier.
        let mut lower: Option<String> = None;
        for (i, t) in q.out.iter_mut().enumerate() {
            t.quoted = !t.required
                && self.outside & (1u64 << i) == 0
                && !(t.word.contains(['_', '.', '-'])
                    && lower
                        .get_or_insert_with(|| blank(self.free, self.spans).to_lowercase())
                        .contains(t.word.as_str()));
        }
    }
}

/// `free` with the byte ranges `spans` blanked (made spaces).
fn blank(free: &str, spans: &[Range<usize>]) -> String {
    let mut text = free.to_string();
    for sp in spans {
        text.replace_range(sp.clone(), &" ".repeat(sp.len()));
    }
    text
}

/// Calls `f` with each of the whitespace-separated tokens of `free` ([`str::split_whitespace`]),
/// and where it starts. An ASCII text is split byte by byte (its whitespace is the ASCII
/// whitespace and vertical tab), without decoding characters: splitting the text twice with
/// `split_whitespace` took a tenth of `query_terms` on the 200 slowest queries (callgrind).
fn for_each_token<'a>(free: &'a str, mut f: impl FnMut(usize, &'a str)) {
    if free.is_ascii() {
        let bytes = free.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            let len = ascii_whitespace(&bytes[start..]).unwrap_or(bytes.len() - start);
            if len > 0
                && let Some(token) = free.get(start..start + len)
            {
                f(start, token);
            }
            start += len + 1;
        }
    } else {
        for token in free.split_whitespace() {
            f(token.as_ptr() as usize - free.as_ptr() as usize, token);
        }
    }
}

/// Where the first ASCII whitespace byte (a space, or `\t` to `\r`) of the ASCII `bytes` is,
/// found eight bytes at a time in a `u64` where there are eight: a test of each byte was 3
/// instructions a byte of every query (callgrind, the 195 slowest queries at BFCL's 2,723
/// tools).
fn ascii_whitespace(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let is_space = |b: u8| matches!(b, b' ' | b'\t'..=b'\r');
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let v = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // The high bit of each byte below 0x21 (every whitespace byte is), and perhaps of
        // bytes after such a byte (a borrow carries on), so the lowest is the first below:
        // exact for bytes under 0x80, as ASCII's are.
        let below = v.wrapping_sub(ONES * 0x21) & !v & HIGHS;
        if below != 0 {
            let first = at + below.trailing_zeros() as usize / 8;
            if is_space(bytes[first]) {
                return Some(first);
            }
            // A control character that is no whitespace: go on after it.
            at = first + 1;
            continue;
        }
        at += 8;
    }
    bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|&b| is_space(b)))
        .map(|i| at + i)
}

/// `token` without the characters that are not alphanumeric at either end.
fn trim_to_alphanumeric(token: &str) -> &str {
    if token.is_ascii() {
        let bytes = token.as_bytes();
        let start = bytes
            .iter()
            .position(u8::is_ascii_alphanumeric)
            .unwrap_or(bytes.len());
        let end = bytes
            .iter()
            .rposition(u8::is_ascii_alphanumeric)
            .map_or(start, |e| e + 1);
        token.get(start..end).unwrap_or_default()
    } else {
        token.trim_matches(|c: char| !c.is_alphanumeric())
    }
}

/// True if a sentence ends after `token` (a whitespace-separated token of the free text)
/// followed by the byte `next` (`None` at the end of the text): sentences end at `.`, `!`, `?`
/// or `;` followed by a space or the end of the text.
fn sentence_ends_after(token: &str, next: Option<u8>) -> bool {
    token
        .as_bytes()
        .last()
        .is_some_and(|b| matches!(b, b'.' | b'!' | b'?' | b';'))
        && next.is_none_or(|c| c.is_ascii_whitespace())
}

/// The query terms being collected, with an index from stem to term number.
#[derive(Default)]
struct Terms {
    out: Vec<QueryTerm>,
    stems: StemIndex,
}

impl Terms {
    /// Adds `word` as a term unless a term has its stem (then only widens its `typos`) or there
    /// are [`MAX_QUERY_TERMS`] already. Returns the number of the term with its stem, if any.
    fn push(&mut self, word: &str, required: bool, typos: bool) -> Option<u32> {
        self.add(word, required, typos).ok()
    }

    /// [`Terms::push`], giving back the stem of `word` when no term has it and there is no
    /// room for another.
    fn add<'w>(&mut self, word: &'w str, required: bool, typos: bool) -> Result<u32, Cow<'w, str>> {
        self.add_stemmed(word, text::stem(word), required, typos)
    }

    /// [`Terms::add`] for `word` with its `stem` ([`text::stem`]) known.
    fn add_stemmed<'s>(
        &mut self,
        word: &str,
        stem: Cow<'s, str>,
        required: bool,
        typos: bool,
    ) -> Result<u32, Cow<'s, str>> {
        let out = &self.out;
        let found = self.stems.find(&stem, |id| out[id as usize].stem.as_str());
        match found {
            Ok(id) => {
                self.out[id as usize].typos |= typos;
                Ok(id)
            }
            Err(_) if self.out.len() >= MAX_QUERY_TERMS => Err(stem),
            Err(slot) => {
                let id = self.out.len() as u32;
                self.stems.insert(slot, id);
                self.out.push(QueryTerm {
                    stem: TermStr::new(&stem),
                    word: TermStr::new(word),
                    required,
                    quoted: false,
                    typos,
                });
                Ok(id)
            }
        }
    }
}

/// The stems past the [`MAX_QUERY_TERMS`] ([`FreeWords::extra`]) by their index there: an
/// open-addressed table of indices (linear probing, at most half full, doubled when it would
/// be more), compared with the stems themselves, so no stem is copied into it (a `HashMap`
/// keyed by a copy of each cost two allocations a stem).
#[derive(Default)]
struct ExtraIndex {
    /// Per slot, an index into `extra` plus one, or 0 for an empty slot; a power of two long,
    /// or empty before the first stem.
    slots: Vec<u32>,
}

impl ExtraIndex {
    /// The number in [`FreeWords::seq`] of `stem`, which no query term has: its index in
    /// `extra` (appended if new) past [`MAX_QUERY_TERMS`].
    fn id(&mut self, stem: &str, extra: &mut Vec<TermStr>) -> u32 {
        if 2 * (extra.len() + 1) > self.slots.len() {
            self.grow(extra);
        }
        let mask = self.slots.len() - 1;
        let mut i = slot_of(stem) & mask;
        let k = loop {
            match self.slots[i] {
                0 => {
                    let k = extra.len() as u32;
                    extra.push(TermStr::new(stem));
                    self.slots[i] = k + 1;
                    break k;
                }
                n if extra[n as usize - 1].as_str() == stem => break n - 1,
                _ => i = (i + 1) & mask,
            }
        };
        MAX_QUERY_TERMS as u32 + k
    }

    /// Doubles the table (64 slots at first) and puts `extra`'s stems back in.
    fn grow(&mut self, extra: &[TermStr]) {
        let len = (2 * self.slots.len()).max(64);
        self.slots.clear();
        self.slots.resize(len, 0);
        let mask = len - 1;
        for (k, stem) in extra.iter().enumerate() {
            let mut i = slot_of(stem) & mask;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = k as u32 + 1;
        }
    }
}

/// Where the search for `stem` starts in an [`ExtraIndex`] (its low bits).
fn slot_of(stem: &str) -> usize {
    let mut hasher = FxHasher::default();
    hasher.write(stem.as_bytes());
    // FxHash's high bits are its best mixed.
    (hasher.finish() >> 32) as usize
}

/// The query terms' stems by term number: an open-addressed table of term numbers (linear
/// probing, at most half full since there are at most [`MAX_QUERY_TERMS`]), compared with the
/// terms' own stems, so no stem is copied into it. Every word of a long query is looked up
/// once; before, each was compared with every term found so far.
struct StemIndex {
    /// Per slot, a term number plus one, or 0 for an empty slot.
    slots: [u8; STEM_SLOTS],
}

/// The slots of a [`StemIndex`]: a power of two, at least twice [`MAX_QUERY_TERMS`].
const STEM_SLOTS: usize = 2 * MAX_QUERY_TERMS;

impl Default for StemIndex {
    fn default() -> Self {
        StemIndex {
            slots: [0; STEM_SLOTS],
        }
    }
}

impl StemIndex {
    /// The number of the term whose stem (as `stem_of` gives it) is `stem`, or the empty slot
    /// to [`StemIndex::insert`] it at.
    fn find<'a>(&self, stem: &str, stem_of: impl Fn(u32) -> &'a str) -> Result<u32, usize> {
        let mut hasher = FxHasher::default();
        hasher.write(stem.as_bytes());
        let mut i = (hasher.finish() >> (64 - STEM_SLOTS.trailing_zeros())) as usize;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                n if stem_of(u32::from(n) - 1) == stem => return Ok(u32::from(n) - 1),
                _ => i = (i + 1) % STEM_SLOTS,
            }
        }
    }

    /// Puts term number `id` (below [`MAX_QUERY_TERMS`]) at `slot`, as [`StemIndex::find`]
    /// gave it.
    fn insert(&mut self, slot: usize, id: u32) {
        self.slots[slot] = (id + 1) as u8;
    }
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
pub(crate) const ODD_TOKEN_CHARS: usize = 24;

/// The word of a token that is one word (see [`one_word`]).
pub(crate) struct OneWord {
    /// Where it is in the token.
    at: Range<usize>,
    /// It has capitals.
    capitals: bool,
    /// It is letters (else digits).
    letters: bool,
    /// The token may be expanded by typo (see [`odd_token`]).
    pub(crate) typos: bool,
}

impl OneWord {
    /// The word, lowercased (in `buf` if it has capitals).
    pub(crate) fn lowercase<'a>(
        &self,
        token: &'a str,
        buf: &'a mut [u8; ODD_TOKEN_CHARS],
    ) -> &'a str {
        let word = token.get(self.at.clone()).unwrap_or_default();
        if !self.capitals {
            return word;
        }
        let buf = &mut buf[..word.len()];
        buf.copy_from_slice(word.as_bytes());
        buf.make_ascii_lowercase();
        std::str::from_utf8(buf).unwrap_or_default()
    }
}

/// The word of `token`, a whitespace-separated token of an ASCII text, if the token is one
/// word between characters that are not alphanumeric (`Book`, `flights,`, `(USA)`, `2024.`)
/// and at most [`ODD_TOKEN_CHARS`] long: most tokens of a long query. A word is letters,
/// lowercase but perhaps the first; capitals; or digits. The token's words
/// ([`text::for_each_word`]) are that word lowercased; it is no identifier
/// (it is split into one word); and it may be expanded by typo unless it is digits or an `@` or a `/`
/// stands around it ([`odd_token`]). All that is told in one pass over the token: splitting it
/// with [`text::for_each_term`], then trimming it and telling its words apart for identifiers
/// and its digits for typos, took seven, and half of `query_terms` (callgrind, the 195
/// slowest queries at BFCL's 2,723 tools).
pub(crate) fn one_word(token: &str) -> Option<OneWord> {
    let bytes = token.as_bytes();
    if bytes.len() > ODD_TOKEN_CHARS {
        return None;
    }
    // An `@` or a `/` around the word.
    let mut odd = false;
    let mut i = 0;
    let first = loop {
        let b = *bytes.get(i)?;
        if b.is_ascii_alphanumeric() {
            break b;
        }
        odd |= matches!(b, b'@' | b'/');
        i += 1;
    };
    let lead = i;
    i += 1;
    // The range of the bytes after the first.
    let (low, high) = if first.is_ascii_digit() {
        (b'0', b'9')
    } else if first.is_ascii_uppercase() && bytes.get(i).is_some_and(u8::is_ascii_uppercase) {
        (b'A', b'Z')
    } else {
        (b'a', b'z')
    };
    while i < bytes.len() && bytes[i].wrapping_sub(low) <= high - low {
        i += 1;
    }
    let end = i;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            return None;
        }
        odd |= matches!(b, b'@' | b'/');
        i += 1;
    }
    Some(OneWord {
        at: lead..end,
        capitals: first.is_ascii_uppercase(),
        letters: !first.is_ascii_digit(),
        typos: !first.is_ascii_digit() && !odd,
    })
}

#[cfg(test)]
#[path = "terms_tests.rs"]
mod tests;
