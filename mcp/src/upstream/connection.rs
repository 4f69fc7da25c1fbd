//! One live connection to a server: started (spawn or connect, handshake, first tool list)
//! within its `startup_timeout`, watched until it closes, and closed.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{Peer, RoleClient, RunningServiceCancellationToken};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::watch;
use toolgate_policy::McpServerSpec;

use super::config::{HttpLaunch, Launch};
use super::error::{UpstreamError, handshake_reason};
use super::frame;
use super::handler::Handler;
use super::listing::{self, Listed};
use super::lists::{Offered, list_offered};
use super::ordered::Ordered;
use super::stdio::{self, Child};

/// How long closing a connection waits for the client's own shutdown.
const CLOSE_WAIT: Duration = Duration::from_millis(500);
/// How long a child whose pipe closed is given to report its exit status.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(300);

/// A started server.
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    /// Stops the client (taken by [`Connection::close`]).
    stop: Option<RunningServiceCancellationToken>,
    /// Turns `true` when the client has stopped, for any reason.
    ended: watch::Receiver<bool>,
    child: Option<Child>,
    /// Its tools, as it listed them when it started (checked; see [`listing`]).
    pub tools: Listed,
    /// Its resources, templates and prompts, as it listed them when it started.
    pub offered: Offered,
}

/// Starts the server `spec` describes, within its `startup_timeout`.
pub(crate) async fn open(
    spec: &McpServerSpec,
    handler: Handler,
) -> Result<Connection, UpstreamError> {
    let launch = super::config::launch(spec)?;
    // Kept outside the timed part, so that a server that hangs is still stopped and its stderr
    // still quoted.
    let mut child = None;
    let started = start(&spec.name, &launch, handler, &mut child);
    let result = match spec.startup_timeout {
        Some(after) => match tokio::time::timeout(after, started).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::StartupTimeout {
                after,
                stderr: child.as_ref().map(Child::stderr_tail).unwrap_or_default(),
            }),
        },
        None => started.await,
    };
    match result {
        Ok(connection) => Ok(connection),
        Err(error) => {
            if let Some(child) = &child {
                child.stop().await;
            }
            Err(error)
        }
    }
}

async fn start(
    server: &str,
    launch: &Launch,
    handler: Handler,
    child_slot: &mut Option<Child>,
) -> Result<Connection, UpstreamError> {
    let service = match launch {
        Launch::Stdio(launch) => {
            let (child, (stdout, stdin)) = stdio::spawn(launch, server)?;
            let child = child_slot.insert(child);
            // `Bounded` keeps the limit (and answers for a message over it); rmcp's own is
            // set just above what `Bounded` passes on.
            let transport = AsyncRwTransport::new_client(stdout, stdin)
                .with_max_line_length(frame::MAX_MESSAGE_BYTES + 2);
            match handler
                .clone()
                .serve(Ordered::new(transport, handler))
                .await
            {
                Ok(service) => service,
                Err(source) => {
                    // A child that died during the handshake says more by its exit than the
                    // closed pipe does.
                    if let Some(status) = child.status_within(EXIT_STATUS_WAIT).await {
                        return Err(UpstreamError::ExitedEarly {
                            program: child.program().to_owned(),
                            status,
                            stderr: child.stderr_tail(),
                        });
                    }
                    return Err(UpstreamError::Handshake {
                        reason: handshake_reason(&source),
                        stderr: child.stderr_tail(),
                    });
                }
            }
        }
        Launch::Http(launch) => handler
            .clone()
            .serve(Ordered::new(
                StreamableHttpClientTransport::from_config(http_config(launch)),
                handler,
            ))
            .await
            .map_err(|source| UpstreamError::Handshake {
                reason: handshake_reason(&source),
                stderr: String::new(),
            })?,
    };
    let peer = service.peer().clone();
    let stop = service.cancellation_token();
    let (ended_tx, ended) = watch::channel(false);
    // The client runs until its transport closes or it is stopped; this says when.
    tokio::spawn(async move {
        let _ = service.waiting().await;
        let _ = ended_tx.send(true);
    });
    let mut connection = Connection {
        peer,
        stop: Some(stop),
        ended,
        child: child_slot.take(),
        tools: Listed::default(),
        offered: Offered::default(),
    };
    match listing::list_tools(&connection.peer, server).await {
        Ok(tools) => {
            connection.tools = tools;
            connection.offered = list_offered(&connection.peer, server).await;
            Ok(connection)
        }
        Err(source) => {
            // Put the child back, so `open` stops it.
            *child_slot = connection.child.take();
            connection.close().await;
            Err(UpstreamError::ListTools { source })
        }
    }
}

fn http_config(launch: &HttpLaunch) -> StreamableHttpClientTransportConfig {
    StreamableHttpClientTransportConfig::with_uri(launch.url.as_str())
        .custom_headers(launch.headers.clone())
        // The same bound as for a `command` server's messages (rmcp's default today).
        .max_json_response_size(frame::MAX_MESSAGE_BYTES)
        .max_sse_event_size(frame::MAX_MESSAGE_BYTES)
        .reinit_on_expired_session(true)
}

impl Connection {
    /// A handle for requests.
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.peer.clone()
    }

    /// Resolves when the connection is gone: the client stopped (the pipe or the HTTP
    /// session closed) or the child exited.
    pub(crate) async fn closed(&self) {
        let mut ended = self.ended.clone();
        let ended = async move {
            // An error means the watcher task is gone, which happens only once it has sent.
            let _ = ended.wait_for(|e| *e).await;
        };
        match &self.child {
            Some(child) => {
                tokio::select! {
                    () = ended => {}
                    () = child.exited() => {}
                }
            }
            None => ended.await,
        }
    }

    /// Why it closed, in words the model may see (`it exited (exit status: 1)`), and the last
    /// lines of its stderr, for the log only (empty for a URL server). A child's stdout closes
    /// just before it exits; its exit status is waited for a moment, as it says more.
    pub(crate) async fn exit_note(&self) -> (String, String) {
        match &self.child {
            Some(child) => {
                child.status_within(EXIT_STATUS_WAIT).await;
                let tail = child.stderr_tail_within(EXIT_STATUS_WAIT).await;
                (child.exit_note(), tail)
            }
            None => ("the connection closed".to_owned(), String::new()),
        }
    }

    /// Closes it: the client stops (closing the child's stdin, or ending the HTTP session),
    /// then the child gets a short while to exit before its process group is killed.
    pub(crate) async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(CLOSE_WAIT, ended.wait_for(|e| *e)).await;
        if let Some(child) = &self.child {
            child.stop().await;
        }
    }
}
