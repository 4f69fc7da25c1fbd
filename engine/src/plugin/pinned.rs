//! `sha256:` pins without a gap between the check and the load.
//!
//! On Linux the library is read once, through one descriptor opened without following a FIFO
//! into a block; those bytes are hashed and, when they match the pin, copied into a sealed
//! anonymous file (`memfd_create`, sealed against writing, growing and shrinking). The loader
//! then opens `/proc/self/fd/N` of that file: exactly the bytes that were hashed, whatever
//! happens to the file on disk afterwards. A worker (`isolation: process`) inherits the sealed
//! file and loads it the same way, at its first start and at every restart.
//!
//! Elsewhere the file is hashed, then loaded by its path: a library replaced between the two is
//! not caught (docs/plugins.md says so).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::PluginError;

/// A library whose bytes matched their pin, ready to load.
#[derive(Debug)]
pub(crate) struct PinnedLibrary {
    /// What the loader opens: `/proc/self/fd/N` of the sealed copy (Linux), or the file.
    load_path: PathBuf,
    /// The sealed copy; it lives as long as the pin (a worker restart loads it again).
    #[cfg(target_os = "linux")]
    sealed: std::os::fd::OwnedFd,
}

impl PinnedLibrary {
    /// The path to hand to the loader.
    pub(crate) fn load_path(&self) -> &Path {
        &self.load_path
    }

    /// Keeps the sealed copy open for the life of the process, for a library loaded in it:
    /// the loader knows a library by the name it was opened with, so `/proc/self/fd/N` must
    /// never name another library later (libraries are never unloaded either).
    pub(crate) fn keep_forever(self: Arc<Self>) {
        std::mem::forget(self);
    }

    /// The descriptor a worker must inherit for [`PinnedLibrary::load_path`] to name the sealed
    /// copy in it too (the same number in the child), if there is one.
    pub(crate) fn inherited_fd(&self) -> Option<std::os::fd::RawFd> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            Some(self.sealed.as_raw_fd())
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }
}

/// The SHA-256 of a file, as 64 lowercase hex digits: what a policy's `sha256:` pins.
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    use sha2::Digest;
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Bytes as lowercase hex digits.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut hex = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The SHA-256 of `bytes`, as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// Reads the library at `path` once and checks its bytes against `expected` (hex, any case);
/// on a match, returns what loads exactly those bytes.
#[cfg(target_os = "linux")]
pub(crate) fn pin(path: &Path, expected: &str) -> Result<PinnedLibrary, PluginError> {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::OpenOptionsExt;

    let unreadable = |source: std::io::Error| PluginError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(unreadable)?;
    if !file.metadata().map_err(unreadable)?.is_file() {
        return Err(unreadable(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(unreadable)?;
    drop(file);
    let found = sha256_hex(&bytes);
    if !found.eq_ignore_ascii_case(expected) {
        return Err(PluginError::HashMismatch {
            expected: expected.to_string(),
            found,
        });
    }
    let sealing = |source: std::io::Error| PluginError::Sealing {
        path: path.to_path_buf(),
        source,
    };
    // SAFETY: a valid C string; the flags are memfd_create's.
    let fd = unsafe {
        libc::memfd_create(
            c"toolgate-pinned-plugin".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(sealing(std::io::Error::last_os_error()));
    }
    // SAFETY: a new descriptor that nothing else owns.
    let sealed = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut copy = std::fs::File::from(sealed);
    std::io::Write::write_all(&mut copy, &bytes).map_err(sealing)?;
    let sealed = OwnedFd::from(copy);
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on our own descriptor.
    if unsafe { libc::fcntl(sealed.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(sealing(std::io::Error::last_os_error()));
    }
    Ok(PinnedLibrary {
        load_path: PathBuf::from(format!("/proc/self/fd/{}", sealed.as_raw_fd())),
        sealed,
    })
}

/// Hashes the library at `path` and checks it against `expected`; the library is then loaded
/// by its path (no sealed copy on this platform).
#[cfg(not(target_os = "linux"))]
pub(crate) fn pin(path: &Path, expected: &str) -> Result<PinnedLibrary, PluginError> {
    let found = hash_file(path).map_err(|source| PluginError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    if !found.eq_ignore_ascii_case(expected) {
        return Err(PluginError::HashMismatch {
            expected: expected.to_string(),
            found,
        });
    }
    Ok(PinnedLibrary {
        load_path: path.to_path_buf(),
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_sealed_copy_keeps_the_hashed_bytes_after_the_file_changes() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("lib.so");
        std::fs::write(&path, b"first bytes").expect("written");
        let pinned = pin(&path, &sha256_hex(b"first bytes")).expect("pinned");
        std::fs::write(&path, b"other bytes, longer").expect("rewritten");
        let loaded = std::fs::read(pinned.load_path()).expect("the sealed copy reads");
        assert_eq!(loaded, b"first bytes");
    }

    #[test]
    fn the_sealed_copy_cannot_be_written() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("lib.so");
        std::fs::write(&path, b"bytes").expect("written");
        let pinned = pin(&path, &sha256_hex(b"bytes")).expect("pinned");
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .open(pinned.load_path());
        let written = opened.and_then(|mut f| std::io::Write::write_all(&mut f, b"X"));
        assert!(written.is_err(), "a write to the sealed copy succeeded");
    }

    #[test]
    fn a_fifo_is_refused_as_not_a_regular_file_without_blocking() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("fifo.so");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let err = pin(&path, &"0".repeat(64)).expect_err("a FIFO is refused");
        assert!(
            matches!(&err, PluginError::Unreadable { source, .. } if source.to_string().contains("not a regular file")),
            "{err:?}"
        );
    }
}
