//! An index file as the builder makes it: a header and sections, put together in memory
//! ([`Parts::into_built`]) or written straight to a file (`write.rs`).

use crate::format;

/// A serialised index and the checksum written into it.
pub(crate) struct Built {
    /// The bytes of the index file.
    pub(crate) bytes: Vec<u8>,
    /// Their checksum (see [`format::checksum`]).
    pub(crate) checksum: u64,
}

/// An index file in parts: its header, whose checksum is still zero, and its sections.
pub(crate) struct Parts {
    /// How many tools it holds.
    pub(crate) n: u32,
    /// The header ([`format::HEADER_LEN`] bytes).
    pub(super) head: Vec<u8>,
    pub(super) sections: [Vec<u8>; format::SECTIONS],
}

impl Parts {
    /// The file's checksum: over the header before the checksum and every section in order
    /// (see [`format::checksum`]).
    pub(super) fn checksum(&self) -> u64 {
        let mut sum = format::Checksum::new();
        sum.update(&self.head[..format::CHECKSUM_AT]);
        for s in &self.sections {
            sum.update(s);
        }
        sum.value()
    }

    /// The file's length in bytes.
    pub(super) fn len(&self) -> u64 {
        (self.head.len() + self.sections.iter().map(Vec::len).sum::<usize>()) as u64
    }

    /// The file's bytes in one buffer, each section dropped once copied (so the file and all
    /// its sections are never held at once).
    pub(super) fn into_built(self) -> Built {
        let checksum = self.checksum();
        let mut out = Vec::with_capacity(self.len() as usize);
        out.extend_from_slice(&self.head);
        out[format::CHECKSUM_AT..format::CHECKSUM_AT + 8].copy_from_slice(&checksum.to_le_bytes());
        for s in self.sections {
            out.extend_from_slice(&s);
        }
        Built {
            bytes: out,
            checksum,
        }
    }
}
