//! What a server says about a call is handled in the order it said it.
//!
//! rmcp hands each notification to the handler on a task of its own, while a response goes to
//! its caller at once: a server's last progress notification or log message of a call, sent
//! just before the call's result, would often be handled after the call had ended, when it no
//! longer finds its call (its client). This transport wrapper sees every message as it is read,
//! in order, and hands progress and log messages to the [`Handler`] right there (which never
//! waits), before whatever comes next is read; the messages then go on to rmcp as they are.

use std::borrow::Cow;
use std::future::Future;

use rmcp::model::{JsonRpcMessage, JsonRpcNotification, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::handler::Handler;

/// A transport whose progress and log notifications the handler sees in order.
pub(crate) struct Ordered<T> {
    inner: T,
    handler: Handler,
}

impl<T> Ordered<T> {
    pub(crate) fn new(inner: T, handler: Handler) -> Self {
        Ordered { inner, handler }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(JsonRpcNotification { notification, .. }) = &message {
            self.handler.observe(notification);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
