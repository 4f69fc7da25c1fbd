//! The stdio transport with a bound on a request line that answers what it refuses.
//!
//! rmcp's newline-delimited transport drops a line longer than its limit with a log line only,
//! so a client that sent one waits forever for the answer. Here a [`LineGuard`] in front of
//! stdin cuts such a line at `max_request_bytes` and ends it with a NUL byte (so it is never
//! valid JSON, and rmcp drops it as unparsable without acting on it); [`GuardedStdio`] then
//! answers it with a JSON-RPC error, `-32600`, carrying the request's `id` when it is among the
//! line's first [`HEAD`] bytes (where every client writes it), else `null`.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::pre_init::Handshake;

/// How much of an over-long line is kept to find its `id`.
const HEAD: usize = 4096;

/// What a cut line ends with: a NUL byte is not valid anywhere in JSON.
const CUT_MARK: &[u8] = b"\0\n";

/// The lines cut, waiting for their answer.
#[derive(Debug, Default)]
struct Refused {
    ids: Mutex<VecDeque<Option<RequestId>>>,
    ready: Notify,
}

impl Refused {
    fn push(&self, id: Option<RequestId>) {
        if let Ok(mut ids) = self.ids.lock() {
            ids.push_back(id);
        }
        self.ready.notify_one();
    }

    fn pop(&self) -> Option<Option<RequestId>> {
        self.ids.lock().ok()?.pop_front()
    }
}

/// Where the guard is in the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Passing a line on; this many bytes of it so far.
    Passing(usize),
    /// Dropping the rest of a line that was cut.
    Dropping,
}

/// Passes stdin on line by line, cutting every line longer than `limit` bytes (see the module).
pub(crate) struct LineGuard<R> {
    inner: R,
    limit: usize,
    state: State,
    /// The first [`HEAD`] bytes of the current line.
    head: Vec<u8>,
    /// Bytes read, not yet passed on.
    raw: Box<[u8]>,
    raw_start: usize,
    raw_end: usize,
    /// The cut mark still to pass on, from this offset.
    mark: Option<usize>,
    refused: Arc<Refused>,
}

impl<R> LineGuard<R> {
    fn new(inner: R, limit: usize, refused: Arc<Refused>) -> Self {
        LineGuard {
            inner,
            limit,
            state: State::Passing(0),
            head: Vec::new(),
            raw: vec![0; 64 * 1024].into_boxed_slice(),
            raw_start: 0,
            raw_end: 0,
            mark: None,
            refused,
        }
    }

    /// Moves what may pass from `raw` to `out`; answers whether anything moved.
    fn pass(&mut self, out: &mut ReadBuf<'_>) -> bool {
        let before = out.filled().len();
        while out.remaining() > 0 {
            if let Some(from) = self.mark {
                let n = (CUT_MARK.len() - from).min(out.remaining());
                out.put_slice(&CUT_MARK[from..from + n]);
                self.mark = (from + n < CUT_MARK.len()).then_some(from + n);
                continue;
            }
            let chunk = &self.raw[self.raw_start..self.raw_end];
            if chunk.is_empty() {
                break;
            }
            let newline = chunk.iter().position(|b| *b == b'\n');
            match self.state {
                State::Dropping => {
                    let take = newline.map_or(chunk.len(), |i| i + 1);
                    self.raw_start += take;
                    if newline.is_some() {
                        self.state = State::Passing(0);
                    }
                }
                State::Passing(len) => {
                    let line_end = newline.unwrap_or(chunk.len());
                    if len + line_end > self.limit {
                        // The line is too long: pass what fits, then the mark.
                        let fits = self.limit - len;
                        let n = fits.min(out.remaining());
                        keep_head(&mut self.head, &chunk[..n]);
                        out.put_slice(&chunk[..n]);
                        self.raw_start += n;
                        self.state = State::Passing(len + n);
                        if n == fits {
                            self.cut();
                        }
                        continue;
                    }
                    let take = newline.map_or(chunk.len(), |i| i + 1).min(out.remaining());
                    let taken = &chunk[..take];
                    keep_head(&mut self.head, taken);
                    out.put_slice(taken);
                    self.raw_start += take;
                    self.state = match taken.last() {
                        Some(b'\n') => {
                            self.head.clear();
                            State::Passing(0)
                        }
                        _ => State::Passing(len + take),
                    };
                }
            }
        }
        out.filled().len() > before
    }

    /// The current line is over the limit: mark it, drop its rest, and have it answered.
    fn cut(&mut self) {
        tracing::warn!(
            limit = self.limit,
            "a request line is longer than --max-request-bytes; answering it with an error"
        );
        self.refused.push(request_id(&self.head));
        self.head.clear();
        self.mark = Some(0);
        self.state = State::Dropping;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.pass(out) {
                return Poll::Ready(Ok(()));
            }
            // Nothing could pass: everything read was dropped (or nothing was read yet).
            this.raw_start = 0;
            this.raw_end = 0;
            let mut raw = ReadBuf::new(&mut this.raw);
            match Pin::new(&mut this.inner).poll_read(cx, &mut raw) {
                Poll::Ready(Ok(())) => {
                    let n = raw.filled().len();
                    if n == 0 {
                        // End of input.
                        return Poll::Ready(Ok(()));
                    }
                    this.raw_end = n;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Adds to `head` what fits of `bytes` within [`HEAD`].
fn keep_head(head: &mut Vec<u8>, bytes: &[u8]) {
    let room = HEAD.saturating_sub(head.len());
    head.extend_from_slice(&bytes[..room.min(bytes.len())]);
}

/// The `id` of a JSON-RPC request from the start of its text, when it is there.
fn request_id(head: &[u8]) -> Option<RequestId> {
    struct Find<'a>(&'a mut Option<Value>);
    impl<'de> DeserializeSeed<'de> for Find<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value::<Value>()?);
                    // Found: the rest of the text (cut short) need not be read.
                    return Err(A::Error::custom("found the id"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut found = None;
    let _ = Find(&mut found).deserialize(&mut serde_json::Deserializer::from_slice(head));
    found.and_then(|id| serde_json::from_value(id).ok())
}

/// rmcp's stdio transport behind a [`LineGuard`], answering the lines it cuts.
pub(crate) struct GuardedStdio<R: AsyncRead + Unpin, W: AsyncWrite> {
    inner: AsyncRwTransport<RoleServer, LineGuard<R>, W>,
    refused: Arc<Refused>,
    limit: usize,
    /// Answers the requests that come before `initialize` (see `pre_init`).
    handshake: Handshake,
}

impl<R, W> GuardedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads requests from `read` (each at most `limit` bytes) and writes to `write`.
    pub(crate) fn new(read: R, write: W, limit: usize) -> Self {
        let refused = Arc::new(Refused::default());
        let guard = LineGuard::new(read, limit, Arc::clone(&refused));
        GuardedStdio {
            // Room for the cut line and its mark: rmcp's own limit is never reached.
            inner: AsyncRwTransport::new(guard, write)
                .with_max_line_length(limit.saturating_add(CUT_MARK.len())),
            refused,
            limit,
            handshake: Handshake::default(),
        }
    }

    /// Answers every line cut so far.
    async fn answer_refused(&mut self) -> Result<(), io::Error> {
        while let Some(id) = self.refused.pop() {
            let error = ErrorData::invalid_request(
                format!(
                    "the request is larger than this server accepts ({} bytes, see --max-request-bytes)",
                    self.limit
                ),
                None,
            );
            self.inner
                .send(ServerJsonRpcMessage::error(error, id))
                .await?;
        }
        Ok(())
    }
}

impl<R, W> Transport<RoleServer> for GuardedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.answer_refused().await.is_err() {
                return None;
            }
            let refused = Arc::clone(&self.refused);
            tokio::select! {
                // rmcp's read keeps a partial line when it is dropped, so it can wait here.
                message = self.inner.receive() => {
                    // A line cut just before the end of input is answered too.
                    let _ = self.answer_refused().await;
                    if let Some(answer) = message.as_ref().and_then(|m| self.handshake.check(m)) {
                        if self.inner.send(answer).await.is_err() {
                            return None;
                        }
                        continue;
                    }
                    return message;
                }
                () = refused.ready.notified() => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn guarded(input: &[u8], limit: usize) -> (Vec<u8>, Vec<Option<RequestId>>) {
        let refused = Arc::new(Refused::default());
        let mut guard = LineGuard::new(input, limit, Arc::clone(&refused));
        let mut out = Vec::new();
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(guard.read_to_end(&mut out))
            .unwrap();
        let mut ids = Vec::new();
        while let Some(id) = refused.pop() {
            ids.push(id);
        }
        (out, ids)
    }

    #[test]
    fn lines_within_the_limit_pass_unchanged() {
        let input = b"{\"a\":1}\n{\"b\":2}\n";
        assert_eq!(guarded(input, 7), (input.to_vec(), vec![]));
    }

    #[test]
    fn a_longer_line_is_cut_marked_and_its_id_kept() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"params\":\"{}\"}}\n",
            "x".repeat(200_000)
        );
        let input = format!("{{\"a\":1}}\n{long}{{\"b\":2}}\n");
        let (out, ids) = guarded(input.as_bytes(), 100);
        let expected = format!("{{\"a\":1}}\n{}\0\n{{\"b\":2}}\n", &long[..100]);
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(ids, vec![Some(RequestId::Number(7))]);
    }

    #[test]
    fn an_id_after_the_head_or_none_gives_null() {
        assert_eq!(
            request_id(b"{\"jsonrpc\":\"2.0\",\"params\":{\"x\":\"aaa"),
            None
        );
        assert_eq!(
            request_id(b"{\"params\":{},\"id\":\"r1\",\"method\":\"t"),
            Some(RequestId::String("r1".into()))
        );
        assert_eq!(request_id(b"not json"), None);
    }
}
