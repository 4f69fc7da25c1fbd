//! The console's event stream (`/ui/api/events`, `text/event-stream`).
//!
//! It opens with `snapshot` (the rows of the ring), then sends a `call` event each time a call
//! starts or ends, `dropped` when it fell more than [`BROADCAST`](super::hub::BROADCAST) rows
//! behind (with how many it lost: the page then reads the ring again), and a comment every
//! [`KEEP_ALIVE`] so that a closed page is noticed and its permit given back. At most
//! [`MAX_STREAMS`](super::hub::MAX_STREAMS) are open at once; each holds a permit until it
//! ends.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, stream};
use http_body_util::BodyExt;
use hyper::body::Frame;
use serde_json::json;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::hub::Hub;

/// What the console answers with: the MCP front's body type.
pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// How often an idle stream sends a comment.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One open stream.
struct Open {
    rows: tokio::sync::broadcast::Receiver<Arc<str>>,
    first: Option<Bytes>,
    tick: tokio::time::Interval,
    shutdown: CancellationToken,
    _permit: OwnedSemaphorePermit,
}

/// The body of a stream that holds `permit` until it ends (the client goes, or serve stops).
pub(crate) fn body(hub: &Hub, permit: OwnedSemaphorePermit, shutdown: CancellationToken) -> Body {
    // Subscribed before the snapshot is taken: a call that changes in between comes twice,
    // which the page takes in its stride (it keeps the row of the highest revision).
    let rows = hub.subscribe();
    let (snapshot, forgotten) = hub.rows();
    let first = event(
        "snapshot",
        &json!({"calls": snapshot, "forgotten": forgotten}).to_string(),
    );
    let mut tick = tokio::time::interval(KEEP_ALIVE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let open = Open {
        rows,
        first: Some(first),
        tick,
        shutdown,
        _permit: permit,
    };
    let frames = stream::unfold(open, |mut open| async move {
        if let Some(first) = open.first.take() {
            // The interval's first tick is immediate: spend it now.
            open.tick.tick().await;
            return Some((Ok::<_, Infallible>(Frame::data(first)), open));
        }
        let bytes = tokio::select! {
            () = open.shutdown.cancelled() => return None,
            _ = open.tick.tick() => Bytes::from_static(b": keep-alive\n\n"),
            row = open.rows.recv() => match row {
                Ok(row) => event("call", &row),
                Err(RecvError::Lagged(lost)) => {
                    event("dropped", &json!({"dropped": lost}).to_string())
                }
                Err(RecvError::Closed) => return None,
            },
        };
        Some((Ok(Frame::data(bytes)), open))
    });
    Events(Mutex::new(Box::pin(frames))).boxed()
}

/// The frames of a stream, as a body. The `Mutex` makes it `Sync`, as a boxed body must be;
/// it is never locked (hyper polls through `&mut`).
struct Events(Mutex<Pin<Box<Frames>>>);

type Frames = dyn Stream<Item = Result<Frame<Bytes>, Infallible>> + Send;

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frames = match self.get_mut().0.get_mut() {
            Ok(frames) => frames,
            Err(poisoned) => poisoned.into_inner(),
        };
        frames.as_mut().poll_next(cx)
    }
}

/// One server-sent event: its name and its one-line data.
fn event(name: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}
