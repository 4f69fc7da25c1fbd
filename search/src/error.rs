//! Why an index could not be built, written or opened.
//!
//! Every variant about a file names it. The variants about a file that is not a usable index
//! (everything but [`IndexError::Io`]) all read "index file PATH is not a usable toolgate search
//! index: ..." and say what is wrong in fields a caller can match on: the version found and the
//! one expected, the section that lies outside the file and where, what the check of the term
//! dictionary and postings found ([`Damage`]). As everywhere in toolgate, `Display` does not
//! repeat what `source()` returns: print the chain to see the I/O or `fst` error underneath.

use std::fmt;
use std::path::{Path, PathBuf};

/// An error building, writing or opening an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// Two tools have the same name.
    #[error("duplicate tool name '{0}': tool names must be unique")]
    DuplicateName(String),
    /// A tool has an empty name.
    #[error("a tool has an empty name")]
    EmptyName,
    /// More tools than an index numbers (tool numbers are `u32`).
    #[error("{count} tools are more than an index holds (at most {})", u32::MAX)]
    TooManyTools {
        /// How many tools were given.
        count: usize,
    },
    /// The tools' records come to more than the 4 GiB an index addresses.
    #[error("the tools' records take {bytes} bytes, more than an index holds (under 4 GiB)")]
    RecordsTooLarge {
        /// How many bytes they take.
        bytes: u64,
    },
    /// The term dictionary could not be built.
    #[error("building the term dictionary failed")]
    Fst(#[from] fst::Error),
    /// Reading or writing the index file failed.
    #[error("index file {path}")]
    Io {
        /// The index file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The path is not a regular file (a FIFO, a device, a directory): an index is never read
    /// from one, since a FIFO would block and a device never ends.
    #[error("index file {path} is {kind}, not a regular file")]
    NotRegular {
        /// The index file.
        path: PathBuf,
        /// What it is instead (`a named pipe (FIFO)`, `a character device`, ...).
        kind: &'static str,
    },
    /// The file is shorter than the header.
    #[error(
        "index file {path} is not a usable toolgate search index: it is {len} bytes, shorter than the {header} byte header"
    )]
    TooShort {
        /// The index file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The header's length.
        header: u64,
    },
    /// The file does not start with the index magic bytes: it is not an index.
    #[error(
        "index file {path} is not a usable toolgate search index: wrong magic bytes (not an index file)"
    )]
    BadMagic {
        /// The index file.
        path: PathBuf,
    },
    /// The file is an index of another format version.
    #[error(
        "index file {path} is not a usable toolgate search index: format version {found}, this build reads version {expected}: rebuild the index"
    )]
    UnsupportedVersion {
        /// The index file.
        path: PathBuf,
        /// The version this build reads.
        expected: u32,
        /// The version the file has.
        found: u32,
    },
    /// The file's length is not the one its header records.
    #[error(
        "index file {path} is not a usable toolgate search index: the file is {actual} bytes, its header says {stated} (truncated or extended)"
    )]
    LengthMismatch {
        /// The index file.
        path: PathBuf,
        /// The length the header records.
        stated: u64,
        /// The file's length.
        actual: u64,
    },
    /// The checksum over the file is not the one its header records.
    #[error(
        "index file {path} is not a usable toolgate search index: checksum mismatch (the file is corrupted)"
    )]
    ChecksumMismatch {
        /// The index file.
        path: PathBuf,
        /// The checksum the header records.
        stored: u64,
        /// The checksum of the bytes.
        computed: u64,
    },
    /// A section the header lists does not lie inside the file (after the header).
    #[error(
        "index file {path} is not a usable toolgate search index: the {section} section (offset {offset}, {len} bytes) lies outside the {file_len} byte file (truncated?)"
    )]
    SectionOutOfBounds {
        /// The index file.
        path: PathBuf,
        /// Which section.
        section: Section,
        /// Its offset from the start of the file, as the header says.
        offset: u64,
        /// Its length, as the header says.
        len: u64,
        /// The file's length.
        file_len: u64,
    },
    /// A per-tool table does not have one entry per tool.
    #[error(
        "index file {path} is not a usable toolgate search index: the {section} table is {len} bytes, not the {expected} of {tools} tools"
    )]
    TableSize {
        /// The index file.
        path: PathBuf,
        /// Which table.
        section: Section,
        /// Its length.
        len: u64,
        /// The length `tools` tools take.
        expected: u64,
        /// The tool count of the header.
        tools: u64,
    },
    /// The term dictionary is not an fst map.
    #[error("index file {path} is not a usable toolgate search index: bad term dictionary")]
    Dictionary {
        /// The index file.
        path: PathBuf,
        /// What `fst` found.
        #[source]
        source: fst::Error,
    },
    /// The term dictionary or the postings decode, but not as the builder writes them (a file
    /// crafted with a valid checksum, say): see [`Damage`].
    #[error(
        "index file {path} is not a usable toolgate search index: bad term dictionary or postings: {damage}"
    )]
    Damaged {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        damage: Damage,
    },
}

impl IndexError {
    /// The index file the error is about; `None` for errors building an index.
    pub fn path(&self) -> Option<&Path> {
        match self {
            IndexError::DuplicateName(_)
            | IndexError::EmptyName
            | IndexError::TooManyTools { .. }
            | IndexError::RecordsTooLarge { .. }
            | IndexError::Fst(_) => None,
            IndexError::Io { path, .. }
            | IndexError::NotRegular { path, .. }
            | IndexError::TooShort { path, .. }
            | IndexError::BadMagic { path }
            | IndexError::UnsupportedVersion { path, .. }
            | IndexError::LengthMismatch { path, .. }
            | IndexError::ChecksumMismatch { path, .. }
            | IndexError::SectionOutOfBounds { path, .. }
            | IndexError::TableSize { path, .. }
            | IndexError::Dictionary { path, .. }
            | IndexError::Damaged { path, .. } => Some(path),
        }
    }
}

/// A section of an index file (see the format in `format.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// The term dictionary: an fst map from each stem to its postings list.
    Terms,
    /// The postings lists.
    Postings,
    /// One offset per tool into the tool records.
    ToolOffsets,
    /// The stored tools.
    ToolRecords,
    /// The length of each tool's name field, one byte per tool.
    NameLengths,
    /// The re-ranking vocabulary: an fst map from each stem of the tools' re-ranking words to
    /// its number.
    RerankTerms,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Terms => "term dictionary",
            Section::Postings => "postings",
            Section::ToolOffsets => "tool offsets",
            Section::ToolRecords => "tool records",
            Section::NameLengths => "name lengths",
            Section::RerankTerms => "re-ranking vocabulary",
        })
    }
}

/// What the check of an opened file's term dictionary and postings found: they decode, but not
/// as the builder writes them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Damage {
    /// Decoding the dictionary made the `fst` library panic, with this message (caught: a
    /// crafted file never crashes the process).
    Panic(String),
    /// A node other than the root has no transitions and is not final.
    DeadEnd {
        /// The node's address.
        node: usize,
    },
    /// A transition points to the node itself or to a later address (a cycle is possible).
    ForwardLink {
        /// The node's address.
        node: usize,
        /// The address it points to.
        target: usize,
    },
    /// The terms are longer in all than the stored tools' text could give.
    TermsTooLong,
    /// A postings list does not start where the previous one ends.
    Misplaced {
        /// The term.
        term: String,
        /// Where the dictionary says its list starts.
        offset: u64,
        /// Where the previous list ends.
        expected: u64,
    },
    /// A postings list runs past the end of the section.
    Overrun {
        /// The term.
        term: String,
    },
    /// A postings list names a tool number the index does not have.
    ToolOutOfRange {
        /// The term.
        term: String,
        /// The tool number.
        tool: u32,
        /// The tool count.
        tools: usize,
    },
    /// A postings list's tool numbers do not ascend strictly (format 4; the gaps of format 5
    /// cannot express it).
    Unordered {
        /// The term.
        term: String,
    },
    /// A block of a postings list does not decode.
    BadBlock {
        /// The term.
        term: String,
        /// The block's number in the list, from 0.
        block: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The postings lists end before the end of their section.
    Tail {
        /// Where the last list ends.
        end: usize,
        /// The section's length.
        len: usize,
    },
    /// The tool records' head (block size, block count, texts' dictionary, block offsets)
    /// does not describe the section.
    RecordsHead {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A tool's front-coded name does not decode (see `names.rs`).
    BadName {
        /// The tool number.
        tool: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The dictionary holds another number of terms than it says.
    TermCount {
        /// The terms found.
        found: usize,
        /// The count it records.
        stated: usize,
    },
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Panic(message) => write!(f, "the dictionary does not decode: {message}"),
            Damage::DeadEnd { node } => write!(f, "the node at {node} leads to no term"),
            Damage::ForwardLink { node, target } => {
                write!(f, "the node at {node} points forward, to {target}")
            }
            Damage::TermsTooLong => f.write_str("the terms are longer in all than the tools' text"),
            Damage::Misplaced {
                term,
                offset,
                expected,
            } => write!(
                f,
                "the postings of term {term:?} are said to start at byte {offset}, expected {expected}"
            ),
            Damage::Overrun { term } => {
                write!(
                    f,
                    "the postings list of term {term:?} runs past the section"
                )
            }
            Damage::ToolOutOfRange { term, tool, tools } => write!(
                f,
                "the postings of term {term:?} name tool {tool}, past the {tools} tools"
            ),
            Damage::Unordered { term } => write!(
                f,
                "the postings of term {term:?} are not in ascending tool order"
            ),
            Damage::BadBlock {
                term,
                block,
                reason,
            } => write!(
                f,
                "block {block} of the postings of term {term:?} does not decode: {reason}"
            ),
            Damage::Tail { end, len } => write!(
                f,
                "the postings lists end at byte {end} of a {len} byte section"
            ),
            Damage::RecordsHead { reason } => {
                write!(f, "the head of the tool records is wrong: {reason}")
            }
            Damage::BadName { tool, reason } => {
                write!(f, "the name of tool {tool} does not decode: {reason}")
            }
            Damage::TermCount { found, stated } => {
                write!(f, "it holds {found} terms but says {stated}")
            }
        }
    }
}
