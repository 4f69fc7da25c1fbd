//! `fs.read_file`: a text file by lines, in pages, within a byte cap.

use std::fs::{self, File};
use std::io::Read;

use serde::Deserialize;
use toolgate_plugin_api::{CallContext, ToolError, ToolOutput};

use crate::note::push_note;
use crate::root::{FsState, Resolved};

/// Lines `fs.read_file` returns when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// The most lines one `fs.read_file` call returns.
pub const MAX_READ_LINES: usize = 10_000;
/// The most bytes of file content one `fs.read_file` call returns.
pub const MAX_READ_BYTES: usize = 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadFileArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

pub(crate) fn read_file(
    ctx: &CallContext<FsState>,
    args: ReadFileArgs,
) -> Result<ToolOutput, ToolError> {
    let offset = args.offset.unwrap_or(1);
    if offset == 0 {
        return Err(ToolError::new("offset is a line number and starts at 1"));
    }
    let limit = args.limit.unwrap_or(DEFAULT_READ_LINES);
    if limit == 0 || limit > MAX_READ_LINES {
        return Err(ToolError::new(format!(
            "limit must be between 1 and {MAX_READ_LINES} lines"
        )));
    }
    let file = ctx.state().resolve(&args.path)?;
    let mut reader = open_regular(ctx.state(), &file)?;
    let mut chunk = vec![0_u8; READ_CHUNK];
    let mut content = Vec::new();
    // Lines begun so far; the one being read is number `lines` when `in_line`.
    let mut lines = 0_usize;
    let mut in_line = false;
    // Whole lines kept; whether the cap cut the text, and whether more follows.
    let mut taken = 0_usize;
    let mut cut = false;
    let mut more = false;
    'read: loop {
        ctx.check_cancelled()?;
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err.into()),
        };
        let mut rest = &chunk[..read];
        while !rest.is_empty() {
            if !in_line {
                lines += 1;
                in_line = true;
                if lines >= offset && taken == limit {
                    more = true;
                    break 'read;
                }
            }
            let (piece, ends_line) = match rest.iter().position(|&b| b == b'\n') {
                Some(newline) => (&rest[..=newline], true),
                None => (rest, false),
            };
            rest = &rest[piece.len()..];
            if lines >= offset {
                let room = MAX_READ_BYTES - content.len();
                if piece.len() > room {
                    content.extend_from_slice(&piece[..room]);
                    cut = true;
                    more = true;
                    break 'read;
                }
                content.extend_from_slice(piece);
                if ends_line {
                    taken += 1;
                }
            }
            if ends_line {
                in_line = false;
            }
        }
    }
    if in_line && !more && lines >= offset {
        // The last line has no newline.
        taken += 1;
    }
    if taken == 0 && !more && offset > 1 {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {}, which has {lines} lines",
            file.shown
        )));
    }
    if cut {
        // Do not leave half a character at the cut.
        if let Err(err) = std::str::from_utf8(&content)
            && err.error_len().is_none()
        {
            content.truncate(err.valid_up_to());
        }
    }

    let mut text = match String::from_utf8(content) {
        Ok(text) => text,
        Err(err) => {
            let mut text = String::from_utf8_lossy(err.as_bytes()).into_owned();
            push_note(
                &mut text,
                "[note: the file is not valid UTF-8; invalid bytes are shown as U+FFFD]",
            );
            text
        }
    };
    if cut && taken == 0 {
        push_note(
            &mut text,
            &format!(
                "[line {offset} is longer than the {MAX_READ_BYTES} bytes one call returns; this \
                 is its beginning]"
            ),
        );
    } else if more {
        let last = offset + taken;
        push_note(
            &mut text,
            &format!(
                "[showing lines {offset}-{}; more follow: continue with offset={last}]",
                last - 1
            ),
        );
    }
    Ok(ToolOutput::text(text))
}

/// How many bytes `fs.read_file` reads at a time: memory stays bounded by the cap and this,
/// whatever the length of a line, and cancellation is checked between chunks.
const READ_CHUNK: usize = 64 * 1024;

/// Opens a file for reading if it is a regular file; a directory, FIFO, device or socket is
/// refused. The type is checked with `stat` before opening (opening a FIFO blocks until a
/// writer comes), the file is opened non-blocking, and checked again on the open file in case
/// the path was swapped in between; a file that gained a hard link since it was resolved is
/// refused there too.
fn open_regular(state: &FsState, file: &Resolved) -> Result<File, ToolError> {
    let meta = fs::metadata(&file.path)?;
    not_regular(&meta.file_type(), &file.shown)?;
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let opened = options.open(&file.path)?;
    let meta = opened.metadata()?;
    not_regular(&meta.file_type(), &file.shown)?;
    state.check_links(&meta, &file.shown)?;
    Ok(opened)
}

/// An error unless `kind` is a regular file.
fn not_regular(kind: &fs::FileType, shown: &str) -> Result<(), ToolError> {
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(ToolError::new(format!(
            "{shown} is a directory; use fs.list_dir to see what it holds"
        )));
    }
    let what = toolgate_plugin_api::non_regular_kind(kind);
    Err(ToolError::new(format!(
        "{shown} is {what}; fs.read_file reads only regular files"
    )))
}
