//! The on-disk layout of an index file, and bounds-checked readers for it.
//!
//! An index is one file, little-endian throughout:
//!
//! ```text
//! offset  size  field
//!      0     8  magic  b"TGSEARCH"
//!      8     4  format version (u32, currently 9)
//!     12     4  number of tools (u32)
//!     16    24  average length of each of the 6 fields, in terms (6 x f32)
//!     40    52  the ranking parameters the impacts were computed with:
//!               k1, then the weight and b of each field (13 x f32)
//!     92    96  6 sections, each (offset u64, length u64), offsets from file start:
//!               term fst, postings, tool offsets, tool records, name lengths,
//!               re-ranking vocabulary
//!    188     8  checksum (u64, XXH3) of bytes 0..188 followed by everything after the header
//!    196     8  total file length (u64)
//!    204        the sections
//! ```
//!
//! * The term fst maps each stem to the byte offset of its postings list in
//!   the postings section.
//! * A list of one tool (at 100,000 tools, 99,763 of the 108,088 lists: each tool's whole
//!   name is a term of its own) is its count, the tool number as a varint and the impact as
//!   a `u16`: 5.8 bytes each instead of the 8.3 of a block (-0.25 MB).
//! * A postings list is a varint count, then blocks of 128 entries (the last holds the rest):
//!   tool numbers as bit-packed gaps, impacts bit-packed above the block's smallest, and the
//!   name bits when any is set; `postings.rs` gives the exact layout. An impact is the term's
//!   saturated, field-weighted frequency in the tool, `tf / (k1 + tf)` (see `Ranking`), scaled
//!   to `0..=32767` and rounded to a multiple of 128 (256 levels, at least the lowest non-zero
//!   one for a term that occurs); its top bit says the term occurs in the tool's name. A
//!   search decodes a block at a time and adds each impact times the term's IDF. The 256
//!   levels halve the impacts' bits (100,000 tools: 3.50 MB -> 1.71 MB, postings 7.17 MB ->
//!   5.38 MB) and leave the held-out nDCG@5 of BFCL, Seal-Tools and MetaTool unchanged to
//!   three decimals, lexical (0.644, 0.935, 0.538) and hybrid (0.644 -> 0.645, 0.935, 0.606);
//!   of the 9,805 held-out queries' lexical top 50s, 162 changed a member (164 of 490,250
//!   places), mostly near-ties trading places, 210 their top 5 and 9 their first tool.
//! * Tool offsets are a width byte `w` (1 to 4: the fewest bytes that hold the largest
//!   offset), then one `w`-byte little-endian offset per tool into the tool records (a build
//!   whose records pass 4 GiB is an error): 3 bytes a tool at 100,000 tools instead of the 4
//!   of a `u32` in format 6 (-0.1 MB). Each is where the tool's hot record starts: its name,
//!   front-coded against the previous tool's (a varint of the bytes they share at the start,
//!   then the rest behind its varint length; `names.rs`: decoded once at open, so a search
//!   borrows names from memory), then its re-ranking
//!   words: three lists (the stems of the name's words and of the
//!   description's terms in text order, the stems of the `enum` values' terms
//!   ascending and each once), each a varint count and then varint numbers of
//!   the re-ranking vocabulary. The description's and the `enum` values' lists are a pair
//!   written once per distinct pair: the pair starts with a varint `v`, even for a pair
//!   written here (the description's count is `v / 2`), odd for a reference to the same pair
//!   written by an earlier tool, `(v >> 1) + 1` bytes back (always to one written in place),
//!   when the reference is the shorter (`record::put_rerank`). Tools that share a description
//!   (a catalog's copies of one tool, the same tool on two servers) share its words.
//! * Name lengths are one byte per tool: the number of terms of its name field (saturating
//!   at 255), the only field length a search reads (for the share of the name a query
//!   explains); the others only go into the impacts, at build time. Version 5 kept six `u16`
//!   per tool: 1.2 MB at 100,000 tools, now 0.1 MB.
//!
//! Tool records: what a search reads of every tool it ranks (the hot records)
//! apart from the text only the tools it returns need (description, schema,
//! aliases, keywords), which is compressed in blocks of consecutive tools:
//!
//! ```text
//! u32            tools per block B (32)
//! u32            number of blocks nb = ceil(tools / B)
//! u32            dictionary length d
//! d bytes        the dictionary every block was compressed against
//! (nb + 1) u32   where each block starts, from the section's start; the last
//!                is where the last block ends
//! blocks         block k: the texts of tools kB .. kB+B-1, as a u32 length,
//!                then one LZ4 block (no frame), compressed with the dictionary,
//!                that decompresses to exactly that many bytes: per tool its
//!                description and parameters (compact JSON) as length-prefixed
//!                strings, then u32 counts of aliases and keywords, each
//!                followed by that many strings
//! hot records    per tool, in tool order (see tool offsets)
//! ```
//!
//! Reading a tool's text decompresses its block and steps over the texts
//! before it; a dictionary or a block whose length or offsets leave the
//! section, a block whose stated length exceeds what LZ4 can encode in its
//! bytes (255 per byte: refused before anything is allocated), that does not
//! decompress to exactly that length or whose texts do not fit it is a typed
//! error (`record::RecordError`), never a panic; a changed dictionary gives
//! other text or one of those errors. Blocks start at multiples of B, so a
//! build's bytes do not depend on its number of threads. B is stored, so a
//! reader takes any.
//!
//! The dictionary is the first 512 bytes of the texts of 32 tools evenly spaced
//! in tool order (at most 16 KiB): JSON-schema boilerplate and wording that
//! every block repeats is then matched against it instead of spelt out in each
//! block. lz4_flex hashes the dictionary before each block (a table of 4,096
//! entries), so a larger one costs build time for little: at 100,000 tools the
//! texts take 2.66 MB with 16 KiB against 2.62 MB with 32 KiB and 2.55 MB with
//! 64 KiB, which took 35, 55 and 85 ms to compress on one core.
//!
//! Measured at 100,000 tools (the speed bench's corpus, near-duplicate tools
//! side by side in name order): blocks of 16 without a dictionary (format 5)
//! 3.64 MB; with the dictionary 2.64 MB; blocks of 32 with it 2.00 MB, which
//! format 6 keeps: it is what brings the whole file under 12 MiB. The price is
//! reading a returned tool: one BFCL tool (speed bench `get_returned_tool_bfcl`,
//! load 5-6, interleaved runs) took 5.5-7.8 us with format 5's blocks of 16,
//! 10.4-12.1 us with blocks of 16 and the dictionary (whose matches decode
//! slower per byte), 16.3-21.1 us with blocks of 32 and the dictionary. With
//! `BLOCK_TOOLS` at 16 the file is 12.6 MiB.
//! LZ4 rather than zstd or deflate, which pack a block 1.5 times smaller: it
//! decodes a block several times faster, in pure Rust, and a search decodes one
//! block per tool it returns.
//! * The re-ranking vocabulary is an fst from each stem of the re-ranking
//!   words to its number, the most frequent numbered first. A search looks up
//!   its few query stems there once instead of splitting and stemming the
//!   name and description of every tool it re-ranks.
//!
//! The checksum is XXH3 (64 bits) of the header's bytes before it followed by everything after
//! the header ([`checksum`]): cheap enough to verify on every open, strong enough to tell a
//! truncated, corrupted or foreign file from an index. Opening a mapped file
//! computes it by streaming the file through a small buffer ([`Checksum`]),
//! so verifying does not make the whole map resident.
//!
//! Opening checks, in this order: the length covers the header, the magic,
//! the version (another one is refused with the version found and the one
//! expected: rebuild the index), that every section lies inside the file
//! after the header, the total length, the checksum, that the per-tool tables
//! have one entry per tool, and (for a file, not for an index built in this
//! process) the term fst and postings in full (`check.rs`).
//!
//! Versions: 2 had a sixth section after the term fst, an fst of unstemmed
//! terms that was always written empty; 3 dropped it; 4 added the re-ranking
//! words and vocabulary; 5 stores the postings in bit-packed blocks instead of fixed-width
//! `u32` tool numbers and `u16` impacts (100,000 tools: 13.6 MB -> 7.2 MB of postings), and
//! the tools' texts in LZ4 blocks apart from their hot records; 6 quantises the impacts to 256
//! levels (packed with a per-block shift), keeps one name length per tool instead of six field
//! lengths, `u32` tool offsets and varint name lengths instead of `u64` and `u32`, writes a list
//! of one tool without a block, and compresses the texts in blocks of 32 against a stored
//! dictionary (100,000 tools: 18.03 MB = 17.2 MiB -> 12.53 MB = 11.95 MiB); 7 checksums with
//! XXH3 instead of FNV-1a over 8-byte words (which missed two flipped top bits and a trailing
//! zero) and stores tool offsets in the fewest bytes that hold them (12.43 MB = 11.85 MiB); 8
//! stores a description's and its `enum` values' re-ranking words once for the tools that share
//! them (the speed bench's 100,000 tools, 14 copies of 6,996: 11.24 MB = 10.72 MiB; BFCL's
//! 2,723 tools, whose descriptions differ: 986,943 -> 986,311 bytes); 9 front-codes the names
//! (100,000 tools: tool records 5,502,456 -> 3,467,722 bytes, the file 11.24 MB -> 9.21 MB =
//! 8.78 MiB; BFCL's 2,723: 986,311 -> 954,375 bytes). None reads another's files.
//!
//! Tried for version 9 and left out: patched bit-packing of the postings' gaps (PFor: a block
//! packed at the width most of its gaps need, the wider ones' high bits stored apart). At
//! 100,000 tools it took the postings from 5.13 MB to 2.87 MB (the file to 6.94 MB), but the
//! exceptions cost every block that has them a pass of its own: 2.09 M -> 2.19 M instructions
//! a query (+4.8%, callgrind, the first 1,000 of the speed bench's queries), 320 of them a
//! block with exceptions, 70% of the blocks a query decodes. Allowing at most one exception a
//! block kept 0.35 MB of the gain and still cost 3.7%.

use crate::error::Section;
use crate::field::FIELDS;

pub(crate) const MAGIC: &[u8; 8] = b"TGSEARCH";
pub(crate) const VERSION: u32 = 9;
pub(crate) const SECTIONS: usize = 6;
/// The ranking parameters stored in the header: `k1`, `weight`, `b`.
pub(crate) const RANKING_PARAMS: usize = 1 + 2 * FIELDS;
pub(crate) const CHECKSUM_AT: usize = 40 + RANKING_PARAMS * 4 + SECTIONS * 16;
pub(crate) const HEADER_LEN: usize = CHECKSUM_AT + 16;

pub(crate) const SEC_STEMS: usize = 0;
pub(crate) const SEC_POSTINGS: usize = 1;
pub(crate) const SEC_DOC_OFFSETS: usize = 2;
pub(crate) const SEC_DOCS: usize = 3;
pub(crate) const SEC_NAME_LENS: usize = 4;
pub(crate) const SEC_RERANK_TERMS: usize = 5;

/// The sections in file order (indexed by the `SEC_` numbers).
pub(crate) const SECTION_ORDER: [Section; SECTIONS] = [
    Section::Terms,
    Section::Postings,
    Section::ToolOffsets,
    Section::ToolRecords,
    Section::NameLengths,
    Section::RerankTerms,
];

/// The checksum of an index file: XXH3 (64 bits) of `parts` one after the other, as if they
/// were one byte string.
///
/// Each byte feeds the hash once, in order, so no two files differ only in ways the checksum
/// cannot see: the FNV-1a over 8-byte words that versions up to 6 used missed a flip of the
/// top bit of any two words (the multiplier is odd, so bit 63 of a word only ever reaches bit
/// 63 of the state, and two flips cancel) and padded a short tail with zeros (`"ab"` and
/// `"ab\0"` had the same sum). XXH3 rather than CRC32C (which `fst` uses for its own
/// checksum): 64 bits fill the header's checksum field, and the hash runs at memory speed in
/// pure Rust on every target.
pub(crate) fn checksum(parts: &[&[u8]]) -> u64 {
    let mut sum = Checksum::new();
    for part in parts {
        sum.update(part);
    }
    sum.value()
}

/// The same checksum as [`checksum`], fed incrementally: the parts' bytes in order, in pieces
/// of any size.
pub(crate) struct Checksum(xxhash_rust::xxh3::Xxh3);

impl Checksum {
    pub(crate) fn new() -> Checksum {
        Checksum(xxhash_rust::xxh3::Xxh3::new())
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn value(&self) -> u64 {
        self.0.digest()
    }
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends `s` prefixed with its length as a varint: one byte for a string of under 128 bytes.
pub(crate) fn put_short_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// A cursor over a byte slice whose every read is bounds-checked and
/// returns `None` past the end, so malformed input can never panic.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], pos: usize) -> Reader<'a> {
        Reader { bytes, pos }
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(crate) fn f32(&mut self) -> Option<f32> {
        Some(f32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// Steps over a length-prefixed string without checking that it is UTF-8.
    pub(crate) fn skip_str(&mut self) -> Option<()> {
        let n = self.u32()? as usize;
        self.take(n).map(|_| ())
    }

    /// A LEB128 varint of at most five bytes (as [`put_varint`] writes a `u32`).
    #[inline]
    pub(crate) fn varint(&mut self) -> Option<u32> {
        let mut v = 0u32;
        for shift in [0, 7, 14, 21, 28] {
            let b = self.u8()?;
            v |= u32::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
}

/// Appends `v` as a LEB128 varint: seven bits a byte, low first, the top bit set on every
/// byte but the last.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The tool offsets section for `offsets` (ascending): a width byte `w`, the fewest bytes
/// that hold the last offset (1 to 4), then each offset as `w` little-endian bytes.
pub(crate) fn put_offsets(offsets: &[u32]) -> Vec<u8> {
    let last = offsets.last().copied().unwrap_or(0);
    let width = offset_width(last);
    let mut out = Vec::with_capacity(1 + offsets.len() * width);
    out.push(width as u8);
    for o in offsets {
        out.extend_from_slice(&o.to_le_bytes()[..width]);
    }
    out
}

/// The bytes an offset up to `last` takes in the tool offsets section: 1 to 4.
fn offset_width(last: u32) -> usize {
    (4 - last.leading_zeros() as usize / 8).max(1)
}

/// The length of a tool offsets section of `tools` tools whose width byte is `width`; `None`
/// for a width other than 1 to 4.
pub(crate) fn offsets_len(width: u8, tools: usize) -> Option<usize> {
    (1..=4)
        .contains(&width)
        .then(|| tools.checked_mul(usize::from(width))?.checked_add(1))
        .flatten()
}

/// Tool `id`'s offset in a tool offsets section (see [`put_offsets`]).
#[inline]
pub(crate) fn offset_at(section: &[u8], id: usize) -> Option<u32> {
    let width = usize::from(*section.first()?);
    let at = id.checked_mul(width)?.checked_add(1)?;
    let bytes = section.get(at..at.checked_add(width)?)?;
    let mut word = [0u8; 4];
    word.get_mut(..width)?.copy_from_slice(bytes);
    Some(u32::from_le_bytes(word))
}

/// A tool's stored name length: the terms of its name field, saturating at 255.
pub(crate) fn name_len_byte(len: u16) -> u8 {
    u8::try_from(len).unwrap_or(u8::MAX)
}

/// The largest impact: impacts are `tf / (k1 + tf)` scaled from `0..1`.
pub(crate) const IMPACT_MAX: u16 = 0x7fff;
/// Stored impacts are multiples of `1 << IMPACT_STEP_BITS`: 256 levels instead of 32,768, so
/// that a postings block packs them in at most 8 bits (see `postings.rs`).
pub(crate) const IMPACT_STEP_BITS: u32 = 7;

/// `impact` (`0..=IMPACT_MAX`) rounded to the nearest stored level; an occurring term
/// (`occurs`) keeps at least the lowest non-zero one, so that it still scores.
pub(crate) fn quantise_impact(impact: u16, occurs: bool) -> u16 {
    let step = 1u32 << IMPACT_STEP_BITS;
    let top = u32::from(IMPACT_MAX) / step;
    let mut level = ((u32::from(impact) + step / 2) / step).min(top);
    if occurs {
        level = level.max(1);
    }
    (level * step) as u16
}

/// The bit of an impact that says the term occurs in the tool's name.
pub(crate) const NAME_BIT: u16 = 0x8000;
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_checksum_equals_checksum() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for split in [0, 1, 7, 8, 9, 136, 500, 999] {
            let (a, b) = data.split_at(split);
            let mut c = Checksum::new();
            for piece in a.chunks(3) {
                c.update(piece);
            }
            for piece in b.chunks(13) {
                c.update(piece);
            }
            assert_eq!(c.value(), checksum(&[a, b]), "split {split}");
            assert_eq!(c.value(), checksum(&[&data]), "split {split}");
        }
    }

    #[test]
    fn checksum_sees_every_byte() {
        let a = checksum(&[b"hello world"]);
        let b = checksum(&[b"hello worle"]);
        assert_ne!(a, b);
    }

    #[test]
    fn tool_offsets_take_the_fewest_bytes_that_hold_the_last() {
        for (offsets, width) in [
            (vec![], 1),
            (vec![0, 255], 1),
            (vec![0, 256], 2),
            (vec![7, 70_000, 16_777_215], 3),
            (vec![1, 16_777_216], 4),
            (vec![0, u32::MAX], 4),
        ] {
            let section = put_offsets(&offsets);
            assert_eq!(section[0], width, "{offsets:?}");
            assert_eq!(Some(section.len()), offsets_len(width, offsets.len()));
            for (id, &o) in offsets.iter().enumerate() {
                assert_eq!(offset_at(&section, id), Some(o));
            }
            assert_eq!(offset_at(&section, offsets.len()), None);
        }
        assert_eq!(offsets_len(0, 3), None);
        assert_eq!(offsets_len(5, 3), None);
    }

    /// The checksum of format 6 and before: FNV-1a over 8-byte little-endian words, the tail
    /// zero-padded.
    fn fnv_words(bytes: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }

    /// The old checksum gave these two the same sum: flipping the top bit of a word adds 2^63,
    /// which the odd multiplier carries to the top bit of the state only, so two flips cancel.
    #[test]
    fn flipping_the_top_bit_of_two_words_changes_the_checksum() {
        let data: Vec<u8> = (0..64u8).collect();
        let mut flipped = data.clone();
        flipped[7] ^= 0x80;
        flipped[23] ^= 0x80;
        assert_eq!(fnv_words(&data), fnv_words(&flipped), "the old collision");
        assert_ne!(checksum(&[&data]), checksum(&[&flipped]));
    }

    /// ... and these: a short tail was padded with zeros.
    #[test]
    fn a_trailing_zero_byte_changes_the_checksum() {
        assert_eq!(fnv_words(b"ab"), fnv_words(b"ab\0"), "the old collision");
        assert_ne!(checksum(&[b"ab"]), checksum(&[b"ab\0"]));
    }
}
