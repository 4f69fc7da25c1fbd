//! Reading the files a policy consists of: the policy itself, the `.rhai` scripts it names and
//! the JSONL catalogs it names. Every such read goes through [`read_text_file`], so one place
//! decides what may be read.
//!
//! A path in a policy is input like any other: it may name a FIFO (an `open` that never
//! returns), `/dev/zero` (a read that never ends) or a huge sparse file. So a file is opened
//! without blocking, checked with `fstat` to be a regular file no larger than a limit, and
//! read no further than that limit even if it grows meanwhile.

use std::fmt;
use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest policy file or `.rhai` script read: 16 MiB.
pub const MAX_POLICY_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The largest JSONL catalog read: 256 MiB (a catalog of many thousand tools is legitimate).
pub const MAX_CATALOG_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// A file of a policy that cannot be read, and why; its `Display` names the path.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct FileError {
    /// The path as it was opened.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: FileProblem,
}

/// Why a file was not read.
#[derive(Debug)]
#[non_exhaustive]
pub enum FileProblem {
    /// Not a regular file: a directory, a FIFO, a device, a socket.
    NotRegular {
        /// What it is instead, in words ("a named pipe (FIFO)").
        kind: &'static str,
    },
    /// Larger than the limit for this kind of file.
    TooLarge {
        /// The size, in bytes (at least `limit + 1` when the file grew while being read).
        size: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The bytes are not UTF-8 text.
    NotUtf8 {
        /// The byte offset of the first invalid sequence.
        offset: usize,
    },
    /// The operating system refused (missing file, no permission, ...); shown as that error.
    Io(std::io::Error),
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileProblem::NotRegular { kind } => {
                write!(
                    f,
                    "it is {kind}, not a regular file; only regular files are read"
                )
            }
            FileProblem::TooLarge { size, limit } => write!(
                f,
                "it is {size} bytes, more than the limit of {limit} bytes ({} MiB)",
                limit / (1024 * 1024)
            ),
            FileProblem::NotUtf8 { offset } => {
                write!(f, "it is not UTF-8 text (invalid byte at offset {offset})")
            }
            FileProblem::Io(error) => write!(f, "{error}"),
        }
    }
}

/// A [`FileProblem::Io`] is the operating system's error itself: its `Display` is that
/// error's, so `source()` goes on to what lies beneath it rather than repeating it.
impl std::error::Error for FileProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileProblem::Io(error) => error.source(),
            _ => None,
        }
    }
}

/// Reads the UTF-8 text file at `path`, refusing anything that is not a regular file of at most
/// `limit` bytes. A FIFO is refused at once: it is opened without blocking, and its type is
/// checked on the open file (so it cannot be swapped in between a check and the open).
///
/// # Errors
///
/// A [`FileError`] naming `path`: not a regular file, larger than `limit`, not UTF-8, or an I/O
/// error.
///
/// ```
/// use toolgate_policy::{read_text_file, FileProblem, MAX_POLICY_FILE_BYTES};
///
/// let err = read_text_file("/dev/zero".as_ref(), MAX_POLICY_FILE_BYTES).unwrap_err();
/// assert!(matches!(err.problem, FileProblem::NotRegular { .. }));
/// ```
pub fn read_text_file(path: &Path, limit: u64) -> Result<String, FileError> {
    let fail = |problem| FileError {
        path: path.to_path_buf(),
        problem,
    };
    let file = open_nonblocking(path).map_err(|e| fail(FileProblem::Io(e)))?;
    let metadata = file.metadata().map_err(|e| fail(FileProblem::Io(e)))?;
    check_metadata(&metadata, limit).map_err(fail)?;
    // The size was checked, but the file may grow: read one byte past the limit at most.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(FileProblem::Io(e)))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(fail(FileProblem::TooLarge { size: read, limit }));
    }
    String::from_utf8(bytes).map_err(|e| {
        fail(FileProblem::NotUtf8 {
            offset: e.utf8_error().valid_up_to(),
        })
    })
}

/// Checks, without opening it, that `path` is a regular file of at most `limit` bytes. For
/// files the policy names but the engine reads later (catalogs), so that `validate` reports
/// them at their line; the later read goes through [`read_text_file`] again.
///
/// # Errors
///
/// As [`read_text_file`], except that the content is not looked at.
pub(crate) fn check_text_file(path: &Path, limit: u64) -> Result<(), FileError> {
    let fail = |problem| FileError {
        path: path.to_path_buf(),
        problem,
    };
    let metadata = std::fs::metadata(path).map_err(|e| fail(FileProblem::Io(e)))?;
    check_metadata(&metadata, limit).map_err(fail)
}

fn check_metadata(metadata: &Metadata, limit: u64) -> Result<(), FileProblem> {
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        return Err(FileProblem::NotRegular {
            kind: describe(&file_type),
        });
    }
    if metadata.len() > limit {
        return Err(FileProblem::TooLarge {
            size: metadata.len(),
            limit,
        });
    }
    Ok(())
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    // It changes nothing for a regular file, the only kind read.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

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
