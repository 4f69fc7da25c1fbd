//! What the console knows of the calls: a bounded ring of the latest calls and a bounded
//! broadcast of their changes to the open console streams.
//!
//! The engine's events (E1) come in through [`Hub::listener`], on the thread of the call that
//! emits them; the listener does little: it updates the call's record in the ring (under a
//! lock held for that only) and sends the record's row, already JSON, to the broadcast. Nothing
//! here waits for a browser: a stream that falls [`BROADCAST`] rows behind loses the oldest
//! and is told how many (`dropped`), and the ring forgets the oldest call past [`RING`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{Semaphore, broadcast};
use toolgate::events::{Event, EventKind};

/// The most calls the ring holds; the oldest is forgotten first.
pub(crate) const RING: usize = 500;
/// The most rows a stream may fall behind before it loses the oldest.
pub(crate) const BROADCAST: usize = 256;
/// The most console streams open at once; one more gets 503.
pub(crate) const MAX_STREAMS: usize = 8;
/// The most bytes of a call's arguments kept (the rest is cut, and the detail says so).
pub(crate) const ARGUMENT_BYTES: usize = 8 * 1024;
/// The most characters of a result kept for the detail's preview.
pub(crate) const PREVIEW_CHARS: usize = 2 * 1024;
/// The most characters of an error's message kept in a row.
const ERROR_CHARS: usize = 500;

/// One call as the console shows it.
pub(crate) struct Record {
    /// The row of the list, as JSON (what the stream sends).
    pub(crate) row: Value,
    /// The arguments as the model sent them, at most [`ARGUMENT_BYTES`].
    pub(crate) arguments: String,
    /// Whether `arguments` was cut.
    pub(crate) arguments_cut: bool,
    /// The start of the result the model got, at most [`PREVIEW_CHARS`].
    pub(crate) preview: String,
    /// Whether `preview` is less than the whole result.
    pub(crate) preview_cut: bool,
}

/// The ring, the broadcast and the streams' permits of one `serve`.
pub(crate) struct Hub {
    ring: Mutex<VecDeque<Record>>,
    /// Calls the ring forgot, since the start.
    forgotten: AtomicU64,
    /// Numbers the rows, so a page keeps the newest state of a call.
    revision: AtomicU64,
    tx: broadcast::Sender<Arc<str>>,
    pub(crate) streams: Arc<Semaphore>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            ring: Mutex::new(VecDeque::with_capacity(RING)),
            forgotten: AtomicU64::new(0),
            revision: AtomicU64::new(0),
            tx: broadcast::Sender::new(BROADCAST),
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
        }
    }
}

impl Hub {
    /// The listener to register on an engine whose policy turns the console on.
    pub(crate) fn listener(self: &Arc<Self>) -> impl Fn(&Event) + Send + Sync + 'static {
        let hub = Arc::clone(self);
        move |event: &Event| hub.record(event)
    }

    /// A receiver of the rows from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.tx.subscribe()
    }

    /// The rows of the calls in the ring, oldest first, and how many calls it forgot.
    pub(crate) fn rows(&self) -> (Vec<Value>, u64) {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        (
            ring.iter().map(|r| r.row.clone()).collect(),
            self.forgotten.load(Ordering::Relaxed),
        )
    }

    /// Calls `f` with the record of `call_id`, while it is in the ring.
    pub(crate) fn with_record<T>(&self, call_id: &str, f: impl FnOnce(&Record) -> T) -> Option<T> {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.iter()
            .rev()
            .find(|r| r.row["call_id"] == call_id)
            .map(f)
    }

    /// Whether some call in the ring offloaded its result as `result_id`.
    pub(crate) fn knows_result(&self, result_id: &str) -> bool {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.iter().any(|r| r.row["result_id"] == result_id)
    }

    fn record(&self, event: &Event) {
        let revision = self.revision.fetch_add(1, Ordering::Relaxed) + 1;
        let row = {
            let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
            match &event.kind {
                EventKind::Start => {
                    let (arguments, arguments_cut) = cut_bytes(&event.arguments, ARGUMENT_BYTES);
                    let record = Record {
                        row: started_row(event, revision),
                        arguments,
                        arguments_cut,
                        preview: String::new(),
                        preview_cut: false,
                    };
                    if ring.len() >= RING {
                        ring.pop_front();
                        self.forgotten.fetch_add(1, Ordering::Relaxed);
                    }
                    ring.push_back(record);
                    ring.back().map(|r| r.row.clone())
                }
                EventKind::End { outcome } => {
                    let found = ring
                        .iter_mut()
                        .rev()
                        .find(|r| r.row["call_id"] == event.call_id.as_str());
                    found.map(|record| {
                        let row = &mut record.row;
                        row["revision"] = json!(revision);
                        row["state"] = json!(if outcome.is_error { "error" } else { "ok" });
                        row["ended_at_ms"] = json!(now_ms());
                        row["decision"] = json!({
                            "rules": outcome.decision.rules,
                            "rule": outcome.decision.rule,
                            "before_hook": outcome.decision.before_hook,
                        });
                        row["error_kind"] = json!(outcome.error_kind);
                        row["error"] = json!(
                            outcome
                                .error
                                .as_deref()
                                .map(|e| cut_chars(e, ERROR_CHARS).0)
                        );
                        row["run_ms"] = json!(outcome.duration_ms);
                        row["queued_ms"] = json!(outcome.queued_ms);
                        row["result_chars"] = json!(outcome.output_chars);
                        row["truncated"] = json!(outcome.truncated);
                        row["result_id"] = json!(outcome.result_id);
                        row["redactions"] = json!(outcome.redactions);
                        let (preview, cut) = cut_chars(&outcome.content.text(), PREVIEW_CHARS);
                        record.preview = preview;
                        record.preview_cut = cut;
                        record.row.clone()
                    })
                }
                // Progress, side problems, retries and breaker changes are not rows of their own.
                EventKind::Update { .. }
                | EventKind::Error { .. }
                | EventKind::Retry { .. }
                | EventKind::Breaker { .. } => None,
            }
        };
        if let Some(row) = row {
            // No stream open is no error: the ring keeps the call.
            let _ = self.tx.send(Arc::from(row.to_string()));
        }
    }
}

/// The row of a call that starts now.
fn started_row(event: &Event, revision: u64) -> Value {
    json!({
        "revision": revision,
        "call_id": event.call_id,
        "kind": event.call_kind,
        "tool": event.tool_name,
        "model_name": event.model_name,
        "principal": event.caller.name(),
        "session": event.session,
        "state": "running",
        "started_at_ms": now_ms(),
        "ended_at_ms": null,
        "decision": null,
        "error_kind": null,
        "error": null,
        "run_ms": null,
        "queued_ms": null,
        "result_chars": null,
        "truncated": false,
        "result_id": null,
        "redactions": 0,
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `text` cut to at most `max` bytes at a character boundary, and whether it was cut.
fn cut_bytes(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

/// `text` cut to at most `max` characters, and whether it was cut.
fn cut_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), false),
        Some((end, _)) => (text[..end].to_owned(), true),
    }
}

#[cfg(test)]
mod tests {
    use toolgate::Decision;
    use toolgate::access::CallKind;
    use toolgate::events::OutcomeSummary;

    use super::*;

    fn event(call_id: &str, kind: EventKind) -> Event {
        Event {
            kind,
            call_kind: CallKind::Tool,
            call_id: call_id.to_owned(),
            session: Some("s1".to_owned()),
            caller: Arc::new(toolgate::Caller::new("bearer:0123", Vec::new())),
            model_name: "echo".to_owned(),
            tool_name: "echo".to_owned(),
            arguments: r#"{"text":"hi"}"#.to_owned(),
        }
    }

    fn end(call_id: &str) -> Event {
        event(
            call_id,
            EventKind::End {
                outcome: Arc::new(OutcomeSummary {
                    content: toolgate::Content::Text("hi".to_owned()),
                    is_error: false,
                    error_kind: None,
                    error: None,
                    truncated: false,
                    output_chars: 2,
                    duration_ms: 1.5,
                    queued_ms: 0.0,
                    result_id: None,
                    redactions: 0,
                    decision: Decision::default(),
                }),
            },
        )
    }

    #[test]
    fn v1_the_ring_forgets_the_oldest_call_past_its_bound() {
        let hub = Arc::new(Hub::default());
        let listen = hub.listener();
        for i in 0..RING + 3 {
            listen(&event(&format!("c{i}"), EventKind::Start));
            listen(&end(&format!("c{i}")));
        }
        let (rows, forgotten) = hub.rows();
        assert_eq!(rows.len(), RING);
        assert_eq!(forgotten, 3);
        assert_eq!(rows[0]["call_id"], "c3", "the oldest three are gone");
        assert_eq!(rows[RING - 1]["state"], "ok");
        assert!(hub.with_record("c2", |_| ()).is_none());
        assert_eq!(
            hub.with_record("c3", |r| r.preview.clone()),
            Some("hi".to_owned())
        );
    }

    #[test]
    fn v1_a_stream_that_falls_behind_is_told_how_many_rows_it_lost() {
        let hub = Arc::new(Hub::default());
        let mut slow = hub.subscribe();
        let listen = hub.listener();
        // Each call sends two rows (start, end): 200 calls are 400 rows, 144 past the bound.
        for i in 0..200 {
            listen(&event(&format!("c{i}"), EventKind::Start));
            listen(&end(&format!("c{i}")));
        }
        match slow.try_recv() {
            Err(broadcast::error::TryRecvError::Lagged(lost)) => {
                assert_eq!(lost, 400 - BROADCAST as u64);
            }
            other => panic!("expected to be told of lost rows, got {other:?}"),
        }
        // Then it goes on with the oldest row still kept.
        let next: Value = serde_json::from_str(&slow.try_recv().unwrap()).unwrap();
        assert_eq!(next["call_id"], "c72");
        assert_eq!(next["state"], "running");
    }

    #[test]
    fn a_row_says_who_called_and_how_it_ended() {
        let hub = Arc::new(Hub::default());
        let listen = hub.listener();
        listen(&event("c1", EventKind::Start));
        let (rows, _) = hub.rows();
        assert_eq!(rows[0]["state"], "running");
        assert_eq!(rows[0]["principal"], "bearer:0123");
        assert_eq!(rows[0]["session"], "s1");
        listen(&end("c1"));
        let (rows, _) = hub.rows();
        assert_eq!(rows[0]["state"], "ok");
        assert_eq!(rows[0]["run_ms"], 1.5);
        assert_eq!(rows[0]["result_chars"], 2);
        assert!(rows[0]["revision"].as_u64() > Some(1));
    }

    #[test]
    fn cuts_keep_whole_characters() {
        assert_eq!(cut_bytes("héllo", 2), ("h".to_owned(), true));
        assert_eq!(cut_bytes("hé", 3), ("hé".to_owned(), false));
        assert_eq!(cut_chars("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(cut_chars("hé", 2), ("hé".to_owned(), false));
    }
}
