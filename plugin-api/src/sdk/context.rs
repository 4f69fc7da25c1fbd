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
    /// The host's chunk callback and its context, when it takes streamed text.
    chunk: Option<(abi::ChunkFn, *mut std::ffi::c_void)>,
    /// What [`CallContext::emit`] collected for a host that takes no chunks: it goes before
    /// the result's parts.
    emitted: std::cell::RefCell<String>,
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
        chunk: Option<(abi::ChunkFn, *mut std::ffi::c_void)>,
    ) -> CallContext<'a, S> {
        CallContext {
            state,
            tool,
            raw,
            chunk,
            emitted: std::cell::RefCell::default(),
        }
    }

    /// The text [`CallContext::emit`] kept because the host takes no chunks.
    pub(super) fn take_emitted(&self) -> String {
        self.emitted.take()
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
            chunk: None,
            emitted: std::cell::RefCell::default(),
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

    /// Sends a piece of the result's text now, before the call ends (streaming): the host
    /// applies its result cap as the text arrives. The result the tool returns follows the
    /// emitted text. `Err` (cancelled) when the host wants no more, because its cap is reached
    /// or the call was cancelled: return it with `?`, the rest would be thrown away. A host
    /// that takes no chunks gets the emitted text at the start of the result instead.
    pub fn emit(&self, text: &str) -> Result<(), ToolError> {
        match self.chunk {
            Some((chunk, context)) => {
                // SAFETY: the host keeps the callback and its context valid for the whole
                // call, and we are on the calling thread (CallContext is !Send).
                let answer = unsafe { chunk(context, StrRef::new(text)) };
                if answer == abi::CHUNK_CONTINUE {
                    Ok(())
                } else {
                    Err(ToolError::cancelled())
                }
            }
            None => {
                self.emitted.borrow_mut().push_str(text);
                self.check_cancelled()
            }
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
