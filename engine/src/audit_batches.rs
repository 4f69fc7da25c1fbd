//! `audit.sink: object_store` (L7): audit lines written in batches, each batch one JSON-lines
//! object under the store's prefix, `YYYY/MM/DD/<time>-<writer>-<sequence>.jsonl`.
//!
//! A call only appends its line to a bounded buffer in memory; a thread of the audit log writes
//! the buffer out when it holds `batch_lines` lines or `batch_bytes` bytes, or `batch_interval`
//! after its oldest line. While the store fails, the lines stay in the buffer and the batch is
//! tried again (backing off up to `batch_interval`); past `max_buffered_lines` the oldest lines
//! are dropped (the batch being written is out of the buffer: at most `max_buffered_lines` +
//! `batch_lines` lines are held), each drop is counted and warned about, and the next batch written starts with a
//! `{"lost_lines": N}` record. When the audit log closes (its engine is dropped: `serve`
//! stopping, a reload replacing the engine), the buffer is written out before the thread ends;
//! a batch that still cannot be written then stays in the spool, if there is one (else it is
//! reported as lost in the log).
//!
//! With a spool (`audit.spool`, the `audit_spool` module) each line is also appended to a local
//! file as it is pushed, before its call is answered, and let go once its batch is written:
//! the lines of a process that is killed are shipped by the next one that opens the folder.

use std::collections::VecDeque;
use std::path::Path as FsPath;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use toolgate_policy::AuditSettings;

use crate::audit_spool::Spool;
use crate::error::BuildError;

/// The longest one batch's write may take before it counts as failed.
const PUT_TIMEOUT: Duration = Duration::from_secs(30);

/// The batches of one audit log.
pub(crate) struct Batches {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<Buffer>,
    wake: Condvar,
    max_lines: usize,
}

#[derive(Default)]
struct Buffer {
    /// Lines not written yet, oldest first, each with its sequence number and its newline.
    lines: VecDeque<(u64, String)>,
    /// The sequence number of the next line pushed.
    next_seq: u64,
    /// The sequence number of the first line of the batch being written.
    in_flight: Option<u64>,
    /// Where each line is kept until it is written (`audit.spool`).
    spool: Option<Spool>,
    bytes: u64,
    /// When the oldest line not written yet arrived.
    since: Option<Instant>,
    /// Lines dropped (buffer full) since the last batch written.
    dropped: u64,
    closing: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        // Plain lines and counters: valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Buffer {
    /// Appends `line`, dropping the oldest lines beyond `max`.
    fn push(&mut self, line: String, max: usize) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if let Some(spool) = &mut self.spool {
            spool.append(seq, &line);
        }
        self.bytes += line.len() as u64;
        self.lines.push_back((seq, line));
        self.since.get_or_insert_with(Instant::now);
        self.trim(max);
    }

    fn trim(&mut self, max: usize) {
        while self.lines.len() > max {
            if let Some((_, old)) = self.lines.pop_front() {
                self.bytes -= old.len() as u64;
                self.dropped += 1;
                if self.dropped == 1 || self.dropped.is_multiple_of(1000) {
                    tracing::warn!(
                        dropped = self.dropped,
                        "audit: the store is behind and the buffer is full \
                         (audit.max_buffered_lines); the oldest lines are dropped"
                    );
                }
            }
        }
    }

    /// Takes the lines of the next batch.
    fn take(&mut self, max_lines: usize, max_bytes: u64) -> Vec<(u64, String)> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        self.in_flight = self.lines.front().map(|(seq, _)| *seq);
        while let Some((_, line)) = self.lines.front() {
            if !batch.is_empty()
                && (batch.len() >= max_lines || bytes + line.len() as u64 > max_bytes)
            {
                break;
            }
            bytes += line.len() as u64;
            if let Some(line) = self.lines.pop_front() {
                batch.push(line);
            }
        }
        self.bytes -= bytes;
        self.since = (!self.lines.is_empty()).then(Instant::now);
        batch
    }

    /// Puts a batch that could not be written back in front.
    fn put_back(&mut self, batch: Vec<(u64, String)>, dropped: u64, max: usize) {
        self.in_flight = None;
        for (seq, line) in batch.into_iter().rev() {
            self.bytes += line.len() as u64;
            self.lines.push_front((seq, line));
        }
        self.dropped += dropped;
        self.since.get_or_insert_with(Instant::now);
        self.trim(max);
        self.release();
    }

    /// The batch in flight was written: lets the spool go of every line no longer waiting.
    fn written(&mut self) {
        self.in_flight = None;
        self.release();
    }

    /// Lets the spool go of the lines before the oldest one still waiting (in flight or in
    /// the buffer): they were written, or dropped and counted.
    fn release(&mut self) {
        let oldest = match (self.in_flight, self.lines.front()) {
            (Some(seq), _) => Some(seq),
            (None, Some((seq, _))) => Some(*seq),
            (None, None) => None,
        };
        if let Some(spool) = &mut self.spool {
            spool.release(oldest);
        }
    }
}

impl Batches {
    /// Opens the store of `settings` and its spool (`audit.spool`, by default `audit-spool`
    /// in `base`, the policy's folder; none for a policy built in code), ships what writers
    /// that are gone left in the spool, and starts the thread that writes to the store.
    pub(crate) fn open(
        settings: &AuditSettings,
        base: Option<&FsPath>,
    ) -> Result<Self, BuildError> {
        let url = settings.store.clone().unwrap_or_default();
        let opened =
            toolgate_store::ObjectResultStore::from_url_opts(&url, settings.store_options.iter())
                .map_err(|source| BuildError::AuditStore {
                url: url.clone(),
                source: Box::new(source),
            })?;
        let store = opened.backend().clone();
        let prefix = opened.prefix().clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| BuildError::AuditWriter { source })?;
        let name = writer_name();
        let max_lines = settings.max_buffered_lines.max(1);
        let mut buffer = Buffer::default();
        // A spool the policy names must work; the default one beside the policy is given up
        // (with a warning) where that folder cannot be written, as a policy mounted read-only.
        let (spool_dir, named) = match &settings.spool {
            Some(dir) => (Some(dir.clone()), true),
            None => (base.map(|dir| dir.join("audit-spool")), false),
        };
        let mut orphans = None;
        let spool_opened = match spool_dir {
            Some(dir) => match Spool::open(&dir, &name) {
                Ok(opened) => Some(opened),
                Err(source) if named => {
                    return Err(BuildError::AuditSpool { path: dir, source });
                }
                Err(e) => {
                    tracing::warn!(
                        "audit spool: cannot use {}: {e}; lines wait in memory only, and a \
                         process that is killed loses them (set audit.spool to a writable folder)",
                        dir.display()
                    );
                    None
                }
            },
            None => None,
        };
        if let Some((spool, found)) = spool_opened {
            buffer.spool = Some(spool);
            if found.torn > 0 {
                tracing::warn!(
                    torn = found.torn,
                    "audit spool: lines cut short by a kill were not adopted"
                );
                buffer.dropped += found.torn;
            }
            orphans = Some(found);
        }
        if let Some(mut found) = orphans {
            // Into this writer's spool first, then the dead writers' files go.
            for line in std::mem::take(&mut found.lines) {
                buffer.push(line, max_lines);
            }
            found.forget();
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(buffer),
            wake: Condvar::new(),
            max_lines,
        });
        let writer = Writer {
            shared: shared.clone(),
            store,
            prefix,
            runtime,
            batch_lines: settings.batch_lines.max(1),
            batch_bytes: settings.batch_bytes.max(1),
            interval: settings.batch_interval,
            name,
            sequence: 0,
        };
        let worker = std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || writer.run())
            .map_err(|source| BuildError::AuditWriter { source })?;
        Ok(Batches {
            shared,
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Appends one line (with its newline) to the next batch.
    pub(crate) fn push(&self, line: String) {
        let mut buffer = self.shared.lock();
        buffer.push(line, self.shared.max_lines);
        drop(buffer);
        self.shared.wake.notify_one();
    }
}

impl Batches {
    /// Writes out what is buffered, then stops the thread and waits for it. Lines pushed
    /// later are not written.
    pub(crate) fn close(&self) {
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        let worker = self
            .worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(worker) = worker
            && worker.join().is_err()
        {
            tracing::error!("audit: the batch writer panicked; buffered lines are lost");
        }
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        self.close();
    }
}

/// The thread that writes batches.
struct Writer {
    shared: Arc<Shared>,
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    runtime: tokio::runtime::Runtime,
    batch_lines: usize,
    batch_bytes: u64,
    interval: Duration,
    /// Tells this writer's objects from another replica's.
    name: String,
    sequence: u64,
}

impl Writer {
    fn run(mut self) {
        let mut failures: u32 = 0;
        loop {
            let (batch, dropped, closing) = {
                let mut buffer = self.shared.lock();
                loop {
                    let due = buffer.since.map(|t| t.elapsed() >= self.wait(failures));
                    let full =
                        buffer.lines.len() >= self.batch_lines || buffer.bytes >= self.batch_bytes;
                    if buffer.closing && buffer.lines.is_empty() && buffer.dropped == 0 {
                        if let Some(spool) = buffer.spool.take() {
                            // Everything is in the store: the spool has nothing left to keep.
                            spool.remove();
                        }
                        return;
                    }
                    if buffer.closing || due == Some(true) || (full && failures == 0) {
                        break;
                    }
                    let left = match buffer.since {
                        Some(t) => self.wait(failures).saturating_sub(t.elapsed()),
                        None => self.interval,
                    };
                    buffer = self
                        .shared
                        .wake
                        .wait_timeout(buffer, left.max(Duration::from_millis(1)))
                        .map(|(b, _)| b)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
                let batch = buffer.take(self.batch_lines, self.batch_bytes);
                (batch, std::mem::take(&mut buffer.dropped), buffer.closing)
            };
            match self.write(&batch, dropped) {
                Ok(()) => {
                    failures = 0;
                    self.shared.lock().written();
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(
                        lines = batch.len(),
                        "audit: a batch could not be written, kept to try again: {e}"
                    );
                    if closing {
                        let mut buffer = self.shared.lock();
                        let spool = buffer.spool.as_ref().map(|s| s.dir().display().to_string());
                        if let Some(spool) = spool {
                            // The spool keeps them: the next writer that opens it ships them.
                            tracing::error!(
                                kept = batch.len() + buffer.lines.len(),
                                spool = %spool,
                                "audit: closing, and the store does not take the batch: the \
                                 lines stay in the spool for the next start"
                            );
                            buffer.lines.clear();
                            buffer.dropped = 0;
                            return;
                        }
                        tracing::error!(
                            lost = batch.len() as u64 + dropped,
                            "audit: closing, and the store does not take the batch: lines lost"
                        );
                        // Nothing more will be written: the rest is lost too.
                        tracing::error!(
                            lost = buffer.lines.len() as u64 + buffer.dropped,
                            "audit: lines left unwritten at close"
                        );
                        buffer.lines.clear();
                        buffer.dropped = 0;
                        return;
                    }
                    self.shared
                        .lock()
                        .put_back(batch, dropped, self.shared.max_lines);
                }
            }
        }
    }

    /// How long the oldest line waits: the interval, or a backoff after failures (100 ms
    /// doubled per failure, at most the interval).
    fn wait(&self, failures: u32) -> Duration {
        if failures == 0 {
            return self.interval;
        }
        Duration::from_millis(100)
            .saturating_mul(1 << failures.min(16))
            .min(self.interval)
    }

    fn write(&mut self, batch: &[(u64, String)], dropped: u64) -> Result<(), String> {
        let now = SystemTime::now();
        let mut body =
            String::with_capacity(batch.iter().map(|(_, l)| l.len()).sum::<usize>() + 64);
        if dropped > 0 {
            body.push_str(
                &serde_json::json!({
                    "time": humantime::format_rfc3339_millis(now).to_string(),
                    "lost_lines": dropped,
                })
                .to_string(),
            );
            body.push('\n');
        }
        for (_, line) in batch {
            body.push_str(line);
        }
        let stamp = humantime::format_rfc3339_millis(now).to_string();
        let day = stamp.get(..10).unwrap_or("0000-00-00").replace('-', "/");
        let compact: String = stamp.chars().filter(|c| !matches!(c, '-' | ':')).collect();
        let name = format!("{compact}-{}-{:08}.jsonl", self.name, self.sequence);
        let mut path = self.prefix.clone();
        for part in day.split('/').chain([name.as_str()]) {
            path = path.join(part);
        }
        let store = self.store.clone();
        let payload = object_store::PutPayload::from(bytes::Bytes::from(body));
        let put = self.runtime.block_on(async move {
            tokio::time::timeout(PUT_TIMEOUT, store.put(&path, payload)).await
        });
        match put {
            Ok(Ok(_)) => {
                self.sequence += 1;
                Ok(())
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {}s", PUT_TIMEOUT.as_secs())),
        }
    }
}

/// A name for this writer: the process id and the time it started, hashed (FNV-1a).
fn writer_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::process::id()
        .to_le_bytes()
        .iter()
        .chain(nanos.to_le_bytes().iter())
    {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_spool_that_cannot_be_made_is_given_up_but_a_named_one_fails_the_start() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the folder should be: no spool folder can be made under it.
        let file = dir.path().join("policy.yaml");
        std::fs::write(&file, "").unwrap();
        let mut settings = AuditSettings {
            sink: toolgate_policy::AuditSink::ObjectStore,
            store: Some("memory://".into()),
            ..AuditSettings::default()
        };
        let batches = Batches::open(&settings, Some(&file)).unwrap();
        assert!(batches.shared.lock().spool.is_none());
        settings.spool = Some(file.join("audit-spool"));
        let Err(err) = Batches::open(&settings, Some(dir.path())) else {
            panic!("a named spool that cannot be made was accepted");
        };
        assert!(matches!(err, BuildError::AuditSpool { .. }), "{err}");
    }

    #[test]
    fn a_full_buffer_drops_its_oldest_lines_and_counts_them() {
        let mut b = Buffer::default();
        for i in 0..5 {
            b.push(format!("{i}\n"), 3);
        }
        let texts = |b: &Buffer| b.lines.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>();
        assert_eq!(b.dropped, 2);
        assert_eq!(texts(&b), ["2\n", "3\n", "4\n"]);
        let batch = b.take(2, 1000);
        assert_eq!(batch, [(2, "2\n".to_owned()), (3, "3\n".to_owned())]);
        b.put_back(batch, 2, 3);
        assert_eq!(texts(&b), ["2\n", "3\n", "4\n"]);
        assert_eq!(b.dropped, 4);
    }
}
