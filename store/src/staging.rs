//! The files a local-disk backend stages writes in.
//!
//! `object_store`'s `LocalFileSystem` writes an object `NAME` to `NAME#N` (`N` a number) first and
//! renames it into place when the write is complete. A process killed during the write leaves
//! `NAME#N` behind, as large as what it had written, and the backend's listing hides such files, so
//! only a look at the directory finds them. No key of this store contains `#`, so every such file
//! under the store's directory is a staged write.

use std::io;
use std::path::Path;
use std::time::SystemTime;

/// Whether `name` is that of a staged write: `NAME#N` with `N` all digits.
pub(crate) fn is_staged(name: &str) -> bool {
    match name.rsplit_once('#') {
        Some((object, n)) => {
            !object.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// Deletes the staged writes under `dir` (recursively, not following symbolic links) last modified
/// before `cutoff` (`None`: any time), and returns how many. A missing `dir`, or a file that went away meanwhile (its
/// write completed or another pruner took it), is not an error.
pub(crate) fn delete_stale(dir: &Path, cutoff: Option<SystemTime>) -> io::Result<u64> {
    let mut removed = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(with_path(e, &dir)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| with_path(e, &dir))?;
            let path = entry.path();
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(with_path(e, &path)),
            };
            if meta.is_dir() {
                todo.push(path);
                continue;
            }
            let staged = meta.is_file() && entry.file_name().to_str().is_some_and(is_staged);
            let old = || -> io::Result<bool> {
                Ok(cutoff.is_none_or(|c| meta.modified().is_ok_and(|m| m < c)))
            };
            if staged && old()? {
                match std::fs::remove_file(&path) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(with_path(e, &path)),
                }
            }
        }
    }
    Ok(removed)
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_writes_are_names_ending_in_a_hash_and_digits() {
        for name in ["0123abcd#1", "r_1#12", "x#007"] {
            assert!(is_staged(name), "{name}");
        }
        for name in ["0123abcd", "r_1", "#1", "x#", "x#1a", "x#-1"] {
            assert!(!is_staged(name), "{name}");
        }
    }
}
