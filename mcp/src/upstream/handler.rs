//! What toolgate does with what an upstream server sends on its own: progress of a call goes
//! to that call's progress (an `update` event), and `notifications/tools/list_changed` wakes
//! the server's supervisor to fetch the new list.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
use rmcp::model::{ClientConfig, Implementation, ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::Notify;
use toolgate::tool::ToolContext;

/// The client side of one server's connections (one handler serves every restart).
#[derive(Clone)]
pub(crate) struct Handler {
    shared: Arc<Shared>,
}

struct Shared {
    server: String,
    /// Calls in flight that may get progress, by the progress token of their request.
    calls: Mutex<HashMap<ProgressToken, ToolContext>>,
    list_changed: Notify,
}

/// While alive, progress for one request goes to its call; dropping it stops that.
pub(crate) struct Tracked {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.shared.calls().remove(&self.token);
    }
}

impl Shared {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ToolContext>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Handler {
    pub(crate) fn new(server: &str) -> Handler {
        Handler {
            shared: Arc::new(Shared {
                server: server.to_owned(),
                calls: Mutex::new(HashMap::new()),
                list_changed: Notify::new(),
            }),
        }
    }

    /// Routes the progress of the request with `token` to `ctx` until the guard is dropped.
    pub(crate) fn track(&self, token: ProgressToken, ctx: ToolContext) -> Tracked {
        self.shared.calls().insert(token.clone(), ctx);
        Tracked {
            shared: self.shared.clone(),
            token,
        }
    }

    /// The server said its tool list changed (on 2026-07-28, on its listen stream).
    pub(crate) fn tools_changed(&self) {
        self.shared.list_changed.notify_one();
    }

    /// Resolves when the server said its tool list changed (once per notice; a notice that
    /// came while nobody waited is kept).
    pub(crate) async fn list_changed(&self) {
        self.shared.list_changed.notified().await;
    }
}

/// The text of a progress notification: `3/10: message`, `3: message`, `message`.
pub(crate) fn progress_text(p: &ProgressNotificationParam) -> String {
    let amount = match p.total {
        Some(total) => format!("{}/{}", p.progress, total),
        None => p.progress.to_string(),
    };
    match &p.message {
        Some(m) if !m.is_empty() => format!("{amount}: {m}"),
        _ => amount,
    }
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let ctx = self.shared.calls().get(&params.progress_token).cloned();
        if let Some(ctx) = ctx {
            ctx.progress(&progress_text(&params));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.shared.server, "the MCP server says its tool list changed");
        self.tools_changed();
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new("toolgate", env!("CARGO_PKG_VERSION"));
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> ProgressNotificationParam {
        let mut p = ProgressNotificationParam::new(
            ProgressToken(rmcp::model::NumberOrString::Number(1)),
            progress,
        );
        p.total = total;
        p.message = message.map(str::to_owned);
        p
    }

    #[test]
    fn progress_reads_as_amount_of_total_and_message() {
        assert_eq!(
            progress_text(&progress(3.0, Some(10.0), Some("copying"))),
            "3/10: copying"
        );
        assert_eq!(progress_text(&progress(0.5, None, None)), "0.5");
    }
}
