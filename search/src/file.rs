//! The bytes of an index and where they come from: a buffer just serialised by the builder, a
//! file read into memory, or a file mapped into memory. Whatever their source, the header is
//! parsed and checked here once ([`IndexFile`]), and every later read of the sections is
//! bounds-checked, so nothing in a file can make a search panic.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fst::Map;

use crate::check;
use crate::error::{Damage, IndexError};
use crate::field::FIELDS;
use crate::format::{self, Reader};
use crate::names::Names;
use crate::postings::PostingList;
use crate::ranking::ImpactParams;
use crate::record::{Block, HotRecord, RecordError, ToolDocRef};
use crate::words::Words;

/// The bytes behind an index: a memory map, or a vector (a file read into memory, or a freshly
/// built index).
enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for Storage {
    fn as_ref(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// Where the bytes of an index come from, which decides how far they are checked.
enum Content {
    /// Serialised by this process a moment ago: only the header is read back.
    Built,
    /// Read from a file: besides the header and checksum, the term dictionary and postings are
    /// checked in full (see [`check`]), since a checksum can be recomputed by whoever crafts a
    /// file.
    Untrusted,
}

/// A section of the storage, shared so the fst map can own its bytes.
#[derive(Clone)]
pub(crate) struct Slice {
    storage: Arc<Storage>,
    range: Range<usize>,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        // The range was checked against the storage length when opening.
        AsRef::<[u8]>::as_ref(&*self.storage)
            .get(self.range.clone())
            .unwrap_or(&[])
    }
}

/// The checked bytes of an index, with bounds-checked access to its sections.
pub(crate) struct IndexFile {
    storage: Arc<Storage>,
    stems: Map<Slice>,
    /// The re-ranking vocabulary: each stem of the tools' re-ranking words to its number.
    rerank_terms: Map<Slice>,
    /// The single words of `stems` and the words of `rerank_terms` in tables (see `words.rs`).
    words: Words,
    postings: Range<usize>,
    doc_offsets: Range<usize>,
    docs: Range<usize>,
    /// One byte per tool: the length of its name field (see `format.rs`).
    name_lens: Range<usize>,
    /// The tools' names, decoded from their front-coded form at open (see `names.rs`).
    names: Names,
    len: usize,
    /// The ranking parameters the stored impacts were computed with.
    impacts: ImpactParams,
}

impl IndexFile {
    /// The index the builder serialised into `bytes`, whose checksum it computed as
    /// `checksum`.
    pub(crate) fn built(bytes: Vec<u8>, checksum: u64) -> Result<IndexFile, IndexError> {
        IndexFile::from_storage(
            Storage::Owned(bytes),
            Path::new("<memory>"),
            Some(checksum),
            Content::Built,
        )
    }

    /// Reads the index file at `path` into memory and checks it. The bytes are this process's
    /// own: a file changed or truncated on disk afterwards does not change them.
    pub(crate) fn read(path: &Path) -> Result<IndexFile, IndexError> {
        let io = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let (file, len) = open_regular(path)?;
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        // At most the length the file had when opened: one that grows meanwhile is cut there,
        // and then refused by the length its header records.
        file.take(len).read_to_end(&mut bytes).map_err(io)?;
        IndexFile::from_storage(Storage::Owned(bytes), path, None, Content::Untrusted)
    }

    /// Maps the index file at `path` into memory and checks it.
    ///
    /// # Safety
    ///
    /// The file must not be modified or truncated, by this or any other process, while the
    /// returned value (or anything holding its bytes) is alive: the map would change under
    /// the reads (undefined behaviour) or fault on a page past a new end (`SIGBUS`).
    pub(crate) unsafe fn map(path: &Path) -> Result<IndexFile, IndexError> {
        let io = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let (file, len) = open_regular(path)?;
        if len < format::HEADER_LEN as u64 {
            // Too short to map usefully (and mapping an empty file fails).
            return Err(IndexError::TooShort {
                path: path.to_path_buf(),
                len,
                header: format::HEADER_LEN as u64,
            });
        }
        // SAFETY: the map is read-only and every read of it is bounds-checked against its
        // length; that the file is not modified while mapped is this function's contract.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        // The checksum is computed by reading the file through a small buffer rather than
        // through the map: the whole file is still verified, but the pages it passes through
        // stay in the page cache instead of becoming resident in this process. Queries then
        // fault in only the parts of the map they touch.
        let sum = streamed_checksum(&file).map_err(io)?;
        IndexFile::from_storage(Storage::Mapped(map), path, Some(sum), Content::Untrusted)
    }

    /// Writes the bytes to `path` (replacing it): written beside it first and renamed into
    /// place, so a reader never sees a half-written index and a map of the old file stays valid.
    pub(crate) fn write(&self, path: &Path) -> Result<(), IndexError> {
        replace_file(path, |file, _| file.write_all(self.bytes()))
    }

    /// Parses and checks the header (see `format.rs` for the order of the checks), then, for
    /// `Content::Untrusted`, the term dictionary and postings.
    fn from_storage(
        storage: Storage,
        path: &Path,
        precomputed_sum: Option<u64>,
        content: Content,
    ) -> Result<IndexFile, IndexError> {
        let bytes = storage.as_ref();
        let file_len = bytes.len() as u64;
        let too_short = || IndexError::TooShort {
            path: path.to_path_buf(),
            len: file_len,
            header: format::HEADER_LEN as u64,
        };
        if bytes.len() < format::HEADER_LEN {
            return Err(too_short());
        }
        let mut r = Reader::new(bytes, 0);
        if r.take(8).ok_or_else(too_short)? != format::MAGIC {
            return Err(IndexError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        let version = r.u32().ok_or_else(too_short)?;
        if version != format::VERSION {
            return Err(IndexError::UnsupportedVersion {
                path: path.to_path_buf(),
                expected: format::VERSION,
                found: version,
            });
        }
        let len = r.u32().ok_or_else(too_short)? as usize;
        // The average field lengths are only needed to compute impacts.
        r.take(4 * FIELDS).ok_or_else(too_short)?;
        let mut stored = [0f32; format::RANKING_PARAMS];
        for v in &mut stored {
            *v = r.f32().ok_or_else(too_short)?;
        }
        let impacts = ImpactParams {
            k1: stored[0],
            weight: std::array::from_fn(|f| stored[1 + f]),
            b: std::array::from_fn(|f| stored[1 + FIELDS + f]),
        };
        let mut sections: [Range<usize>; format::SECTIONS] = Default::default();
        for (range, section) in sections.iter_mut().zip(format::SECTION_ORDER) {
            let (offset, n) = (
                r.u64().ok_or_else(too_short)?,
                r.u64().ok_or_else(too_short)?,
            );
            *range = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(n).ok())
                .and_then(|(o, n)| Some(o..o.checked_add(n)?))
                .filter(|range| range.start >= format::HEADER_LEN && range.end <= bytes.len())
                .ok_or_else(|| IndexError::SectionOutOfBounds {
                    path: path.to_path_buf(),
                    section,
                    offset,
                    len: n,
                    file_len,
                })?;
        }
        let stored_sum = r.u64().ok_or_else(too_short)?;
        let stored_len = r.u64().ok_or_else(too_short)?;
        if stored_len != file_len {
            return Err(IndexError::LengthMismatch {
                path: path.to_path_buf(),
                stated: stored_len,
                actual: file_len,
            });
        }
        let sum = match precomputed_sum {
            Some(sum) => sum,
            None => {
                format::checksum(&[&bytes[..format::CHECKSUM_AT], &bytes[format::HEADER_LEN..]])
            }
        };
        if sum != stored_sum {
            return Err(IndexError::ChecksumMismatch {
                path: path.to_path_buf(),
                stored: stored_sum,
                computed: sum,
            });
        }
        // The tool offsets: a width byte (1 to 4), then that many bytes a tool.
        let offsets = &sections[format::SEC_DOC_OFFSETS];
        let width = bytes
            .get(offsets.clone())
            .and_then(|table| table.first().copied());
        let offsets_len = width
            .and_then(|width| format::offsets_len(width, len))
            .unwrap_or(len.saturating_mul(4).saturating_add(1));
        for (section, expected) in [
            (format::SEC_DOC_OFFSETS, offsets_len),
            (format::SEC_NAME_LENS, len),
        ] {
            if sections[section].len() != expected {
                return Err(IndexError::TableSize {
                    path: path.to_path_buf(),
                    section: format::SECTION_ORDER[section],
                    len: sections[section].len() as u64,
                    expected: expected as u64,
                    tools: len as u64,
                });
            }
        }
        let damaged = |damage| IndexError::Damaged {
            path: path.to_path_buf(),
            damage,
        };
        let storage = Arc::new(storage);
        let fst_of = |section: usize| {
            let slice = Slice {
                storage: Arc::clone(&storage),
                range: sections[section].clone(),
            };
            check::catch_quietly(|| Map::new(slice))
                .map_err(|panic| damaged(Damage::Panic(panic)))?
                .map_err(|source| IndexError::Dictionary {
                    path: path.to_path_buf(),
                    source,
                })
        };
        let stems = fst_of(format::SEC_STEMS)?;
        let rerank_terms = fst_of(format::SEC_RERANK_TERMS)?;
        let postings = AsRef::<[u8]>::as_ref(&*storage)
            .get(sections[format::SEC_POSTINGS].clone())
            .unwrap_or(&[]);
        // The builder's own lists are not checked again.
        if let Content::Untrusted = content {
            // Every distinct term comes from some tool's text, so all the terms together
            // are not much longer than the stored tools.
            let key_budget = sections[format::SEC_DOCS]
                .len()
                .saturating_mul(4)
                .saturating_add(1 << 20);
            let records = AsRef::<[u8]>::as_ref(&*storage)
                .get(sections[format::SEC_DOCS].clone())
                .unwrap_or(&[]);
            let checked = check::catch_quietly(|| {
                check::fst_structure(&stems)?;
                check::fst_structure(&rerank_terms)?;
                check::records_head(records, len)?;
                check::postings(&stems, postings, len, key_budget)
            });
            match checked {
                Ok(Ok(())) => {}
                Ok(Err(damage)) => return Err(damaged(damage)),
                Err(panic) => return Err(damaged(Damage::Panic(panic))),
            }
        }
        let [_, postings, doc_offsets, docs, name_lens, _] = sections;
        let names = {
            let bytes = AsRef::<[u8]>::as_ref(&*storage);
            let offsets = bytes.get(doc_offsets.clone()).unwrap_or(&[]);
            let records = bytes.get(docs.clone()).unwrap_or(&[]);
            // The names decoded take at most 16 times the records' bytes, and a megabyte more
            // (100,000 tools of the speed bench: 2.3 MB from 5.5 MB of records).
            let budget = records.len().saturating_mul(16).saturating_add(1 << 20);
            let offset = |id| format::offset_at(offsets, id).and_then(|o| usize::try_from(o).ok());
            check::catch_quietly(|| Names::decode(records, len, offset, budget))
                .map_err(|panic| damaged(Damage::Panic(panic)))?
                .map_err(damaged)?
        };
        let words = check::catch_quietly(|| Words::new(&stems, &rerank_terms))
            .map_err(|panic| damaged(Damage::Panic(panic)))?;
        Ok(IndexFile {
            storage,
            stems,
            rerank_terms,
            words,
            postings,
            doc_offsets,
            docs,
            name_lens,
            names,
            len,
            impacts,
        })
    }

    /// The whole file.
    pub(crate) fn bytes(&self) -> &[u8] {
        AsRef::<[u8]>::as_ref(&*self.storage)
    }

    /// The number of tools.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The ranking parameters the stored impacts were computed with.
    pub(crate) fn impacts(&self) -> ImpactParams {
        self.impacts
    }

    /// The term dictionary: each stem to the offset of its postings list.
    pub(crate) fn stems(&self) -> &Map<Slice> {
        &self.stems
    }

    /// The single words of the term dictionary and the re-ranking vocabulary, in tables.
    pub(crate) fn words(&self) -> &Words {
        &self.words
    }

    /// The length in bytes of each section, in file order (`format::SECTION_ORDER`).
    pub(crate) fn section_lens(&self) -> [usize; format::SECTIONS] {
        [
            self.stems.as_fst().as_bytes().len(),
            self.postings.len(),
            self.doc_offsets.len(),
            self.docs.len(),
            self.name_lens.len(),
            self.rerank_terms.as_fst().as_bytes().len(),
        ]
    }

    fn section(&self, range: &Range<usize>) -> &[u8] {
        self.bytes().get(range.clone()).unwrap_or(&[])
    }

    /// The hot record of tool `id`: its name, and a reader at the record.
    #[inline]
    pub(crate) fn record(&self, id: usize) -> Option<HotRecord<'_>> {
        let offset = format::offset_at(self.section(&self.doc_offsets), id)?;
        Some(HotRecord {
            name: self.names.get(id)?,
            r: Reader::new(self.section(&self.docs), usize::try_from(offset).ok()?),
        })
    }

    /// The name of tool `id`.
    #[inline]
    pub(crate) fn name_of(&self, id: usize) -> Option<&str> {
        self.names.get(id)
    }

    /// The number of the tool called `name` (tools are numbered in name order).
    pub(crate) fn id_of(&self, name: &str) -> Option<usize> {
        self.names.find(name)
    }

    /// Tool `id` as stored (`None` past the tools or where the file is damaged: see
    /// [`IndexFile::try_doc`]).
    pub(crate) fn doc(&self, id: usize) -> Option<ToolDocRef<'_>> {
        self.try_doc(id).ok()
    }

    /// Tool `id` as stored: its name (decoded at open), its text decompressed from its block.
    pub(crate) fn try_doc(&self, id: usize) -> Result<ToolDocRef<'_>, RecordError> {
        let name = self.name_of(id).ok_or(RecordError::Record { tool: id })?;
        let block = Block::of_tool(self.section(&self.docs), id)?;
        Ok(ToolDocRef::with_text(name, block.text(id)?))
    }

    /// Every tool as stored, in tool order, each block decompressed once; a tool that cannot
    /// be read (a damaged file) is left out.
    pub(crate) fn docs(&self) -> impl Iterator<Item = ToolDocRef<'_>> + '_ {
        let mut block: Option<Block> = None;
        (0..self.len).filter_map(move |id| {
            let name = self.name_of(id)?;
            if !block.as_ref().is_some_and(|b| b.holds(id)) {
                block = Block::of_tool(self.section(&self.docs), id).ok();
            }
            let text = block.as_ref()?.text(id).ok()?;
            Some(ToolDocRef::with_text(name, text))
        })
    }

    /// The length in terms of tool `id`'s name field, at most 255 (0 past the table).
    pub(crate) fn name_len(&self, id: usize) -> f32 {
        f32::from(self.section(&self.name_lens).get(id).copied().unwrap_or(0))
    }

    /// The postings list at `offset` of the postings section (empty if it does not fit).
    pub(crate) fn postings_at(&self, offset: u64) -> PostingList<'_> {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        PostingList::new(self.section(&self.postings), offset)
    }
}

/// Opens `path` for reading and gives its length, refusing anything but a regular file: it is
/// opened without blocking (a FIFO without a writer would otherwise block the open) and its
/// type is checked on the open file, so nothing can be swapped in between.
fn open_regular(path: &Path) -> Result<(File, u64), IndexError> {
    let io = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = open_nonblocking(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        return Err(IndexError::NotRegular {
            path: path.to_path_buf(),
            kind: describe(&file_type),
        });
    }
    Ok((file, metadata.len()))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK changes nothing for a regular file, the only kind read.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// What a file that is not a regular one is, for [`IndexError::NotRegular`].
fn describe(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

/// The checksum of an index file (see [`format::checksum`]), read through a fixed buffer. A
/// short file gives some value that cannot match.
fn streamed_checksum(file: &File) -> std::io::Result<u64> {
    let mut reader = file;
    let mut state = format::Checksum::new();
    let mut header = [0u8; format::HEADER_LEN];
    let mut got = 0;
    while got < header.len() {
        match reader.read(&mut header[got..])? {
            0 => return Ok(!0),
            k => got += k,
        }
    }
    state.update(&header[..format::CHECKSUM_AT]);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = reader.read(&mut buf)?;
        if k == 0 {
            break;
        }
        state.update(&buf[..k]);
    }
    Ok(state.value())
}

/// Writes a new file at `path` (replacing it): `fill` writes it through the file, created
/// empty beside `path` as `path` with `.tmp` appended (its path is given too), then it is synced
/// and renamed into place, so a reader never sees a half-written index and a map of the old
/// file stays valid. Every index file is written this way.
pub(crate) fn replace_file<T>(
    path: &Path,
    fill: impl FnOnce(&mut File, &Path) -> std::io::Result<T>,
) -> Result<T, IndexError> {
    let io = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp).map_err(io)?;
    let filled = fill(&mut file, &tmp).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(filled)
}
