//! One live connection to a server: started (spawn or connect, handshake, first tool list)
//! within its `startup_timeout`, watched until it closes, and closed.

use std::time::Duration;

use rmcp::model::{ErrorCode, ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient,
    RunningServiceCancellationToken,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::watch;
use toolgate_policy::{McpProtocol, McpServerSpec};

use super::config::{HttpLaunch, Launch};
use super::error::{UpstreamError, handshake_reason};
use super::frame;
use super::handler::Handler;
use super::listing::{self, Listed};
use super::lists::{Offered, list_offered};
use super::ordered::Ordered;
use super::stdio::{self, Child, FAILED_START_GRACE};

/// How long closing a connection waits for the client's own shutdown.
const CLOSE_WAIT: Duration = Duration::from_millis(500);
/// The longest [`Connection::close`] takes.
pub(crate) const CLOSE_AT_MOST: Duration = CLOSE_WAIT.saturating_add(stdio::STOP_AT_MOST);
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
    let started = start_speaking(&spec.name, &launch, handler, &mut child, spec.protocol);
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
                child.stop_within(FAILED_START_GRACE).await;
            }
            Err(error)
        }
    }
}

/// Starts the server on the revision `protocol` asks for: under `auto`, the `initialize`
/// handshake, and `server/discover` (2026-07-28) when the server refuses the handshake as a
/// server of 2026-07-28 only does (a child process is started again for it).
async fn start_speaking(
    server: &str,
    launch: &Launch,
    handler: Handler,
    child_slot: &mut Option<Child>,
    protocol: McpProtocol,
) -> Result<Connection, UpstreamError> {
    let lifecycle = match protocol {
        McpProtocol::Auto => ClientLifecycleMode::Initialize,
        McpProtocol::V2026_07_28 => discover(),
    };
    match start(server, launch, handler.clone(), child_slot, lifecycle).await {
        Err(Started::NoHandshake(reason)) => {
            tracing::info!(
                server,
                reason = %reason,
                "the MCP server has no initialize handshake; speaking 2026-07-28 to it"
            );
            if let Some(child) = child_slot.take() {
                child.stop_within(FAILED_START_GRACE).await;
            }
            start(server, launch, handler, child_slot, discover())
                .await
                .map_err(Started::into_error)
        }
        other => other.map_err(Started::into_error),
    }
}

/// `server/discover`, speaking 2026-07-28.
fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// Why a start failed: the server has no `initialize` (try `server/discover`), or anything else.
enum Started {
    NoHandshake(String),
    Failed(UpstreamError),
}

impl Started {
    fn into_error(self) -> UpstreamError {
        match self {
            Started::Failed(error) => error,
            Started::NoHandshake(reason) => UpstreamError::Handshake {
                reason,
                stderr: String::new(),
            },
        }
    }
}

impl From<UpstreamError> for Started {
    fn from(error: UpstreamError) -> Self {
        Started::Failed(error)
    }
}

/// Whether `initialize` was refused the way a server of 2026-07-28 only refuses it: the
/// method is unknown, or the versions it names have no handshake.
fn refuses_the_handshake(error: &ClientInitializeError) -> bool {
    let ClientInitializeError::JsonRpcError(error) = error else {
        return false;
    };
    if error.code == ErrorCode::METHOD_NOT_FOUND {
        return true;
    }
    error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        && error
            .data
            .as_ref()
            .and_then(|data| data.get("supported"))
            .and_then(|supported| {
                serde_json::from_value::<Vec<ProtocolVersion>>(supported.clone()).ok()
            })
            .is_some_and(|supported| {
                !supported.is_empty() && supported.iter().all(|v| !v.has_initialize())
            })
}

async fn start(
    server: &str,
    launch: &Launch,
    handler: Handler,
    child_slot: &mut Option<Child>,
    lifecycle: ClientLifecycleMode,
) -> Result<Connection, Started> {
    let initialize = lifecycle == ClientLifecycleMode::Initialize;
    let listener = handler.clone();
    let no_handshake = |source: &ClientInitializeError| {
        (initialize && refuses_the_handshake(source)).then(|| handshake_reason(source))
    };
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
                .serve_with_lifecycle(Ordered::new(transport, handler), lifecycle)
                .await
            {
                Ok(service) => service,
                Err(source) => {
                    if let Some(reason) = no_handshake(&source) {
                        return Err(Started::NoHandshake(reason));
                    }
                    // A child that died during the handshake says more by its exit than the
                    // closed pipe does.
                    if let Some(status) = child.status_within(EXIT_STATUS_WAIT).await {
                        return Err(Started::Failed(UpstreamError::ExitedEarly {
                            program: child.program().to_owned(),
                            status,
                            stderr: child.stderr_tail(),
                        }));
                    }
                    return Err(Started::Failed(UpstreamError::Handshake {
                        reason: handshake_reason(&source),
                        stderr: child.stderr_tail(),
                    }));
                }
            }
        }
        Launch::Http(launch) => match handler
            .clone()
            .serve_with_lifecycle(
                Ordered::new(
                    StreamableHttpClientTransport::from_config(http_config(launch)),
                    handler,
                ),
                lifecycle,
            )
            .await
        {
            Ok(service) => service,
            Err(source) => {
                return Err(match no_handshake(&source) {
                    Some(reason) => Started::NoHandshake(reason),
                    None => Started::Failed(UpstreamError::Handshake {
                        reason: handshake_reason(&source),
                        stderr: String::new(),
                    }),
                });
            }
        },
    };
    let peer = service.peer().clone();
    let modern = peer
        .peer_info()
        .is_some_and(|info| !info.protocol_version.has_initialize());
    if modern {
        tokio::spawn(listen_for_changes(
            peer.clone(),
            listener,
            server.to_owned(),
        ));
    }
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
            Err(Started::Failed(UpstreamError::ListTools { source }))
        }
    }
}

/// On 2026-07-28 a server tells of changes only on a `subscriptions/listen` request: this
/// keeps one open for its tool list until the connection ends, and wakes the supervisor on
/// each change as `notifications/tools/list_changed` does on the older revisions.
async fn listen_for_changes(peer: Peer<RoleClient>, handler: Handler, server: String) {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match peer.listen(filter).await {
        Ok(subscription) => subscription,
        Err(e) => {
            tracing::info!(
                server,
                error = %e,
                "the MCP server does not tell of tool list changes (subscriptions/listen)"
            );
            return;
        }
    };
    while let Ok(Some(notification)) = subscription.next().await {
        if matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ) {
            tracing::info!(server, "the MCP server says its tool list changed");
            handler.tools_changed();
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
    /// then the child gets a while to exit, then SIGTERM, then its process group is killed
    /// (MCP's stdio shutdown, [`Child::stop`]).
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

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ErrorData;
    use serde_json::json;

    fn refused(error: ErrorData) -> bool {
        refuses_the_handshake(&ClientInitializeError::JsonRpcError(error))
    }

    #[test]
    fn a_server_of_2026_07_28_only_refuses_the_handshake() {
        assert!(refused(ErrorData::unsupported_protocol_version(
            ProtocolVersion::V_2025_11_25,
            &[ProtocolVersion::V_2026_07_28],
        )));
        assert!(refused(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "initialize",
            None
        )));
    }

    #[test]
    fn other_refusals_are_not_a_missing_handshake() {
        // It names a revision with the handshake: it is an old server, not a new one.
        assert!(!refused(ErrorData::unsupported_protocol_version(
            ProtocolVersion::V_2025_11_25,
            &[ProtocolVersion::V_2025_03_26, ProtocolVersion::V_2026_07_28],
        )));
        assert!(!refused(ErrorData::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "no",
            Some(json!({"supported": []}))
        )));
        assert!(!refused(ErrorData::invalid_params("bad", None)));
        assert!(!refuses_the_handshake(
            &ClientInitializeError::ConnectionClosed("gone".into())
        ));
    }
}
