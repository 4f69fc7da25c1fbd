//! The Rust SDK for plugin authors: tools as plain functions, one macro to export them.

use std::any::Any;
use std::ffi::c_void;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use serde::de::DeserializeOwned;

use crate::Part;
use crate::abi::{
    self, ABI_VERSION, OwnedBuf, PluginVTable, STATUS_ERROR, STATUS_INVALID_ARGUMENTS, STATUS_OK,
    STATUS_PANIC, StrRef, VTABLE_SIZE, VTableHeader,
};

/// What a tool returns: text and image parts, in the order the model should see them.
///
/// ```
/// use toolgate_plugin_api::{Part, ToolOutput};
///
/// let out = ToolOutput::text("Here is the chart:")
///     .with_image("image/png", &[0x89, b'P', b'N', b'G'])
///     .with_text("Sales doubled.");
/// assert_eq!(out.parts().len(), 3);
/// assert_eq!(out.parts()[1], Part::Image {
///     mime_type: "image/png".into(),
///     data_base64: "iVBORw==".into(),
/// });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    parts: Vec<Part>,
}

impl ToolOutput {
    /// An output with no parts yet.
    pub fn new() -> ToolOutput {
        ToolOutput::default()
    }

    /// An output made of one text part.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            parts: vec![Part::Text(text.into())],
        }
    }

    /// Appends a text part.
    pub fn with_text(mut self, text: impl Into<String>) -> ToolOutput {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Appends an image given as raw bytes; they are base64-encoded for you.
    pub fn with_image(mut self, mime_type: impl Into<String>, bytes: &[u8]) -> ToolOutput {
        self.parts.push(Part::Image {
            mime_type: mime_type.into(),
            data_base64: encode_base64(bytes),
        });
        self
    }

    /// Appends an image whose bytes are already base64-encoded (standard alphabet, padded).
    pub fn with_image_base64(
        mut self,
        mime_type: impl Into<String>,
        data_base64: impl Into<String>,
    ) -> ToolOutput {
        self.parts.push(Part::Image {
            mime_type: mime_type.into(),
            data_base64: data_base64.into(),
        });
        self
    }

    /// Appends any part.
    pub fn push(&mut self, part: Part) {
        self.parts.push(part);
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The parts, in order, by value.
    pub fn into_parts(self) -> Vec<Part> {
        self.parts
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> ToolOutput {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> ToolOutput {
        ToolOutput::text(text)
    }
}

/// A tool's failure: a message for the model, saying what went wrong and, where it can, what to
/// do instead.
///
/// Every `std::io::Error`, `String` and `&str` converts into one, so `?` works on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
        }
    }

    /// The failure of a call that stopped because the host cancelled it. Its message is
    /// `cancelled`.
    pub fn cancelled() -> ToolError {
        ToolError::new("cancelled")
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> ToolError {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> ToolError {
        ToolError::new(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> ToolError {
        ToolError::new(err.to_string())
    }
}

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

/// Why a call failed, before it becomes a status code.
enum Failure {
    Tool(ToolError),
    InvalidArguments(String),
}

type Handler<S> =
    dyn Fn(&CallContext<'_, S>, &str) -> Result<ToolOutput, Failure> + Send + Sync + 'static;

/// One tool of a plugin: its name, description, JSON Schema, and the function that runs it.
///
/// The function takes the [`CallContext`] and the arguments, which the SDK deserializes from
/// the model's JSON with serde (blank arguments count as `{}`). When they do not fit, the
/// function is not called and the model gets
/// "invalid arguments for tool `NAME`: WHAT SERDE SAID".
pub struct Tool<S> {
    name: String,
    description: String,
    parameters: serde_json::Value,
    handler: Box<Handler<S>>,
}

impl<S: 'static> Tool<S> {
    /// A tool called `name` that runs `function`. Its description is empty and its schema
    /// `{"type": "object"}` until you set them.
    pub fn new<A, F>(name: impl Into<String>, function: F) -> Tool<S>
    where
        A: DeserializeOwned,
        F: Fn(&CallContext<'_, S>, A) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    {
        let handler = move |ctx: &CallContext<'_, S>, arguments: &str| {
            let arguments = if arguments.trim().is_empty() {
                "{}"
            } else {
                arguments
            };
            let args: A = serde_json::from_str(arguments).map_err(|err| {
                Failure::InvalidArguments(format!(
                    "invalid arguments for tool `{}`: {err}",
                    ctx.tool_name()
                ))
            })?;
            function(ctx, args).map_err(Failure::Tool)
        };
        Tool {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
            handler: Box::new(handler),
        }
    }
}

impl<S> Tool<S> {
    /// Sets what the model reads about the tool.
    pub fn description(mut self, description: impl Into<String>) -> Tool<S> {
        self.description = description.into();
        self
    }

    /// Sets the JSON Schema of the arguments object.
    pub fn parameters(mut self, schema: serde_json::Value) -> Tool<S> {
        self.parameters = schema;
        self
    }
}

/// The arguments of a tool that takes none: accepts `{}` (or blank arguments) and rejects any
/// field.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

type InitFn<S> = dyn Fn(&str) -> Result<S, String> + Send + Sync + 'static;

/// A whole plugin: name, version, how to start it, and its tools. [`export_plugin!`] builds one
/// for you; you only need this type to build it by hand.
pub struct Plugin<S> {
    name: String,
    version: String,
    init: Box<InitFn<S>>,
    tools: Vec<Tool<S>>,
}

impl Plugin<()> {
    /// A plugin without state: it accepts any configuration and its tools see `()`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Plugin<()> {
        Plugin {
            name: name.into(),
            version: version.into(),
            init: Box::new(|_| Ok(())),
            tools: Vec::new(),
        }
    }

    /// Sets the function that starts the plugin: it takes the configuration from the policy,
    /// deserialized by serde into `C` (use `Option<C>` to accept a missing configuration,
    /// which arrives as `null`), and returns the state every call sees, or a message saying
    /// what is wrong with the configuration.
    ///
    /// # Panics
    ///
    /// If tools were added before: call `init` first.
    pub fn init<C, T, E, F>(self, function: F) -> Plugin<T>
    where
        C: DeserializeOwned,
        E: fmt::Display,
        F: Fn(C) -> Result<T, E> + Send + Sync + 'static,
    {
        assert!(
            self.tools.is_empty(),
            "Plugin::init must be called before Plugin::tool"
        );
        let init = move |config: &str| {
            let config: C = serde_json::from_str(config)
                .map_err(|err| format!("invalid configuration: {err}"))?;
            function(config).map_err(|err| err.to_string())
        };
        Plugin {
            name: self.name,
            version: self.version,
            init: Box::new(init),
            tools: Vec::new(),
        }
    }
}

impl<S> Plugin<S> {
    /// Adds a tool.
    pub fn tool(mut self, tool: Tool<S>) -> Plugin<S> {
        self.tools.push(tool);
        self
    }

    fn manifest(&self) -> crate::Manifest {
        crate::Manifest {
            name: self.name.clone(),
            version: self.version.clone(),
            tools: self
                .tools
                .iter()
                .map(|tool| crate::ToolManifest {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                })
                .collect(),
        }
    }
}

/// A plugin with its state type erased, so the exported functions need not name it.
#[doc(hidden)]
pub trait ErasedPlugin: Send + Sync + 'static {
    fn manifest_json(&self) -> Result<Vec<u8>, String>;
    fn instantiate(&'static self, config: &str) -> Result<Box<dyn ErasedInstance>, String>;
}

/// A started plugin instance with its state type erased.
#[doc(hidden)]
pub trait ErasedInstance: Send + Sync {
    fn call(&self, tool: &str, arguments: &str, context: &abi::CallContext) -> (u32, Vec<u8>);
}

impl<S: Send + Sync + 'static> ErasedPlugin for Plugin<S> {
    fn manifest_json(&self) -> Result<Vec<u8>, String> {
        serde_json::to_vec(&self.manifest()).map_err(|err| format!("cannot encode manifest: {err}"))
    }

    fn instantiate(&'static self, config: &str) -> Result<Box<dyn ErasedInstance>, String> {
        let state = (self.init)(config)?;
        Ok(Box::new(Instance {
            plugin: self,
            state,
        }))
    }
}

struct Instance<S: 'static> {
    plugin: &'static Plugin<S>,
    state: S,
}

impl<S: Send + Sync + 'static> ErasedInstance for Instance<S> {
    fn call(&self, tool: &str, arguments: &str, context: &abi::CallContext) -> (u32, Vec<u8>) {
        let Some(found) = self.plugin.tools.iter().find(|t| t.name == tool) else {
            let names: Vec<&str> = self.plugin.tools.iter().map(|t| t.name.as_str()).collect();
            let message = format!(
                "plugin `{}` has no tool named `{tool}`; its tools are: {}",
                self.plugin.name,
                names.join(", ")
            );
            return (STATUS_ERROR, message.into_bytes());
        };
        let ctx = CallContext {
            state: &self.state,
            tool: &found.name,
            raw: context,
        };
        match (found.handler)(&ctx, arguments) {
            Ok(output) => match serde_json::to_vec(&output.parts) {
                Ok(json) => (STATUS_OK, json),
                Err(err) => (
                    STATUS_ERROR,
                    format!("cannot encode the output of tool `{tool}`: {err}").into_bytes(),
                ),
            },
            Err(Failure::Tool(err)) => (STATUS_ERROR, err.message.into_bytes()),
            Err(Failure::InvalidArguments(message)) => {
                (STATUS_INVALID_ARGUMENTS, message.into_bytes())
            }
        }
    }
}

/// Names the plugin that a set of exported functions serve. Implemented by [`export_plugin!`].
#[doc(hidden)]
pub trait PluginProvider {
    fn plugin() -> &'static dyn ErasedPlugin;
}

/// The ABI table for the plugin `P` provides.
#[doc(hidden)]
pub const fn vtable<P: PluginProvider>() -> PluginVTable {
    PluginVTable {
        header: VTableHeader {
            abi_version: ABI_VERSION,
            struct_size: VTABLE_SIZE,
        },
        manifest: manifest_ffi::<P>,
        init: init_ffi::<P>,
        call: call_ffi,
        destroy: destroy_ffi,
        free_buf: free_buf_ffi,
    }
}

/// Runs `body` with panics caught, writes its bytes (or the panic message) into `out`, and
/// returns its status (or [`STATUS_PANIC`]).
fn guarded(out: *mut OwnedBuf, body: impl FnOnce() -> (u32, Vec<u8>)) -> u32 {
    let (status, bytes) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => {
            let message = crate::panic_message(&*payload);
            drop_payload(payload);
            (STATUS_PANIC, message.into_bytes())
        }
    };
    if !out.is_null() {
        // SAFETY: the host passes a valid out-parameter (ABI contract); it was checked for null.
        unsafe { out.write(OwnedBuf::from_vec(bytes)) };
    }
    status
}

/// Drops a panic payload without letting a panicking destructor unwind further.
fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

fn utf8<'a>(s: StrRef, what: &str) -> Result<&'a str, String> {
    // SAFETY: the host keeps its strings valid for the duration of the call (ABI contract).
    let bytes = unsafe { s.as_bytes() };
    std::str::from_utf8(bytes).map_err(|err| format!("{what} is not valid UTF-8: {err}"))
}

unsafe extern "C" fn manifest_ffi<P: PluginProvider>(out: *mut OwnedBuf) -> u32 {
    guarded(out, || match P::plugin().manifest_json() {
        Ok(json) => (STATUS_OK, json),
        Err(message) => (STATUS_ERROR, message.into_bytes()),
    })
}

unsafe extern "C" fn init_ffi<P: PluginProvider>(
    config: StrRef,
    instance: *mut *mut c_void,
    error: *mut OwnedBuf,
) -> u32 {
    guarded(error, || {
        if instance.is_null() {
            return (
                STATUS_ERROR,
                b"the host passed a null instance pointer".to_vec(),
            );
        }
        let config = match utf8(config, "the configuration") {
            Ok(config) if config.trim().is_empty() => "null",
            Ok(config) => config,
            Err(message) => return (STATUS_ERROR, message.into_bytes()),
        };
        match P::plugin().instantiate(config) {
            Ok(erased) => {
                let raw = Box::into_raw(Box::new(erased)).cast::<c_void>();
                // SAFETY: checked for null above; the host owns the slot.
                unsafe { instance.write(raw) };
                (STATUS_OK, Vec::new())
            }
            Err(message) => (STATUS_ERROR, message.into_bytes()),
        }
    })
}

unsafe extern "C" fn call_ffi(
    instance: *const c_void,
    tool: StrRef,
    arguments: StrRef,
    context: *const abi::CallContext,
    out: *mut OwnedBuf,
) -> u32 {
    guarded(out, || {
        if instance.is_null() {
            return (STATUS_ERROR, b"the host passed a null instance".to_vec());
        }
        // SAFETY: a non-null instance comes from `init_ffi`, which made it from a
        // `Box<Box<dyn ErasedInstance>>`, and the host does not destroy it during a call.
        let erased = unsafe { &*instance.cast::<Box<dyn ErasedInstance>>() };
        let tool = match utf8(tool, "the tool name") {
            Ok(tool) => tool,
            Err(message) => return (STATUS_ERROR, message.into_bytes()),
        };
        let arguments = match utf8(arguments, "the arguments") {
            Ok(arguments) => arguments,
            Err(message) => {
                let message = format!("invalid arguments for tool `{tool}`: {message}");
                return (STATUS_INVALID_ARGUMENTS, message.into_bytes());
            }
        };
        let no_context = abi::CallContext {
            cancel_flag: std::ptr::null(),
            progress: None,
            progress_context: std::ptr::null_mut(),
        };
        let context = if context.is_null() {
            &no_context
        } else {
            // SAFETY: the host keeps the context valid for the duration of the call.
            unsafe { &*context }
        };
        erased.call(tool, arguments, context)
    })
}

unsafe extern "C" fn destroy_ffi(instance: *mut c_void) {
    if instance.is_null() {
        return;
    }
    // SAFETY: made by `init_ffi` from a `Box<Box<dyn ErasedInstance>>`; the host destroys it
    // once, with no call running.
    let erased = unsafe { Box::from_raw(instance.cast::<Box<dyn ErasedInstance>>()) };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(erased))) {
        // Nobody to report a panicking destructor to: the host is done with the instance.
        drop_payload(payload);
    }
}

unsafe extern "C" fn free_buf_ffi(buf: OwnedBuf) {
    // SAFETY: the host only gives back buffers this library wrote (ABI contract).
    unsafe { buf.free() }
}

/// Exports a plugin: writes the `toolgate_plugin_entry` symbol and the ABI table around your
/// tools.
///
/// ```text
/// toolgate_plugin_api::export_plugin! {
///     name: "testkit",                     // the plugin's name
///     version: env!("CARGO_PKG_VERSION"),  // its version
///     init: init,                          // optional: fn(Config) -> Result<State, E: Display>
///     tools: [                             // each a `Tool<State>`
///         Tool::new("echo", echo).description("...").parameters(json!({...})),
///     ],
/// }
/// ```
///
/// Use it once per library, at the top level of the crate. See the crate documentation for a
/// complete plugin.
#[macro_export]
macro_rules! export_plugin {
    (
        name: $name:expr,
        version: $version:expr,
        $(init: $init:expr,)?
        tools: [ $($tool:expr),* $(,)? ] $(,)?
    ) => {
        const _: () = {
            struct ToolgatePlugin;

            impl $crate::__private::PluginProvider for ToolgatePlugin {
                fn plugin() -> &'static dyn $crate::__private::ErasedPlugin {
                    static PLUGIN: ::std::sync::OnceLock<
                        ::std::boxed::Box<dyn $crate::__private::ErasedPlugin>,
                    > = ::std::sync::OnceLock::new();
                    &**PLUGIN.get_or_init(|| {
                        ::std::boxed::Box::new(
                            $crate::Plugin::new($name, $version)
                                $(.init($init))?
                                $(.tool($tool))*
                        )
                    })
                }
            }

            static VTABLE: $crate::abi::PluginVTable =
                $crate::__private::vtable::<ToolgatePlugin>();

            /// The toolgate plugin entry point: returns the ABI table.
            #[unsafe(no_mangle)]
            pub extern "C" fn toolgate_plugin_entry() -> *const $crate::abi::VTableHeader {
                (&raw const VTABLE).cast::<$crate::abi::VTableHeader>()
            }
        };
    };
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes bytes as standard base64 with padding (RFC 4648 §4), the form image parts use.
///
/// ```
/// assert_eq!(toolgate_plugin_api::encode_base64(b"Man"), "TWFu");
/// assert_eq!(toolgate_plugin_api::encode_base64(b"Ma"), "TWE=");
/// ```
pub fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = chunk[0];
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let n = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let sextet = |shift: u32| char::from(BASE64_ALPHABET[((n >> shift) & 0x3f) as usize]);
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_test_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in vectors {
            assert_eq!(encode_base64(input.as_bytes()), expected, "input {input:?}");
        }
    }

    #[test]
    fn base64_uses_plus_and_slash_for_the_last_two_symbols() {
        assert_eq!(encode_base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn tool_output_keeps_parts_in_the_order_they_were_added() {
        let out = ToolOutput::text("a")
            .with_image_base64("image/png", "QQ==")
            .with_text("b");
        assert_eq!(
            out.into_parts(),
            vec![
                Part::Text("a".into()),
                Part::Image {
                    mime_type: "image/png".into(),
                    data_base64: "QQ==".into()
                },
                Part::Text("b".into()),
            ]
        );
    }

    fn no_context() -> abi::CallContext {
        abi::CallContext {
            cancel_flag: std::ptr::null(),
            progress: None,
            progress_context: std::ptr::null_mut(),
        }
    }

    #[derive(serde::Deserialize)]
    struct AddArgs {
        a: i64,
        b: i64,
    }

    fn add(_ctx: &CallContext<'_, i64>, args: AddArgs) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text((args.a + args.b).to_string()))
    }

    fn leaked_adder() -> &'static Plugin<i64> {
        let plugin = Plugin::new("adder", "1.0.0")
            .init(|offset: i64| Ok::<_, String>(offset))
            .tool(Tool::new("add", add));
        Box::leak(Box::new(plugin))
    }

    fn call(plugin: &'static Plugin<i64>, tool: &str, arguments: &str) -> (u32, String) {
        let instance = plugin.instantiate("0").expect("instantiates");
        let (status, bytes) = instance.call(tool, arguments, &no_context());
        (status, String::from_utf8(bytes).expect("utf-8"))
    }

    #[test]
    fn a_tool_gets_its_arguments_deserialized() {
        let (status, out) = call(leaked_adder(), "add", r#"{"a": 2, "b": 3}"#);
        assert_eq!(status, STATUS_OK);
        assert_eq!(out, r#"[{"type":"text","text":"5"}]"#);
    }

    #[test]
    fn arguments_of_the_wrong_shape_are_invalid_arguments_naming_the_tool() {
        let (status, out) = call(leaked_adder(), "add", r#"{"a": 2}"#);
        assert_eq!(status, STATUS_INVALID_ARGUMENTS);
        assert!(
            out.starts_with("invalid arguments for tool `add`: missing field `b`"),
            "{out}"
        );
    }

    #[test]
    fn an_unknown_tool_is_an_error_listing_the_tools() {
        let (status, out) = call(leaked_adder(), "sub", "{}");
        assert_eq!(status, STATUS_ERROR);
        assert_eq!(
            out,
            "plugin `adder` has no tool named `sub`; its tools are: add"
        );
    }

    #[test]
    fn init_with_a_config_of_the_wrong_type_says_the_configuration_is_invalid() {
        let err = leaked_adder()
            .instantiate(r#""seven""#)
            .err()
            .expect("init fails");
        assert!(
            err.starts_with("invalid configuration: invalid type: string"),
            "{err}"
        );
    }

    #[test]
    fn no_args_rejects_any_field() {
        assert!(serde_json::from_str::<NoArgs>("{}").is_ok());
        assert!(serde_json::from_str::<NoArgs>(r#"{"x": 1}"#).is_err());
    }

    #[test]
    fn guarded_turns_a_panic_into_the_panic_status_and_message() {
        let mut out = OwnedBuf::EMPTY;
        let status = guarded(&mut out, || panic!("boom {}", 7));
        assert_eq!(status, STATUS_PANIC);
        // SAFETY: written by guarded in this library, freed once.
        unsafe {
            assert_eq!(out.as_bytes(), b"boom 7");
            out.free();
        }
    }
}
