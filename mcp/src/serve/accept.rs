//! Accepting HTTP connections within bounds: at most `max_connections` at once, a timeout on
//! reading each request's headers, and a pause (logged once) when accepting fails.
//!
//! - A connection takes a permit before it is accepted and gives it back when it closes, so
//!   past the cap new connections wait in the kernel's backlog instead of costing a file
//!   descriptor each.
//! - hyper closes a connection whose client has not sent a whole request head within
//!   `read_timeout` (counted from the connection's start, or from the end of its previous
//!   request, so an idle keep-alive connection is closed too); the body's timeout is the
//!   front's.
//! - `accept` fails when the process is out of file descriptors (`EMFILE`) or the system is out
//!   of memory for sockets; trying again at once would spin. The first failure of a burst is
//!   logged, the next ones are counted, and the loop waits [`BACKOFF_FIRST`], doubling up to
//!   [`BACKOFF_MAX`], before trying again; the next accepted connection logs how many failed.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The first pause after a failed `accept`.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest pause after failed `accept`s in a row.
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How connections are accepted.
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) read_timeout: Option<Duration>,
}

/// Accepts connections on `listener` until `shutdown` fires, serving each with `handle`.
pub(crate) async fn accept_loop<H, F, B>(
    listener: TcpListener,
    limits: Limits,
    handle: H,
    shutdown: CancellationToken,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut failures = Failures::default();
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    let pause = failures.failed(&e);
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(pause) => continue,
                    }
                }
            },
        };
        failures.recovered();
        // Answers are written as they come (SSE events); without this, Nagle's algorithm and
        // the client's delayed ACK hold each small write back by tens of milliseconds.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let handle = handle.clone();
        let read_timeout = limits.read_timeout;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let answer = handle(request);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout);
            if let Err(e) = builder
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
            drop(permit);
        });
    }
}

/// Failed `accept`s in a row.
#[derive(Default)]
struct Failures {
    count: u64,
}

impl Failures {
    /// Counts a failure (logging the first of a burst); answers how long to wait.
    fn failed(&mut self, error: &std::io::Error) -> Duration {
        if self.count == 0 {
            tracing::warn!(
                error = %error,
                "cannot accept a connection; waiting before trying again (out of file \
                 descriptors? see --max-connections and `ulimit -n`)"
            );
        }
        self.count += 1;
        let doublings = u32::try_from(self.count.saturating_sub(1).min(16)).unwrap_or(16);
        BACKOFF_FIRST
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(BACKOFF_MAX)
    }

    /// A connection was accepted: ends a burst of failures.
    fn recovered(&mut self) {
        if self.count > 0 {
            tracing::warn!(
                failed = self.count,
                "accepting connections again after failed attempts"
            );
            self.count = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_accepts_wait_longer_each_time_up_to_a_second() {
        let mut failures = Failures::default();
        let error = std::io::Error::from_raw_os_error(24);
        let pauses: Vec<Duration> = (0..12).map(|_| failures.failed(&error)).collect();
        assert_eq!(pauses[0], BACKOFF_FIRST);
        assert_eq!(pauses[1], BACKOFF_FIRST * 2);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), BACKOFF_MAX);
        failures.recovered();
        assert_eq!(failures.failed(&error), BACKOFF_FIRST);
    }
}
