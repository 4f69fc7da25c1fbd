//! An index file written from its parts, without first putting it together in memory.
//!
//! The sections are written straight where they go in the file by as many threads as there
//! are cores (up to four), each its own share of the bytes through its own handle, while this
//! thread computes the checksum; the header, checksum included, goes last. The file is then
//! synced and renamed into place, as [`crate::SearchIndex::write`] does it, and holds the same
//! bytes.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use super::parts::Parts;
use crate::error::IndexError;
use crate::file::replace_file;
use crate::format;

/// What was written: how many tools the index holds, and the file's length in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Written {
    pub(crate) tools: u32,
    pub(crate) bytes: u64,
}

/// Writes `parts` to `path` (replacing it): to `path` with `.tmp` appended first, synced, then
/// renamed over `path`, so a reader never sees a half-written index and a map of the old file
/// stays valid.
pub(crate) fn write_parts(parts: Parts, path: &Path) -> Result<Written, IndexError> {
    let writers = writers_for(parts.len());
    write_parts_on(parts, path, writers)
}

/// [`write_parts`] with the sections written by `writers` threads.
fn write_parts_on(mut parts: Parts, path: &Path, writers: usize) -> Result<Written, IndexError> {
    let writers = writers.max(1);
    let len = parts.len();
    replace_file(path, |file, tmp| {
        // The sections as (offset in the file, bytes), in file order.
        let mut pieces = Vec::with_capacity(parts.sections.len());
        let mut at = format::HEADER_LEN as u64;
        for s in &parts.sections {
            pieces.push((at, s.as_slice()));
            at += s.len() as u64;
        }
        let (sum, written) = std::thread::scope(|scope| {
            let share = (len - format::HEADER_LEN as u64)
                .div_ceil(writers as u64)
                .max(1);
            let handles: Vec<_> = (0..writers as u64)
                .map(|w| {
                    let start = format::HEADER_LEN as u64 + w * share;
                    let pieces = &pieces;
                    scope.spawn(move || write_range(tmp, pieces, start, start + share))
                })
                .collect();
            let sum = parts.checksum();
            (sum, crate::threads::join_resuming(handles))
        });
        for w in written {
            w?;
        }
        parts.head[format::CHECKSUM_AT..format::CHECKSUM_AT + 8]
            .copy_from_slice(&sum.to_le_bytes());
        file.write_all(&parts.head)
    })?;
    Ok(Written {
        tools: parts.n,
        bytes: len,
    })
}

/// How many threads write a file of `len` bytes: one below 4 MiB, else one per core (up to
/// four).
fn writers_for(len: u64) -> usize {
    if len < 4 << 20 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |p| p.get().min(4))
    }
}

/// Writes the bytes of `pieces` (each at its offset in the file) that fall in `start..end` to
/// the file at `path`, through a handle of its own.
fn write_range(path: &Path, pieces: &[(u64, &[u8])], start: u64, end: u64) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    let mut seeked = false;
    for &(at, bytes) in pieces {
        let from = start.max(at);
        let to = end.min(at + bytes.len() as u64);
        if from >= to {
            continue;
        }
        if !seeked {
            file.seek(SeekFrom::Start(from))?;
            seeked = true;
        }
        file.write_all(&bytes[(from - at) as usize..(to - at) as usize])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts of an index file of 300 tools' size whose sections are odd lengths of made-up
    /// bytes (the writing does not read them).
    fn parts() -> Parts {
        let sections: [Vec<u8>; format::SECTIONS] = std::array::from_fn(|s| {
            (0..1000 * s + 7 * s + 3)
                .map(|i| (i * 31 + s) as u8)
                .collect()
        });
        let mut head = vec![0u8; format::HEADER_LEN];
        head[..8].copy_from_slice(format::MAGIC);
        Parts {
            n: 300,
            head,
            sections,
        }
    }

    #[test]
    fn a_file_written_from_its_parts_holds_the_built_bytes_whatever_the_writers() {
        let want = parts().into_built().bytes;
        let dir = tempfile::tempdir().unwrap();
        for writers in [1, 2, 3, 7] {
            let path = dir.path().join(format!("w{writers}.idx"));
            let written = write_parts_on(parts(), &path, writers).unwrap();
            assert_eq!(written.tools, 300);
            assert_eq!(written.bytes, want.len() as u64);
            assert!(std::fs::read(&path).unwrap() == want, "{writers} writers");
        }
    }

    #[test]
    fn a_file_written_from_its_parts_replaces_the_old_one_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.idx");
        std::fs::write(
            &path,
            b"an older, longer file than the index is going to be .......",
        )
        .unwrap();
        let want = parts().into_built().bytes;
        write_parts_on(parts(), &path, 2).unwrap();
        assert!(std::fs::read(&path).unwrap() == want);
        assert!(!dir.path().join("tools.idx.tmp").exists());
    }

    #[test]
    fn a_file_that_cannot_be_created_is_an_io_error_naming_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("tools.idx");
        let err = write_parts_on(parts(), &path, 2).unwrap_err();
        assert!(
            matches!(&err, IndexError::Io { path: p, .. } if *p == path),
            "{err}"
        );
    }
}
