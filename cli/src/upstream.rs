//! Upstream MCP servers (`mcp_servers:`) for the one-shot commands: started before the engine
//! is built, their tools registered on it, and shut down when the command ends, so that
//! cancellations still being sent go out and no child process outlives `toolgate`.

use std::sync::Mutex;

use toolgate::EngineBuilder;
use toolgate_mcp::upstream::{Problem, Upstreams};
use toolgate_policy::McpServerSpec;

/// Every set started by this process, for [`shutdown`].
static STARTED: Mutex<Vec<Upstreams>> = Mutex::new(Vec::new());

/// Starts the policy's servers (nothing when there are none) and registers their tools on
/// `builder`. Returns the builder and one line per problem: a server that did not start (its
/// tools are missing), a tool of its list left out; each line begins with the server entry's
/// `file:line:col:`.
pub fn attach(servers: &[McpServerSpec], builder: EngineBuilder) -> (EngineBuilder, Vec<Problem>) {
    if servers.is_empty() {
        return (builder, Vec::new());
    }
    // The commands build engines in synchronous code that runs on the runtime's threads.
    let upstreams = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(Upstreams::start(servers))
    });
    let problems = upstreams.problems();
    let builder = upstreams.register(builder);
    STARTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(upstreams);
    (builder, problems)
}

/// Stops every server started by [`attach`].
pub async fn shutdown() {
    let started = std::mem::take(&mut *STARTED.lock().unwrap_or_else(|p| p.into_inner()));
    for upstreams in started {
        upstreams.shutdown().await;
    }
}
