//! Postings lists in blocks (format v5): tool numbers delta-coded and bit-packed, impacts
//! packed beside them, decoded a block at a time into a small buffer.
//!
//! ```text
//! list   := count (LEB128 varint) block*            ceil(count / 128) blocks
//!         | 1 (varint) tool (varint) impact u16     a list of one tool: no block
//!                                                   (the impact with its name bit)
//! block  := doc_bits u8                             width of each tool-number gap, 0..=32
//!           impact_bits u8                          bits 0-3: width of each packed impact, 0..=15;
//!                                                   bits 4-6: shift s, 0..=7; bit 7: set if the
//!                                                   block has name bits
//!           impact_base u16                         the block's smallest impact (name bit off)
//!           gaps      n x doc_bits, bit-packed      tool number - previous tool number - 1
//!                                                   (the first of a list: the tool number)
//!           impacts   n x width, bit-packed         (impact - impact_base) >> s
//!           names     ceil(n / 8) bytes             only with the 0x80 flag: bit i set if entry
//!                                                   i's term occurs in the tool's name
//! ```
//!
//! `n` is 128 for every block but a list's last, which holds the rest. Packed values are
//! little-endian bit streams (value `i` at bit `i * width`), each padded to a whole byte. An
//! impact is a term's saturated, field-weighted frequency in the tool, `0..=32767` (see
//! `format::IMPACT_MAX`), with [`crate::format`]'s name bit (`0x8000`) set when the term occurs
//! in the tool's name; decoding gives back exactly the impacts written. The shift is the
//! most low bits (up to 7) that every impact above the base has zero: stored impacts are
//! multiples of 128 (`format::IMPACT_STEP_BITS`), so a block's impacts take at most 8 bits
//! each instead of up to 15. Gaps make tool numbers
//! ascend strictly by construction; decoding fails (and a file check refuses the list) if a
//! width is out of range, a block runs past the section, a tool number would pass `u32::MAX`
//! or an impact `32767`.

use crate::simd::Avx2;

/// Entries per block (every block of a list but the last).
pub(crate) const BLOCK: usize = 128;
/// The largest impact, without the name bit.
const IMPACT_MAX: u16 = 0x7fff;
/// The name bit of an impact.
const NAME_BIT: u16 = 0x8000;
/// The flag of `impact_bits` saying the block has name bits.
const NAMES_FLAG: u8 = 0x80;
/// Where in `impact_bits` the block's impact shift lies (3 bits), and its largest value.
const SHIFT_AT: u8 = 4;
const SHIFT_MAX: u8 = 7;
/// The bits of `impact_bits` that are the width.
const WIDTH_MASK: u8 = 0x0f;

/// Appends a postings list: `(tool number, impact)` pairs in strictly ascending tool order.
pub(crate) fn put_postings(out: &mut Vec<u8>, postings: &[(u32, u16)]) {
    put_varint(out, postings.len() as u32);
    if let [(doc, impact)] = postings {
        put_varint(out, *doc);
        out.extend_from_slice(&impact.to_le_bytes());
        return;
    }
    let mut previous: Option<u32> = None;
    for block in postings.chunks(BLOCK) {
        let gap = |i: usize| match (i, previous) {
            (0, None) => block[0].0,
            (0, Some(p)) => block[0].0 - p - 1,
            (i, _) => block[i].0 - block[i - 1].0 - 1,
        };
        let gaps: Vec<u32> = (0..block.len()).map(gap).collect();
        let base = block.iter().map(|p| p.1 & IMPACT_MAX).min().unwrap_or(0);
        let top = block.iter().map(|p| p.1 & IMPACT_MAX).max().unwrap_or(0);
        let names = block.iter().any(|p| p.1 & NAME_BIT != 0);
        let doc_bits = bits(gaps.iter().copied().max().unwrap_or(0));
        // The low bits every impact above the base has zero (impacts are quantised: see
        // `format::IMPACT_STEP_BITS`) are left out.
        let above = |p: &(u32, u16)| (p.1 & IMPACT_MAX) - base;
        let shift = block
            .iter()
            .map(|p| above(p).trailing_zeros())
            .min()
            .map_or(0, |z| z.min(u32::from(SHIFT_MAX))) as u8;
        let impact_bits = bits(u32::from(top - base) >> shift);
        out.push(doc_bits);
        out.push(impact_bits | shift << SHIFT_AT | if names { NAMES_FLAG } else { 0 });
        out.extend_from_slice(&base.to_le_bytes());
        pack(out, gaps.iter().copied(), doc_bits);
        pack(
            out,
            block.iter().map(|p| u32::from(above(p) >> shift)),
            impact_bits,
        );
        if names {
            pack(out, block.iter().map(|p| u32::from(p.1 >> 15)), 1);
        }
        previous = block.last().map(|p| p.0);
    }
}

/// The number of bits `v` needs (0 for 0).
fn bits(v: u32) -> u8 {
    (32 - v.leading_zeros()) as u8
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `values` packed at `width` bits each, padded to a whole byte.
fn pack(out: &mut Vec<u8>, values: impl Iterator<Item = u32>, width: u8) {
    if width == 0 {
        return;
    }
    let (mut acc, mut held) = (0u64, 0u32);
    for v in values {
        acc |= u64::from(v) << held;
        held += u32::from(width);
        while held >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            held -= 8;
        }
    }
    if held > 0 {
        out.push(acc as u8);
    }
}

/// Why a list does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockError {
    /// The count or a block runs past the end of the section (or the tool number of a list of
    /// one does not end within five bytes).
    Overrun,
    /// A block's `doc_bits` is above 32.
    Width,
    /// A tool number would pass `u32::MAX`.
    DocOverflow,
    /// An impact would pass 32767.
    ImpactOverflow,
}

/// One decoded block: its entries' tool numbers, impacts (without the name bit) and name bits.
pub(crate) struct Block {
    pub(crate) docs: [u32; BLOCK],
    /// Impacts without the name bit, `0..=32767`.
    pub(crate) impacts: [u16; BLOCK],
    /// Bit `i % 8` of byte `i / 8` set if entry `i`'s term occurs in the tool's name; all
    /// clear unless `has_names`.
    pub(crate) names: [u8; BLOCK / 8],
    /// Whether any entry has its name bit set may be true (the block has name bits).
    pub(crate) has_names: bool,
    pub(crate) len: usize,
}

impl Block {
    pub(crate) fn new() -> Block {
        Block {
            docs: [0; BLOCK],
            impacts: [0; BLOCK],
            names: [0; BLOCK / 8],
            has_names: false,
            len: 0,
        }
    }

    /// Whether entry `i`'s term occurs in the tool's name.
    #[cfg(test)]
    pub(crate) fn in_name(&self, i: usize) -> bool {
        self.names.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 != 0)
    }

    /// Entry `i`'s impact with the name bit, as it was written.
    #[cfg(test)]
    pub(crate) fn impact_with_name(&self, i: usize) -> u16 {
        self.impacts[i] | if self.in_name(i) { NAME_BIT } else { 0 }
    }
}

/// A postings list read in place: its length, and its blocks decoded in order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PostingList<'a> {
    count: usize,
    /// The section from the list's first block on (blocks delimit themselves).
    bytes: &'a [u8],
}

impl<'a> PostingList<'a> {
    /// The list at `offset` of the section `bytes`; empty if its count does not fit (a malformed
    /// offset never panics, and a malformed block ends the list where it starts).
    pub(crate) fn new(bytes: &'a [u8], offset: usize) -> PostingList<'a> {
        let empty = PostingList {
            count: 0,
            bytes: &[],
        };
        let Some(rest) = bytes.get(offset..) else {
            return empty;
        };
        let mut pos = 0;
        match varint(rest, &mut pos) {
            Some(count) => PostingList {
                count: count as usize,
                bytes: &rest[pos..],
            },
            None => empty,
        }
    }

    /// The number of tools in the list (the document frequency).
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// A decoder of the list's blocks, first to last.
    pub(crate) fn blocks(&self) -> Blocks<'a> {
        Blocks {
            bytes: self.bytes,
            pos: 0,
            left: self.count,
            next_doc: 0,
            simd: Avx2::detect(),
        }
    }
}

/// Decodes a list's blocks in order (see [`PostingList::blocks`]); a list of one tool decodes
/// as one block of one entry.
pub(crate) struct Blocks<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Entries not yet decoded.
    left: usize,
    /// The smallest tool number the next entry can have: 0, then one past the last decoded.
    next_doc: u64,
    /// The AVX2 kernels, if the CPU runs them (else the scalar unpack, as before).
    simd: Option<Avx2>,
}

impl Blocks<'_> {
    /// Decodes the next block into `out`: `Ok(false)` once the list is done.
    ///
    /// Each part is read in one pass: the gaps of a whole block unpacked and summed into
    /// tool numbers at once (in `u64`, so that only the last needs checking against
    /// `u32::MAX`); the impacts unpacked with the base added (checked against 32767 by the
    /// block's widths alone, unless they allow more); the name bits copied as they are. Before,
    /// seven passes (unpack, check, sum; unpack, check, add, spread the name bits): on the 200
    /// slowest queries over 100,000 tools, decoding took 1,060 M instructions, now 508 M (about
    /// 28 and 14 an entry; callgrind).
    ///
    /// With AVX2 (detected at run time; see `postings_avx2.rs`) gaps and impacts of up to 24
    /// bits are unpacked 8 at a time and the gaps summed in registers, and the impact kernel
    /// gives the block's largest value, so no block takes the checked scalar path (22% of the
    /// blocks did). On the 400 slowest of the speed bench's queries over 100,000 tools
    /// (157,000 entries a query): 2.18 M instructions a query, 13.8 an entry, before; 1.15 M,
    /// 7.3 an entry, after, of which about 140 a block are this function's own (callgrind).
    /// The scalar unpack stays for other CPUs and wider gaps.
    pub(crate) fn next_into(&mut self, out: &mut Block) -> Result<bool, BlockError> {
        if self.left == 0 {
            return Ok(false);
        }
        // One entry left before the first block: the list is of one tool.
        if self.left == 1 && self.pos == 0 {
            return self.single_into(out);
        }
        let n = self.left.min(BLOCK);
        let head = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or(BlockError::Overrun)?;
        let (doc_bits, flags) = (head[0], head[1]);
        let impact_bits = flags & WIDTH_MASK;
        let shift = (flags >> SHIFT_AT) & SHIFT_MAX;
        let base = u16::from_le_bytes([head[2], head[3]]);
        if doc_bits > 32 {
            return Err(BlockError::Width);
        }
        let mut pos = self.pos + 4;
        // Each packed part, with what follows it in the section (an unpack may read past a
        // part's end, never past the section's).
        let mut take = |width: u8| -> Result<Packed<'_>, BlockError> {
            let len = (n * usize::from(width)).div_ceil(8);
            let end = pos.checked_add(len).ok_or(BlockError::Overrun)?;
            let rest = self.bytes.get(pos..).ok_or(BlockError::Overrun)?;
            if end > self.bytes.len() {
                return Err(BlockError::Overrun);
            }
            pos = end;
            Ok(Packed { rest, len })
        };
        let gaps = take(doc_bits)?;
        let impacts = take(impact_bits)?;
        let names = if flags & NAMES_FLAG != 0 {
            Some(take(1)?)
        } else {
            None
        };
        // Tool numbers ascend, so only the last can pass `u32::MAX`: summed in u64, it is seen.
        let mut next = self.next_doc;
        let docs = &mut out.docs;
        if let Some(sum) = gaps.docs_simd(self.simd, doc_bits, n, next, docs) {
            next += u64::from(sum);
        } else if n == BLOCK {
            // Every group is whole: the gaps are summed as they are unpacked.
            gaps.unpack(doc_bits, n, |i, v| {
                let doc = next + u64::from(v);
                docs[i] = doc as u32;
                next = doc + 1;
            });
        } else {
            // Unpacked over whole groups of 8 (the entries past `n` are overwritten by no
            // reader), then summed.
            gaps.unpack(doc_bits, n, |i, v| docs[i] = v);
            for d in docs[..n].iter_mut() {
                let doc = next + u64::from(*d);
                *d = doc as u32;
                next = doc + 1;
            }
        }
        if next - 1 > u64::from(u32::MAX) {
            return Err(BlockError::DocOverflow);
        }
        let quals = &mut out.impacts;
        // The largest impact the block's width and shift allow: only when it could pass 32767
        // are the unpacked values checked (the SIMD kernel gives the largest at no cost).
        let widest = (1u32 << impact_bits) - 1;
        if let Some(top) = impacts.impacts_simd(self.simd, impact_bits, n, shift, base, quals) {
            if u32::from(base) + (top << shift) > u32::from(IMPACT_MAX) {
                return Err(BlockError::ImpactOverflow);
            }
        } else if u32::from(base) + (widest << shift) <= u32::from(IMPACT_MAX) {
            impacts.unpack(impact_bits, n, |i, v| {
                quals[i] = ((v as u16) << shift) + base
            });
        } else {
            impacts.unpack(impact_bits, n, |i, v| quals[i] = v as u16);
            let top = out.impacts[..n].iter().copied().max().unwrap_or(0);
            if u32::from(base) + (u32::from(top) << shift) > u32::from(IMPACT_MAX) {
                return Err(BlockError::ImpactOverflow);
            }
            for q in out.impacts[..n].iter_mut() {
                *q = (*q << shift) + base;
            }
        }
        out.has_names = names.is_some();
        out.names = [0; BLOCK / 8];
        if let Some(names) = names {
            let len = names.len.min(BLOCK / 8);
            if let (Some(to), Some(from)) = (out.names.get_mut(..len), names.rest.get(..len)) {
                to.copy_from_slice(from);
            }
        }
        out.len = n;
        self.pos = pos;
        self.left -= n;
        self.next_doc = next;
        Ok(true)
    }

    /// Decodes a list of one entry (no block: its tool number and impact).
    fn single_into(&mut self, out: &mut Block) -> Result<bool, BlockError> {
        let mut pos = self.pos;
        let doc = varint(self.bytes, &mut pos).ok_or(BlockError::Overrun)?;
        let impact = self.bytes.get(pos..pos + 2).ok_or(BlockError::Overrun)?;
        let impact = u16::from_le_bytes([impact[0], impact[1]]);
        out.docs[0] = doc;
        out.impacts[0] = impact & IMPACT_MAX;
        out.has_names = impact & NAME_BIT != 0;
        out.names = [0; BLOCK / 8];
        out.names[0] = u8::from(out.has_names);
        out.len = 1;
        self.pos = pos + 2;
        self.left = 0;
        self.next_doc = u64::from(doc) + 1;
        Ok(true)
    }

    /// Bytes of the section from the list's first block to the end of the last decoded block.
    pub(crate) fn consumed(&self) -> usize {
        self.pos
    }
}

/// A bit-packed part of a block: its `len` bytes at the start of `rest`, the section from there on.
struct Packed<'a> {
    rest: &'a [u8],
    len: usize,
}

impl Packed<'_> {
    /// Unpacks the `n` gaps (at most [`BLOCK`]) of `width` bits with the AVX2 kernel, summed
    /// into tool numbers from `next` (the smallest the first can be) as the scalar path does;
    /// gives the block's sum of gaps plus one (what `next` moves by), or `None` (nothing
    /// written) where the kernel does not apply.
    #[inline(always)]
    fn docs_simd(
        &self,
        simd: Option<Avx2>,
        width: u8,
        n: usize,
        next: u64,
        docs: &mut [u32; BLOCK],
    ) -> Option<u32> {
        let simd = simd?;
        #[cfg(target_arch = "x86_64")]
        {
            let groups = n.div_ceil(8).min(BLOCK / 8);
            // Wrapping in u32 from `next - 1`: the block's sum is below 2^31 (see
            // `avx2::MAX_WIDTH`), so the last tool number less the start gives it back exactly.
            let start = (next as u32).wrapping_sub(1);
            self.with_slack(groups * usize::from(width) + avx2::SLACK, |bytes| {
                simd.docs(bytes, width, groups, start, docs)
            })?;
            docs.get(n.checked_sub(1)?)
                .map(|&last| last.wrapping_sub(start))
        }
        #[cfg(not(target_arch = "x86_64"))]
        match simd {}
    }

    /// Unpacks the `n` impacts (at most [`BLOCK`]) of `width` bits with the AVX2 kernel, as
    /// `(v << shift) + base`, giving the largest `v` (the caller checks it); `None` (nothing
    /// written) where the kernel does not apply.
    #[inline(always)]
    fn impacts_simd(
        &self,
        simd: Option<Avx2>,
        width: u8,
        n: usize,
        shift: u8,
        base: u16,
        quals: &mut [u16; BLOCK],
    ) -> Option<u32> {
        let simd = simd?;
        #[cfg(target_arch = "x86_64")]
        {
            let groups = n.div_ceil(8).min(BLOCK / 8);
            self.with_slack(groups * usize::from(width) + avx2::SLACK, |bytes| {
                simd.impacts(bytes, width, n, shift, base, quals)
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        match simd {}
    }

    /// `f` of the section from the part on if it holds `need` bytes, else (only near the
    /// section's end) of a zero-padded copy of the part.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn with_slack<R>(&self, need: usize, f: impl FnOnce(&[u8]) -> Option<R>) -> Option<R> {
        if self.rest.len() >= need {
            f(self.rest)
        } else {
            self.padded(f)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[cold]
    #[inline(never)]
    fn padded<R>(&self, f: impl FnOnce(&[u8]) -> Option<R>) -> Option<R> {
        let mut buf = [0u8; BLOCK * 4 + avx2::SLACK];
        let len = self.len.min(self.rest.len()).min(BLOCK * 4);
        buf[..len].copy_from_slice(&self.rest[..len]);
        f(&buf)
    }

    /// Unpacks `n` values (at most [`BLOCK`]) of `width` bits (at most 32), giving each with
    /// its index (below [`BLOCK`]) to `put`; then (up to the next multiple of 8) values of no
    /// meaning.
    #[inline(always)]
    fn unpack(&self, width: u8, n: usize, mut put: impl FnMut(usize, u32)) {
        // Whole groups of 8 values: `groups * width` bytes, at most the 512 of 128 32-bit values.
        let groups = n.div_ceil(8).min(BLOCK / 8);
        if width == 0 {
            for i in 0..groups * 8 {
                put(i, 0);
            }
            return;
        }
        // Every group is read from `width + 8` bytes: from the section when 8 bytes follow the
        // groups, else (only near the section's end) from a zero-padded copy of the part, which
        // is not zeroed for the other blocks.
        if self.rest.len() >= groups * usize::from(width) + 8 {
            unpack_width(self.rest, width, groups, &mut put);
        } else {
            self.unpack_padded(width, groups, &mut put);
        }
    }

    /// [`Packed::unpack`] from a zero-padded copy of the part.
    #[cold]
    #[inline(never)]
    fn unpack_padded(&self, width: u8, groups: usize, put: &mut impl FnMut(usize, u32)) {
        let mut buf = [0u8; BLOCK * 4 + 8];
        let len = self.len.min(self.rest.len()).min(BLOCK * 4);
        buf[..len].copy_from_slice(&self.rest[..len]);
        if buf.len() >= groups * usize::from(width) + 8 {
            unpack_width(&buf, width, groups, put);
        }
    }
}

/// Unpacks `groups` groups (at most `BLOCK / 8`) of 8 values of `width` bits (1 to 32;
/// nothing for another width) from `bytes`, which hold 8 bytes more, giving each value with
/// its index to `put`.
#[inline(always)]
fn unpack_width(bytes: &[u8], width: u8, groups: usize, put: &mut impl FnMut(usize, u32)) {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                $($w => unpack_groups::<$w>(bytes, groups, put),)*
                _ => {}
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// Unpacks `groups` groups (at most `BLOCK / 8`) of 8 values of `W` bits (a group is `W`
/// bytes) from `bytes`, which hold 8 bytes more, giving each value with its index to `put`.
/// The shifts are constants; a group of up to 8 bytes is one load, one of up to 16 two.
#[inline(always)]
fn unpack_groups<const W: usize>(bytes: &[u8], groups: usize, put: &mut impl FnMut(usize, u32)) {
    let mask = (1u64 << W) - 1;
    for g in 0..groups.min(BLOCK / 8) {
        // The group and the 8 bytes after it: a slice of constant length.
        let Some(group) = bytes.get(g * W..g * W + W + 8) else {
            return;
        };
        if W <= 8 {
            let word = u64::from_le_bytes(word_at(group, 0));
            for j in 0..8 {
                put(g * 8 + j, ((word >> (j * W)) & mask) as u32);
            }
        } else if W <= 16 {
            let lo = u64::from_le_bytes(word_at(group, 0));
            let hi = u64::from_le_bytes(word_at(group, 8));
            let word = u128::from(lo) | u128::from(hi) << 64;
            for j in 0..8 {
                put(g * 8 + j, ((word >> (j * W)) as u64 & mask) as u32);
            }
        } else {
            for j in 0..8 {
                let bit = j * W;
                let word = u64::from_le_bytes(word_at(group, bit / 8));
                put(g * 8 + j, ((word >> (bit % 8)) & mask) as u32);
            }
        }
    }
}

/// The 8 bytes of `bytes` at `at` (zeros past its end, which a caller's constant bounds rule out).
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> [u8; 8] {
    let mut word = [0u8; 8];
    if let Some(b) = bytes.get(at..at + 8) {
        word.copy_from_slice(b);
    }
    word
}

/// A LEB128 varint of at most five bytes at `*pos`, which it moves past it.
fn varint(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v = 0u32;
    for shift in [0, 7, 14, 21, 28] {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u32::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(target_arch = "x86_64")]
#[path = "postings_avx2.rs"]
mod avx2;
#[cfg(test)]
#[path = "postings_tests.rs"]
mod tests;
