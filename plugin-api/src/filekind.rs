//! How a file that is not a regular file is named in messages, for the host's library checks
//! and for plugins that read files: both refuse such files and say what they found.

use std::fs::FileType;

/// What kind of non-regular file `kind` is, with its article: `"a directory"`,
/// `"a FIFO (named pipe)"`, `"a character device"`, `"a block device"`, `"a socket"`, or
/// `"not a regular file"` for anything else (and for a regular file, which callers check first).
pub fn non_regular_kind(kind: &FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}
