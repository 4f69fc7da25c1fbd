//! The audit log (`audit:`): one JSON line per call, built from the `end` event (E1), so the
//! dispatcher has no audit code of its own. Docs: docs/audit.md (the line's fields and its
//! JSON Schema).
//!
//! Lines are written as each call ends, one `write` each, under a lock: nothing is buffered,
//! so nothing is lost when the program stops, and a sink that is slow slows the calls rather
//! than losing lines. A line that cannot be written (a full disk, a closed pipe) is counted and
//! warned about, and the call goes on: the next line that is written is preceded by a
//! `lost_lines` record saying how many went missing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::json;
use sha2::Digest;
use toolgate_policy::{AuditArguments, AuditSettings, AuditSink};

use crate::error::BuildError;
use crate::events::{Event, EventKind};
use crate::guard::RedactLayer;
use crate::mask::ArgumentMasker;

/// What the audit listener needs.
pub(crate) struct AuditLog {
    settings: AuditSettings,
    /// The fields of `secret_arguments` and the `redact:` patterns (`arguments: redacted`).
    masker: ArgumentMasker,
    out: Mutex<Out>,
}

/// The sink and its state.
struct Out {
    sink: Sink,
    /// Lines that could not be written since the last one that was.
    lost: u64,
}

enum Sink {
    Stdout,
    Stderr,
    File {
        path: PathBuf,
        file: File,
        /// Bytes in the current file.
        size: u64,
    },
    /// `object_store`: lines go to the batch writer, which never refuses one.
    Batches(crate::audit_batches::Batches),
}

impl AuditLog {
    /// Opens the sink of `settings`; the default file is in `base` (the policy's folder).
    pub(crate) fn open(
        settings: &AuditSettings,
        base: Option<&Path>,
        masker: Option<Arc<RedactLayer>>,
    ) -> Result<Self, BuildError> {
        let sink = match settings.sink {
            AuditSink::Stdout => Sink::Stdout,
            AuditSink::Stderr => Sink::Stderr,
            AuditSink::ObjectStore => {
                Sink::Batches(crate::audit_batches::Batches::open(settings, base)?)
            }
            AuditSink::File => {
                // A path the policy gives was resolved when it was read.
                let path = match (&settings.path, base) {
                    (Some(path), _) => path.clone(),
                    (None, Some(dir)) => dir.join("audit.jsonl"),
                    (None, None) => PathBuf::from("audit.jsonl"),
                };
                let (file, size) = open_append(&path).map_err(|source| BuildError::Audit {
                    path: path.clone(),
                    source,
                })?;
                Sink::File { path, file, size }
            }
        };
        Ok(AuditLog {
            settings: settings.clone(),
            masker: ArgumentMasker::new(settings.secret_arguments.clone(), masker),
            out: Mutex::new(Out { sink, lost: 0 }),
        })
    }

    /// The listener's work: a line for each `end` event.
    pub(crate) fn record(&self, event: &Event) {
        let EventKind::End { outcome } = &event.kind else {
            return;
        };
        let mut line = json!({
            "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            // Who called (C1): the authenticated principal, or `local`.
            "principal": event.caller.name(),
            "groups": event.caller.groups(),
            "session": event.session,
            "call_id": event.call_id,
            "kind": event.call_kind,
            "tool": event.tool_name,
            "model_name": event.model_name,
            "arguments_sha256": sha256_hex(event.arguments.as_bytes()),
            "decision": {
                "rules": outcome.decision.rules,
                "rule": outcome.decision.rule,
                "before_hook": outcome.decision.before_hook,
            },
            "outcome": if outcome.is_error { "error" } else { "ok" },
            "error_kind": outcome.error_kind,
            "queued_ms": outcome.queued_ms,
            "run_ms": outcome.duration_ms,
            "result_chars": outcome.output_chars,
            "truncated": outcome.truncated,
            "result_id": outcome.result_id,
            "redactions": outcome.redactions,
        });
        if outcome.error_kind == Some("denied") {
            line["reason"] = json!(outcome.error);
        }
        if self.settings.arguments == AuditArguments::Redacted {
            line["arguments"] = self.masker.arguments(&event.arguments);
        }
        let mut text = line.to_string();
        text.push('\n');
        self.write(&text);
    }

    /// Writes out what the sink buffers (`object_store`: the batches not written yet) and
    /// waits for it; a no-op for the other sinks, which buffer nothing.
    pub(crate) fn close(&self) {
        if let Ok(out) = self.out.lock()
            && let Sink::Batches(batches) = &out.sink
        {
            batches.close();
        }
    }

    /// Writes one line (after a `lost_lines` record when lines were lost), rotating first when
    /// the line would take the file over its size.
    fn write(&self, text: &str) {
        let Ok(mut out) = self.out.lock() else {
            return;
        };
        let mut all = String::new();
        if out.lost > 0 {
            all = json!({
                "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                "lost_lines": out.lost,
            })
            .to_string();
            all.push('\n');
        }
        all.push_str(text);
        let (max_bytes, max_files) = (self.settings.max_file_bytes, self.settings.max_files);
        let written = match &mut out.sink {
            Sink::Stdout => std::io::stdout().lock().write_all(all.as_bytes()),
            Sink::Stderr => std::io::stderr().lock().write_all(all.as_bytes()),
            Sink::Batches(batches) => {
                batches.push(all);
                Ok(())
            }
            Sink::File { path, file, size } => {
                let len = all.len() as u64;
                if *size > 0 && size.saturating_add(len) > max_bytes {
                    match rotate(path, max_files) {
                        Ok((new, at)) => {
                            *file = new;
                            *size = at;
                        }
                        Err(e) => tracing::warn!("audit: cannot rotate {}: {e}", path.display()),
                    }
                }
                let w = file.write_all(all.as_bytes());
                if w.is_ok() {
                    *size += len;
                }
                w
            }
        };
        match written {
            Ok(()) => out.lost = 0,
            Err(e) => {
                out.lost += 1;
                // The first loss of a run of losses, and then every 1000th, is logged.
                if out.lost == 1 || out.lost.is_multiple_of(1000) {
                    tracing::warn!(lost = out.lost, "audit: a line could not be written: {e}");
                }
            }
        }
    }
}

/// `path` opened for appending (created if absent), and its size.
fn open_append(path: &Path) -> std::io::Result<(File, u64)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

/// Shifts `path.N` to `path.N+1` (dropping the one past `max_files`), `path` to `path.1`, and
/// opens a fresh `path`.
fn rotate(path: &Path, max_files: usize) -> std::io::Result<(File, u64)> {
    let numbered = |n: usize| {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    };
    if max_files == 0 {
        std::fs::remove_file(path)?;
    } else {
        let _ = std::fs::remove_file(numbered(max_files));
        for n in (1..max_files).rev() {
            let from = numbered(n);
            if from.exists() {
                std::fs::rename(&from, numbered(n + 1))?;
            }
        }
        std::fs::rename(path, numbered(1))?;
    }
    open_append(path)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::call::{Content, Decision};
    use crate::events::OutcomeSummary;

    fn end_event(call_id: &str) -> Event {
        Event {
            kind: EventKind::End {
                outcome: Arc::new(OutcomeSummary {
                    content: Content::Text("ok".into()),
                    is_error: false,
                    error_kind: None,
                    error: None,
                    truncated: false,
                    output_chars: 2,
                    duration_ms: 1.0,
                    queued_ms: 0.0,
                    result_id: None,
                    redactions: 0,
                    decision: Decision::default(),
                    offloaded_bytes: 0,
                }),
            },
            call_kind: crate::access::CallKind::Tool,
            call_id: call_id.into(),
            session: None,
            caller: crate::caller::Caller::local(),
            model_name: "echo".into(),
            tool_name: "echo".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn lines_lost_to_a_full_disk_are_reported_before_the_next_line_written() {
        let dir = tempfile::tempdir().unwrap();
        let settings = AuditSettings {
            path: Some(PathBuf::from("/dev/full")),
            ..AuditSettings::default()
        };
        let log = AuditLog::open(&settings, None, None).unwrap();
        log.record(&end_event("lost_1"));
        log.record(&end_event("lost_2"));
        // The disk has room again: the next line goes to a file that takes it.
        let path = dir.path().join("audit.jsonl");
        if let Ok(mut out) = log.out.lock() {
            let (file, size) = open_append(&path).unwrap();
            out.sink = Sink::File {
                path: path.clone(),
                file,
                size,
            };
        }
        log.record(&end_event("kept"));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["lost_lines"], 2);
        assert_eq!(lines[1]["call_id"], "kept");
    }
}
