//! The bound on one message from a `command` server, kept so that an answer over it fails its
//! call at once.
//!
//! rmcp reads a child's stdout a line (one JSON-RPC message) at a time and drops a line over
//! its limit with a log line only: the request that line answered was never answered, so its
//! call waited for its timeout (forever under `timeout: none`). [`Bounded`] sits between the
//! pipe and rmcp. It passes lines up to [`MAX_MESSAGE_BYTES`] through as they are; of a longer
//! line it passes nothing more, ends what rmcp holds of it with a byte that makes it no JSON
//! (so rmcp skips it), and reads the rest without keeping it, watching the line's top-level
//! keys. When the line is an answer (it has an `id` and a `result` or `error`, and no
//! `method`), rmcp is handed an error answer with that `id` instead: the call fails at once
//! with an error that names the limit ([`too_large`]). Memory stays bounded by the limit.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The largest message toolgate reads from an upstream server (16 MiB, rmcp's own limit for
/// stdio and Streamable HTTP).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The JSON-RPC error code of the answer made up for an answer over the limit (in the range
/// JSON-RPC leaves to implementations); [`too_large`] recognizes it by its data as well.
pub(crate) const TOO_LARGE_CODE: i32 = -32099;
/// The `data.toolgate` of that answer.
const TOO_LARGE_MARK: &str = "message_too_large";
/// Bytes read from the pipe at a time.
const CHUNK: usize = 64 * 1024;
/// The longest `id` (as JSON text) an answer over the limit is matched by.
const MAX_ID_BYTES: usize = 128;

/// The child's stdout, with lines over [`MAX_MESSAGE_BYTES`] replaced as the module says.
pub(crate) struct Bounded<R> {
    inner: R,
    server: String,
    buf: Box<[u8]>,
    /// Unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Bytes of the current line read so far (passed on or not).
    line: usize,
    /// The current line is over the limit: its bytes are read and dropped.
    over: bool,
    /// An answer for the current line has been made up already.
    answered: bool,
    scan: Scanner,
    /// Bytes made up for rmcp, handed out before anything else.
    out: Vec<u8>,
    out_at: usize,
}

impl<R> Bounded<R> {
    /// `inner` read for the server `server` (named in log lines).
    pub(crate) fn new(inner: R, server: &str) -> Self {
        Bounded {
            inner,
            server: server.to_owned(),
            buf: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: 0,
            over: false,
            answered: false,
            scan: Scanner::default(),
            out: Vec::new(),
            out_at: 0,
        }
    }

    fn end_line(&mut self) {
        self.line = 0;
        self.over = false;
        self.answered = false;
        self.scan = Scanner::default();
    }

    /// Queues the made-up answer for the current line once its `id` is known.
    fn answer_if_known(&mut self, line_done: bool) {
        if self.answered {
            return;
        }
        let Some(id) = self.scan.answer_id(line_done) else {
            if line_done {
                tracing::warn!(server = %self.server, bytes = self.line, "the MCP server sent a message over {} that answers no request; it was dropped", limit_text());
            }
            return;
        };
        self.answered = true;
        tracing::warn!(server = %self.server, "the MCP server answered request {id} with a message over {}; the call fails", limit_text());
        let answer = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{}}}\n",
            json!({
                "code": TOO_LARGE_CODE,
                "message": format!("the answer is over {}, the most toolgate reads from an MCP server", limit_text()),
                "data": {"toolgate": TOO_LARGE_MARK, "limit": MAX_MESSAGE_BYTES},
            })
        );
        self.out.extend_from_slice(answer.as_bytes());
    }
}

/// `16 MiB`.
pub(crate) fn limit_text() -> String {
    format!("{} MiB", MAX_MESSAGE_BYTES / (1024 * 1024))
}

/// Whether a JSON-RPC error is the one [`Bounded`] made up for an answer over the limit.
pub(crate) fn too_large(error: &rmcp::ErrorData) -> bool {
    error.code.0 == TOO_LARGE_CODE
        && error
            .data
            .as_ref()
            .and_then(|d| d.get("toolgate"))
            .and_then(Value::as_str)
            == Some(TOO_LARGE_MARK)
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_at < this.out.len() {
                let n = dst.remaining().min(this.out.len() - this.out_at);
                dst.put_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                if this.out_at == this.out.len() {
                    this.out.clear();
                    this.out_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if dst.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut read = ReadBuf::new(&mut this.buf);
                match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                    Poll::Ready(Ok(())) => {}
                    other => return other,
                }
                let n = read.filled().len();
                if n == 0 {
                    // End of the stream: rmcp drops a line it holds without its end.
                    return Poll::Ready(Ok(()));
                }
                this.start = 0;
                this.end = n;
            }
            let chunk = &this.buf[this.start..this.end];
            let newline = memchr::memchr(b'\n', chunk);
            let seg_len = newline.map_or(chunk.len(), |i| i + 1);
            let content = newline.unwrap_or(chunk.len());
            if !this.over && this.line + content > MAX_MESSAGE_BYTES {
                this.over = true;
                tracing::debug!(server = %this.server, "a message from the MCP server is over {}", limit_text());
                // What rmcp holds of the line becomes no JSON, and ends.
                this.out.extend_from_slice(b"\0\n");
                continue;
            }
            if this.over {
                this.scan.feed(&chunk[..content]);
                this.line += content;
                this.start += seg_len;
                let done = newline.is_some();
                this.answer_if_known(done);
                if done {
                    this.end_line();
                }
                continue;
            }
            let take = seg_len.min(dst.remaining());
            let fed = take.min(content);
            this.scan.feed(&chunk[..fed]);
            dst.put_slice(&chunk[..take]);
            this.line += fed;
            this.start += take;
            if take == seg_len && newline.is_some() {
                this.end_line();
            }
            return Poll::Ready(Ok(()));
        }
    }
}

/// The top-level keys of one JSON object as its bytes go by, without keeping them: whether
/// it has `method`, `result` or `error`, and its `id` as JSON text (a number or a string of at
/// most [`MAX_ID_BYTES`]).
#[derive(Default)]
struct Scanner {
    /// Nesting depth: 1 inside the top-level object.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// The bytes of the string or number being kept (a key, or the `id`'s value).
    keep: Option<Vec<u8>>,
    keeping: Keeping,
    /// The key whose value comes next, at depth 1.
    key: Key,
    id: Option<Vec<u8>>,
    has_method: bool,
    has_answer: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Keeping {
    #[default]
    Nothing,
    Key,
    IdString,
    IdNumber,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Key {
    #[default]
    Other,
    Id,
}

impl Scanner {
    /// The `id` to answer: known once the object is an answer (it has `result` or `error`),
    /// or at its end (`done`) when it has no `method`.
    fn answer_id(&self, done: bool) -> Option<String> {
        let id = self.id.as_ref()?;
        if self.has_method || !(self.has_answer || done) {
            return None;
        }
        Some(String::from_utf8_lossy(id).into_owned())
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.push(&bytes[..1]);
                    bytes = &bytes[1..];
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', bytes) {
                    None => {
                        self.push(bytes);
                        return;
                    }
                    Some(i) => {
                        self.push(&bytes[..i]);
                        if bytes[i] == b'\\' {
                            self.escaped = true;
                            self.push(b"\\");
                        } else {
                            self.in_string = false;
                            self.end_string();
                        }
                        bytes = &bytes[i + 1..];
                    }
                }
                continue;
            }
            let b = bytes[0];
            bytes = &bytes[1..];
            if self.keeping == Keeping::IdNumber {
                if matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    self.push(&[b]);
                    continue;
                }
                let number = self.keep.take();
                self.keeping = Keeping::Nothing;
                self.id = number.filter(|n| !n.is_empty() && n.len() <= MAX_ID_BYTES);
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.expect_key {
                        self.keeping = Keeping::Key;
                        self.keep = Some(Vec::new());
                    } else if self.depth == 1 && self.key == Key::Id {
                        self.keeping = Keeping::IdString;
                        self.keep = Some(b"\"".to_vec());
                    }
                }
                b'{' | b'[' => {
                    self.depth = self.depth.saturating_add(1);
                    self.expect_key = self.depth == 1 && b == b'{';
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b':' if self.depth == 1 => self.expect_key = false,
                b',' if self.depth == 1 => {
                    self.expect_key = true;
                    self.key = Key::Other;
                }
                b'0'..=b'9' | b'-' if self.depth == 1 && self.key == Key::Id => {
                    self.keeping = Keeping::IdNumber;
                    self.keep = Some(vec![b]);
                }
                _ => {}
            }
        }
    }

    /// Keeps `bytes` of the string or number being kept, up to the bound.
    fn push(&mut self, bytes: &[u8]) {
        if let Some(keep) = &mut self.keep {
            if keep.len() + bytes.len() > MAX_ID_BYTES + 1 {
                // Too long to be a key that matters or an `id` to answer.
                self.keep = None;
            } else {
                keep.extend_from_slice(bytes);
            }
        }
    }

    fn end_string(&mut self) {
        let kept = self.keep.take();
        match std::mem::take(&mut self.keeping) {
            Keeping::Key => {
                let key = kept.unwrap_or_default();
                self.key = Key::Other;
                match key.as_slice() {
                    b"id" => self.key = Key::Id,
                    b"method" => self.has_method = true,
                    b"result" | b"error" => self.has_answer = true,
                    _ => {}
                }
            }
            Keeping::IdString => {
                self.id = kept.map(|mut s| {
                    s.push(b'"');
                    s
                });
            }
            Keeping::Nothing | Keeping::IdNumber => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn scan(text: &str, step: usize) -> Scanner {
        let mut s = Scanner::default();
        for part in text.as_bytes().chunks(step) {
            s.feed(part);
        }
        s
    }

    #[test]
    fn the_id_of_an_answer_is_found_before_or_after_its_result() {
        for step in [1, 3, 1000] {
            let s = scan(
                r#"{"jsonrpc":"2.0","id":42,"result":{"id":7,"x":"a\"b"}}"#,
                step,
            );
            assert_eq!(s.answer_id(false).as_deref(), Some("42"));
            let s = scan(
                r#"{"result":{"content":[{"id":1}]},"jsonrpc":"2.0","id":"r-\"1"}"#,
                step,
            );
            assert_eq!(s.answer_id(true).as_deref(), Some(r#""r-\"1""#));
        }
    }

    #[test]
    fn a_request_from_the_server_is_not_answered() {
        let s = scan(
            r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}"#,
            5,
        );
        assert_eq!(s.answer_id(true), None);
    }

    #[test]
    fn a_nested_id_is_not_the_answers() {
        let s = scan(r#"{"result":{"id":9}}"#, 1);
        assert_eq!(s.answer_id(true), None);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_becomes_an_error_answer_and_the_next_line_passes() {
        let big = "x".repeat(MAX_MESSAGE_BYTES);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"t\":\"{big}\"}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{{}}}}\n"
        );
        let mut read = Bounded::new(input.as_bytes(), "s");
        let mut out = Vec::new();
        read.read_to_end(&mut out).await.unwrap();
        assert!(out.len() <= MAX_MESSAGE_BYTES + 1000, "{}", out.len());
        let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
        // What was passed of the big line, cut and spoiled; the answer; the next line.
        assert!(lines[0].ends_with(b"\0"));
        let answer: Value = serde_json::from_slice(lines[1]).unwrap();
        assert_eq!(answer["id"], 5);
        assert_eq!(answer["error"]["code"], TOO_LARGE_CODE);
        let error: rmcp::ErrorData = serde_json::from_value(answer["error"].clone()).unwrap();
        assert!(too_large(&error));
        assert_eq!(lines[2], br#"{"jsonrpc":"2.0","id":6,"result":{}}"#);
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let input = "{\"id\":1,\"result\":{}}\nnot json\n\n{\"method\":\"x\"}\n";
        let mut read = Bounded::new(input.as_bytes(), "s");
        let mut out = String::new();
        read.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, input);
    }
}
