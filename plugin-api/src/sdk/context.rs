//! What a tool call sees: [`CallContext`].

use std::sync::atomic::Ordering;

use super::output::ToolError;
use crate::abi::{self, StrRef};

/// What a tool call can see: the plugin's state from `init`, the host's cancellation flag and
/// its progress callback.
///
/// A `CallContext` is valid only during the call and cannot leave the calling thread (it is
/// neither `Send` nor `Sync`), which is exactly the contract of the ABI's progress callback.
pub struct CallContext<'a, S = ()> {
    state: &'a S,
    tool: &'a str,
    raw: &'a abi::CallContext,
}

/// The raw context of a call that no host watches: never cancelled, progress dropped.
struct Detached(abi::CallContext);

// SAFETY: it holds only null pointers and no callback.
unsafe impl Sync for Detached {}

static DETACHED: Detached = Detached(abi::CallContext {
    cancel_flag: std::ptr::null(),
    progress: None,
    progress_context: std::ptr::null_mut(),
});

impl<'a, S> CallContext<'a, S> {
    /// The context of a call the host made with `raw`.
    pub(super) fn new(
        tool: &'a str,
        state: &'a S,
        raw: &'a abi::CallContext,
    ) -> CallContext<'a, S> {
        CallContext { state, tool, raw }
    }

    /// A context connected to no host: never cancelled, progress goes nowhere. For unit tests
    /// of tool functions, which can then be called as plain Rust.
    ///
    /// ```
    /// use toolgate_plugin_api::{CallContext, ToolOutput};
    ///
    /// let state = 40;
    /// let ctx = CallContext::detached("answer", &state);
    /// assert_eq!(ctx.state() + 2, 42);
    /// assert!(!ctx.is_cancelled());
    /// ```
    pub fn detached(tool: &'a str, state: &'a S) -> CallContext<'a, S> {
        CallContext {
            state,
            tool,
            raw: &DETACHED.0,
        }
    }

    /// The state the plugin's `init` function built (`()` for a plugin without `init`).
    pub fn state(&self) -> &'a S {
        self.state
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &'a str {
        self.tool
    }

    /// Whether the host asked this call to stop (its deadline passed, or the turn was
    /// cancelled). Cheap: one atomic load. A long-running tool should poll it and return
    /// early, typically with [`ToolError::cancelled`].
    pub fn is_cancelled(&self) -> bool {
        if self.raw.cancel_flag.is_null() {
            return false;
        }
        // SAFETY: the host keeps the flag alive for the whole call (ABI contract), and a
        // `CallContext` cannot outlive the call.
        unsafe { (*self.raw.cancel_flag).load(Ordering::Acquire) }
    }

    /// `Err(ToolError::cancelled())` once the host asked this call to stop, for use with `?`.
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.is_cancelled() {
            Err(ToolError::cancelled())
        } else {
            Ok(())
        }
    }

    /// Tells the host how the call is going (the engine turns it into an `update` event).
    /// Does nothing when the host does not listen.
    pub fn progress(&self, message: &str) {
        if let Some(progress) = self.raw.progress {
            // SAFETY: the host keeps the callback and its context valid for the whole call,
            // and we are on the calling thread (CallContext is !Send).
            unsafe { progress(self.raw.progress_context, StrRef::new(message)) }
        }
    }
}
