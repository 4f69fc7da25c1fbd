//! How many bytes a host reads from a plugin, at most.
//!
//! Every length a plugin reports across the ABI (an [`OwnedBuf`] it fills, a [`StrRef`] it
//! passes to a callback) is checked against one of these limits before the host touches a byte
//! of it: a length past its limit is refused without reading, copying or allocating anything.
//! A plugin that reports a length its buffer does not have breaks the ABI's contract; the host
//! cannot see how long the buffer really is, but it can refuse to read (or allocate) a terabyte
//! because a plugin said so. The limits are far above what an honest plugin sends.

use crate::abi::{OwnedBuf, StrRef};

/// The most bytes a plugin writes while it loads: its manifest (name, version, tools and their
/// schemas), or the error message of `manifest` or `init`: 4 MiB, a thousand tools with large
/// schemas.
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// The most bytes of a call's output (the parts' JSON, or an error message) and of one
/// streamed chunk: 256 MiB, as a worker's frame
/// ([`worker::MAX_FRAME`](crate::worker::MAX_FRAME)), so a plugin meets the same limit in process and
/// isolated.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024 * 1024;

/// The most bytes of one progress message: 64 KiB.
pub const MAX_PROGRESS_BYTES: usize = 64 * 1024;

/// A length a plugin reported that is over its limit: the bytes were not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{len} bytes, over the limit of {limit} bytes")]
pub struct TooLong {
    /// The length the plugin reported.
    pub len: usize,
    /// The limit it passed.
    pub limit: usize,
}

/// The bytes of `buf`, when the length the plugin wrote is within `limit`; otherwise
/// [`TooLong`], and nothing is read.
///
/// # Safety
///
/// As [`OwnedBuf::as_bytes`]: the plugin wrote `buf` (or left it empty) and has not freed it.
pub(crate) unsafe fn owned_bytes(buf: &OwnedBuf, limit: usize) -> Result<&[u8], TooLong> {
    if buf.len > limit && !buf.ptr.is_null() {
        return Err(TooLong {
            len: buf.len,
            limit,
        });
    }
    // SAFETY: the caller's promise; the length is within the limit.
    Ok(unsafe { buf.as_bytes() })
}

/// The bytes of `text`, when the length the plugin passed is within `limit`; otherwise
/// [`TooLong`], and nothing is read.
///
/// # Safety
///
/// As [`StrRef::as_bytes`]: `text` points to `len` readable bytes that stay valid for `'a`.
pub(crate) unsafe fn borrowed_bytes<'a>(text: StrRef, limit: usize) -> Result<&'a [u8], TooLong> {
    if text.len > limit && !text.ptr.is_null() {
        return Err(TooLong {
            len: text.len,
            limit,
        });
    }
    // SAFETY: the caller's promise; the length is within the limit.
    Ok(unsafe { text.as_bytes() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_longer_than_its_limit_is_refused_without_reading_it() {
        static BYTE: u8 = b'x';
        // A length the buffer does not have: reading it would run off the end.
        let lying = OwnedBuf {
            ptr: (&raw const BYTE).cast_mut(),
            len: 1 << 40,
        };
        // SAFETY: the length is over the limit, so no byte is read.
        let read = unsafe { owned_bytes(&lying, 16) };
        assert_eq!(
            read,
            Err(TooLong {
                len: 1 << 40,
                limit: 16
            })
        );
    }

    #[test]
    fn a_text_within_its_limit_is_read_whole() {
        let text = "hello";
        // SAFETY: `text` lives for the whole test.
        let read = unsafe { borrowed_bytes(StrRef::new(text), 5) };
        assert_eq!(read, Ok(&b"hello"[..]));
    }

    #[test]
    fn a_text_past_its_limit_is_refused() {
        let text = "hello";
        // SAFETY: over the limit, nothing is read.
        let read = unsafe { borrowed_bytes(StrRef::new(text), 4) };
        assert_eq!(read, Err(TooLong { len: 5, limit: 4 }));
    }
}
