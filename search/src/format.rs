//! The on-disk layout of an index file, and bounds-checked readers for it.
//!
//! An index is one file, little-endian throughout:
//!
//! ```text
//! offset  size  field
//!      0     8  magic  b"TGSEARCH"
//!      8     4  format version (u32, currently 1)
//!     12     4  number of tools (u32)
//!     16    24  average length of each of the 6 fields, in terms (6 x f32)
//!     40    96  6 sections, each (offset u64, length u64), offsets from file start:
//!               stem fst, surface fst, postings, tool offsets, tool records, field lengths
//!    136     8  checksum (u64) of bytes 0..136 and of everything after the header
//!    144     8  total file length (u64)
//!    152        the sections
//! ```
//!
//! * The two fst maps take a term to the byte offset of its postings list.
//!   The surface (unstemmed) map is written empty by this version: hits are
//!   explained from the returned tools' text instead.
//! * A postings list is `varint count`, then per tool `varint (id - previous id)`,
//!   a `u8` bit set of the fields the term occurs in, and one `u8` term
//!   frequency (saturating at 255) per set bit.
//! * Tool offsets are one `u64` per tool into the tool records; a record is
//!   the name, description and parameters (JSON text) as length-prefixed
//!   strings, then `u32` counts of aliases and keywords, each followed by
//!   that many strings.
//! * Field lengths are six `u16` (saturating) per tool.
//!
//! The checksum is a 64-bit FNV-1a over 8-byte little-endian words (the tail
//! zero-padded): cheap enough to verify on every open, strong enough to tell
//! a truncated, corrupted or foreign file from an index. `open` computes it
//! by streaming the file through a small buffer ([`Checksum`]), so verifying
//! does not make the whole map resident.

use crate::FIELDS;

pub(crate) const MAGIC: &[u8; 8] = b"TGSEARCH";
pub(crate) const VERSION: u32 = 1;
pub(crate) const SECTIONS: usize = 6;
pub(crate) const CHECKSUM_AT: usize = 40 + SECTIONS * 16;
pub(crate) const HEADER_LEN: usize = CHECKSUM_AT + 16;

pub(crate) const SEC_STEMS: usize = 0;
pub(crate) const SEC_SURFACES: usize = 1;
pub(crate) const SEC_POSTINGS: usize = 2;
pub(crate) const SEC_DOC_OFFSETS: usize = 3;
pub(crate) const SEC_DOCS: usize = 4;
pub(crate) const SEC_FIELD_LENS: usize = 5;

/// FNV-1a over 64-bit words.
pub(crate) fn checksum(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        let mut chunks = part.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The same checksum as [`checksum`], fed incrementally: bytes of one part
/// with [`Checksum::update`] (in pieces of any size), then
/// [`Checksum::finish_part`] before the next part.
pub(crate) struct Checksum {
    h: u64,
    pending: [u8; 8],
    n: usize,
}

impl Checksum {
    pub(crate) fn new() -> Checksum {
        Checksum {
            h: 0xcbf2_9ce4_8422_2325,
            pending: [0; 8],
            n: 0,
        }
    }

    #[inline]
    fn word(&mut self, w: [u8; 8]) {
        self.h = (self.h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        if self.n > 0 {
            let k = (8 - self.n).min(bytes.len());
            self.pending[self.n..self.n + k].copy_from_slice(&bytes[..k]);
            self.n += k;
            bytes = &bytes[k..];
            if self.n < 8 {
                return;
            }
            self.word(self.pending);
            self.n = 0;
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(w);
        }
        let rest = chunks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.n = rest.len();
    }

    pub(crate) fn finish_part(&mut self) {
        if self.n > 0 {
            let mut w = [0u8; 8];
            w[..self.n].copy_from_slice(&self.pending[..self.n]);
            self.word(w);
            self.n = 0;
        }
    }

    pub(crate) fn value(&self) -> u64 {
        self.h
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
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

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
}

/// One entry of a postings list: a tool and how often the term occurs in
/// each of its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posting {
    pub(crate) doc: u32,
    pub(crate) tf: [u8; FIELDS],
}

pub(crate) fn put_postings(out: &mut Vec<u8>, postings: &[Posting]) {
    put_varint(out, postings.len() as u64);
    let mut prev = 0u32;
    for p in postings {
        put_varint(out, u64::from(p.doc - prev));
        prev = p.doc;
        let mask =
            p.tf.iter()
                .enumerate()
                .fold(0u8, |m, (i, &t)| if t > 0 { m | 1 << i } else { m });
        out.push(mask);
        out.extend(p.tf.iter().copied().filter(|&t| t > 0));
    }
}

/// Iterates a postings list; stops early (instead of panicking) on
/// malformed bytes.
pub(crate) struct Postings<'a> {
    reader: Reader<'a>,
    left: u64,
    doc: u32,
}

impl<'a> Postings<'a> {
    pub(crate) fn new(bytes: &'a [u8], offset: usize) -> Postings<'a> {
        let mut reader = Reader::new(bytes, offset);
        let left = reader.varint().unwrap_or(0);
        Postings {
            reader,
            left,
            doc: 0,
        }
    }

    /// The number of tools in the list (the document frequency).
    pub(crate) fn len(&self) -> u64 {
        self.left
    }
}

impl Iterator for Postings<'_> {
    type Item = Posting;

    fn next(&mut self) -> Option<Posting> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let step = (|| {
            let delta = u32::try_from(self.reader.varint()?).ok()?;
            let doc = self.doc.checked_add(delta)?;
            let mask = self.reader.u8()?;
            let mut tf = [0u8; FIELDS];
            for (i, t) in tf.iter_mut().enumerate() {
                if mask & (1 << i) != 0 {
                    *t = self.reader.u8()?;
                }
            }
            Some(Posting { doc, tf })
        })();
        match step {
            Some(p) => {
                self.doc = p.doc;
                Some(p)
            }
            None => {
                self.left = 0;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_round_trip() {
        let list = [
            Posting {
                doc: 0,
                tf: [1, 0, 0, 0, 0, 0],
            },
            Posting {
                doc: 7,
                tf: [0, 3, 0, 255, 0, 1],
            },
            Posting {
                doc: 300_000,
                tf: [2, 2, 2, 2, 2, 2],
            },
        ];
        let mut buf = vec![9u8];
        put_postings(&mut buf, &list);
        let back: Vec<_> = Postings::new(&buf, 1).collect();
        assert_eq!(back, list);
    }

    #[test]
    fn truncated_postings_stop_without_panicking() {
        let list = [Posting {
            doc: 5,
            tf: [1, 1, 1, 1, 1, 1],
        }; 3];
        let mut buf = Vec::new();
        put_postings(&mut buf, &list);
        for cut in 0..buf.len() {
            let n = Postings::new(&buf[..cut], 0).count();
            assert!(n < 3);
        }
    }

    #[test]
    fn streamed_checksum_equals_checksum() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for split in [0, 1, 7, 8, 9, 136, 500, 999] {
            let (a, b) = data.split_at(split);
            let mut c = Checksum::new();
            for piece in a.chunks(3) {
                c.update(piece);
            }
            c.finish_part();
            for piece in b.chunks(13) {
                c.update(piece);
            }
            c.finish_part();
            assert_eq!(c.value(), checksum(&[a, b]), "split {split}");
        }
    }

    #[test]
    fn checksum_sees_every_byte() {
        let a = checksum(&[b"hello world"]);
        let b = checksum(&[b"hello worle"]);
        assert_ne!(a, b);
    }
}
