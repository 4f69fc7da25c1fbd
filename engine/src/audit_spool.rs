//! The spool of `audit.sink: object_store` (`audit.spool`): each audit line is appended to a
//! local file as its call ends, before the call is answered, and stays there until the batch
//! that holds it is in the store. A process that is killed (SIGKILL, the OOM killer, a crash)
//! loses no line of a call it answered: the next process that opens the same folder ships the
//! lines it finds there.
//!
//! # Layout
//!
//! In the folder, a writer (one audit log: one process, or one policy of a process that
//! reloads) has
//!
//! | file | content |
//! |---|---|
//! | `<writer>.lock` | empty; the writer holds an exclusive `flock` on it while it lives |
//! | `<writer>-<segment>.jsonl` | the lines it spooled, in order; a new segment every [`SEGMENT_BYTES`] |
//!
//! A segment is deleted once every line in it was written to the store (or dropped, counted
//! in a `lost_lines` record); the last segment is emptied instead. A clean close deletes the
//! writer's files.
//!
//! # Recovery
//!
//! When a writer opens the folder it looks at every other writer's lock file: one it can lock
//! belongs to a writer that is gone (the kernel releases a dead process's locks), so it adopts
//! that writer's segments: it reads their lines, appends them to its own spool and its buffer,
//! then deletes the dead writer's files. A line is shipped at least once: a writer killed after
//! a batch reached the store but before its segment was deleted has that batch shipped again by
//! the next writer (a reader that must count exactly can drop lines that are the same in every
//! byte: each holds its call's time to the millisecond, session, call id and digest).
//!
//! Lines reach the file with one `write` each and no `fsync`: a killed process loses nothing
//! (the kernel holds what was written), a machine that loses power can lose what the kernel
//! had not written to disk yet.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A segment that holds this many bytes is closed and a new one started.
pub(crate) const SEGMENT_BYTES: u64 = 1024 * 1024;

/// One file of spooled lines.
struct Segment {
    path: PathBuf,
    file: File,
    /// Bytes written to it.
    bytes: u64,
    /// The sequence number of the last line written to it (`None`: none yet).
    last: Option<u64>,
}

/// The spool of one writer.
pub(crate) struct Spool {
    dir: PathBuf,
    name: String,
    /// Holds the writer's `flock` while the spool lives.
    lock: File,
    /// Full segments, oldest first.
    full: VecDeque<Segment>,
    current: Segment,
    next_segment: u64,
    /// Lines that could not be spooled since the last one that was.
    failed: u64,
}

/// Lines a writer that is gone left in the folder, adopted by this one.
pub(crate) struct Orphans {
    /// The lines, oldest first, each with its newline.
    pub(crate) lines: Vec<String>,
    /// Lines cut short (a write that did not finish), not adopted.
    pub(crate) torn: u64,
    /// The dead writers' files, deleted once their lines are in this writer's spool.
    files: Vec<PathBuf>,
    /// The dead writers' locks, held until their files are deleted.
    _locks: Vec<File>,
}

impl Orphans {
    /// Deletes the dead writers' files: their lines are in this writer's spool now.
    pub(crate) fn forget(self) {
        for path in &self.files {
            if let Err(e) = std::fs::remove_file(path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!("audit spool: cannot delete {}: {e}", path.display());
            }
        }
    }
}

impl Spool {
    /// Opens (creating it) the spool folder `dir` for the writer `name`, and adopts what
    /// writers that are gone left there.
    pub(crate) fn open(dir: &Path, name: &str) -> std::io::Result<(Spool, Orphans)> {
        std::fs::create_dir_all(dir)?;
        let lock_path = dir.join(format!("{name}.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)?;
        lock.try_lock().map_err(|e| match e {
            std::fs::TryLockError::Error(e) => e,
            std::fs::TryLockError::WouldBlock => std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} is locked by another writer", lock_path.display()),
            ),
        })?;
        let orphans = adopt(dir, name)?;
        let current = Segment::create(dir, name, 0)?;
        Ok((
            Spool {
                dir: dir.to_path_buf(),
                name: name.to_owned(),
                lock,
                full: VecDeque::new(),
                current,
                next_segment: 1,
                failed: 0,
            },
            orphans,
        ))
    }

    /// Appends `line` (with its newline), the line numbered `seq`. A line that cannot be
    /// spooled (a full disk) is still in memory: it is written to the store unless the process
    /// dies first; the first failure of a run and every 1000th is logged.
    pub(crate) fn append(&mut self, seq: u64, line: &str) {
        if self.current.bytes >= SEGMENT_BYTES {
            match Segment::create(&self.dir, &self.name, self.next_segment) {
                Ok(next) => {
                    self.next_segment += 1;
                    let full = std::mem::replace(&mut self.current, next);
                    self.full.push_back(full);
                }
                Err(e) => tracing::warn!("audit spool: cannot start a new segment: {e}"),
            }
        }
        match self.current.file.write_all(line.as_bytes()) {
            Ok(()) => {
                self.current.bytes += line.len() as u64;
                self.current.last = Some(seq);
                self.failed = 0;
            }
            Err(e) => {
                self.failed += 1;
                if self.failed == 1 || self.failed.is_multiple_of(1000) {
                    tracing::warn!(
                        failed = self.failed,
                        "audit spool: a line could not be spooled to {}, it is kept in memory \
                         only: {e}",
                        self.current.path.display()
                    );
                }
            }
        }
    }

    /// Lets go of every line numbered below `oldest` (`None`: of every line): they are in the
    /// store, or were dropped. Segments that hold nothing else are deleted; the current one is
    /// emptied once all its lines are let go.
    pub(crate) fn release(&mut self, oldest: Option<u64>) {
        let done = |segment: &Segment| match (segment.last, oldest) {
            (None, _) | (Some(_), None) => true,
            (Some(last), Some(oldest)) => last < oldest,
        };
        while self.full.front().is_some_and(done) {
            if let Some(segment) = self.full.pop_front() {
                let _ = std::fs::remove_file(&segment.path);
            }
        }
        if self.full.is_empty() && self.current.bytes > 0 && done(&self.current) {
            match self.current.file.set_len(0) {
                Ok(()) => {
                    self.current.bytes = 0;
                    self.current.last = None;
                }
                Err(e) => tracing::warn!(
                    "audit spool: cannot empty {}: {e}",
                    self.current.path.display()
                ),
            }
        }
    }

    /// The writer closes with every line in the store: deletes its files.
    pub(crate) fn remove(self) {
        for segment in self.full.iter().chain(std::iter::once(&self.current)) {
            let _ = std::fs::remove_file(&segment.path);
        }
        let _ = std::fs::remove_file(self.dir.join(format!("{}.lock", self.name)));
        drop(self.lock);
    }

    /// The folder, for messages.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Segment {
    fn create(dir: &Path, name: &str, number: u64) -> std::io::Result<Segment> {
        let path = dir.join(format!("{name}-{number:08}.jsonl"));
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Segment {
            path,
            file,
            bytes: 0,
            last: None,
        })
    }
}

/// Reads the segments of every writer in `dir` other than `name` whose lock is free.
fn adopt(dir: &Path, name: &str) -> std::io::Result<Orphans> {
    let mut orphans = Orphans {
        lines: Vec::new(),
        torn: 0,
        files: Vec::new(),
        _locks: Vec::new(),
    };
    let mut writers: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|entry| {
            let file = entry.ok()?.file_name().into_string().ok()?;
            Some(file.strip_suffix(".lock")?.to_owned())
        })
        .filter(|writer| writer != name)
        .collect();
    writers.sort();
    for writer in writers {
        let lock_path = dir.join(format!("{writer}.lock"));
        let Ok(lock) = OpenOptions::new().write(true).open(&lock_path) else {
            continue;
        };
        if lock.try_lock().is_err() {
            // A writer that lives (in this process or another) holds it.
            continue;
        }
        let prefix = format!("{writer}-");
        let mut segments: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let file = path.file_name()?.to_str()?;
                (file.starts_with(&prefix) && file.ends_with(".jsonl")).then_some(path)
            })
            .collect();
        // Segment numbers have eight digits and more only past 10^8 segments: by name is in order.
        segments.sort();
        for segment in &segments {
            let text = match std::fs::read(segment) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    tracing::warn!("audit spool: cannot read {}: {e}", segment.display());
                    continue;
                }
            };
            for line in text.split_inclusive('\n') {
                if line.ends_with('\n') {
                    orphans.lines.push(line.to_owned());
                } else {
                    orphans.torn += 1;
                }
            }
        }
        tracing::info!(
            writer = %writer,
            lines = orphans.lines.len(),
            "audit spool: adopting the lines of a writer that is gone"
        );
        orphans.files.extend(segments);
        orphans.files.push(lock_path);
        orphans._locks.push(lock);
    }
    Ok(orphans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn lines_let_go_leave_an_empty_segment_and_a_clean_close_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, orphans) = Spool::open(dir.path(), "w1").unwrap();
        assert!(orphans.lines.is_empty());
        spool.append(0, "a\n");
        spool.append(1, "b\n");
        spool.release(Some(1));
        // Line 1 is still pending: the segment keeps both.
        let text = std::fs::read_to_string(dir.path().join("w1-00000000.jsonl")).unwrap();
        assert_eq!(text, "a\nb\n");
        spool.release(None);
        let text = std::fs::read_to_string(dir.path().join("w1-00000000.jsonl")).unwrap();
        assert_eq!(text, "");
        spool.remove();
        assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    }

    #[test]
    fn a_writer_adopts_the_lines_of_one_that_is_gone_but_not_of_one_that_lives() {
        let dir = tempfile::tempdir().unwrap();
        let (mut gone, _) = Spool::open(dir.path(), "gone").unwrap();
        gone.append(0, "one\n");
        gone.append(1, "two\n");
        // A write cut short by the kill.
        gone.current.file.write_all(b"{\"tor").unwrap();
        // Dropping the spool without `remove` is what a kill leaves: files, no lock.
        drop(gone);
        let (mut lives, _) = Spool::open(dir.path(), "lives").unwrap();
        lives.append(0, "kept\n");
        let (_heir, orphans) = Spool::open(dir.path(), "heir").unwrap();
        assert_eq!(orphans.lines, ["one\n", "two\n"]);
        assert_eq!(orphans.torn, 1);
        orphans.forget();
        let left = files(dir.path());
        assert!(!left.iter().any(|f| f.starts_with("gone")), "{left:?}");
        assert!(
            left.contains(&"lives-00000000.jsonl".to_owned()),
            "{left:?}"
        );
    }
}
