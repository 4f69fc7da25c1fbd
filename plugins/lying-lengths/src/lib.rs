//! A plugin that lies about lengths: where the ABI has it report how long a buffer is, it says
//! 1 TiB for a buffer of two bytes. A host must check each length against a limit before it
//! reads or allocates anything; reading the buffer as reported runs off its end, copying it asks
//! for a terabyte.
//!
//! Where it lies:
//!
//! - its manifest, when the environment variable [`LIE_IN_MANIFEST`] is set (the manifest comes
//!   before any configuration); otherwise the manifest is honest and lists the tools below;
//! - `init`'s error, when its configuration has the key `lie_in_init`;
//! - `lie.output`: the output of a successful call;
//! - `lie.error`: the message of a failed call;
//! - `lie.progress`: a progress message, before an honest empty output;
//! - `lie.chunk`: a streamed chunk, before an honest empty output.
//!
//! Every buffer it hands out is static, so its `free_buf` frees nothing.

#![warn(missing_docs)]

use core::ffi::c_void;

use toolgate_plugin_api::abi::{
    ABI_VERSION, CallContext, OwnedBuf, PluginVTable, STATUS_ERROR, STATUS_OK, StrRef,
    StreamContext, VTABLE_SIZE, VTableHeader,
};

/// The environment variable that makes the manifest lie.
pub const LIE_IN_MANIFEST: &str = "TOOLGATE_TEST_LIE_IN_MANIFEST";

/// The length it reports: 1 TiB.
pub const LIE: usize = 1 << 40;

/// The two bytes every lying buffer really holds (an empty JSON array).
static SHORT: &[u8] = b"[]";

static MANIFEST: &str = r#"{"name": "lying", "version": "0.1.0", "tools": [
  {"name": "lie.output", "description": "Returns output whose length is a lie.", "parameters": {"type": "object"}},
  {"name": "lie.error", "description": "Fails with a message whose length is a lie.", "parameters": {"type": "object"}},
  {"name": "lie.progress", "description": "Reports progress whose length is a lie.", "parameters": {"type": "object"}},
  {"name": "lie.chunk", "description": "Streams a chunk whose length is a lie.", "parameters": {"type": "object"}}
]}"#;

/// Its one (stateless) instance: any non-null pointer will do.
static INSTANCE: u8 = 0;

static TABLE: PluginVTable = PluginVTable {
    header: VTableHeader {
        abi_version: ABI_VERSION,
        struct_size: VTABLE_SIZE,
    },
    manifest,
    init,
    call,
    destroy,
    free_buf,
    call_streaming: Some(call_streaming),
};

/// The toolgate plugin entry point.
#[unsafe(no_mangle)]
pub extern "C" fn toolgate_plugin_entry() -> *const VTableHeader {
    &raw const TABLE.header
}

/// A buffer of `bytes` that says it is `len` bytes long.
fn buf(bytes: &'static [u8], len: usize) -> OwnedBuf {
    OwnedBuf {
        ptr: bytes.as_ptr().cast_mut(),
        len,
    }
}

/// Writes `value` into `out` when the host gave one.
///
/// # Safety
///
/// `out` is null or valid for a write.
unsafe fn put(out: *mut OwnedBuf, value: OwnedBuf) {
    if !out.is_null() {
        // SAFETY: the caller's promise.
        unsafe { out.write(value) };
    }
}

unsafe extern "C" fn manifest(out: *mut OwnedBuf) -> u32 {
    let value = if std::env::var_os(LIE_IN_MANIFEST).is_some() {
        buf(SHORT, LIE)
    } else {
        buf(MANIFEST.as_bytes(), MANIFEST.len())
    };
    // SAFETY: the host passes a valid out-parameter.
    unsafe { put(out, value) };
    STATUS_OK
}

unsafe extern "C" fn init(config: StrRef, instance: *mut *mut c_void, error: *mut OwnedBuf) -> u32 {
    // SAFETY: the host keeps the configuration valid for the call.
    let config = unsafe { config.as_bytes() };
    if config.windows(11).any(|w| w == b"lie_in_init") {
        // SAFETY: the host passes a valid out-parameter.
        unsafe { put(error, buf(SHORT, LIE)) };
        return STATUS_ERROR;
    }
    if !instance.is_null() {
        // SAFETY: the host passes a valid out-parameter.
        unsafe { instance.write((&raw const INSTANCE).cast_mut().cast()) };
    }
    STATUS_OK
}

unsafe extern "C" fn call(
    _instance: *const c_void,
    tool: StrRef,
    _arguments: StrRef,
    context: *const CallContext,
    out: *mut OwnedBuf,
) -> u32 {
    // SAFETY: the host keeps the tool name valid for the call.
    let tool = unsafe { tool.as_bytes() };
    let (status, value) = match tool {
        b"lie.output" => (STATUS_OK, buf(SHORT, LIE)),
        b"lie.error" => (STATUS_ERROR, buf(SHORT, LIE)),
        b"lie.progress" => {
            // SAFETY: the host's context is valid for the call; a lying message is the test.
            if let Some(context) = unsafe { context.as_ref() }
                && let Some(progress) = context.progress
            {
                let lie = StrRef {
                    ptr: SHORT.as_ptr(),
                    len: LIE,
                };
                // SAFETY: called on the calling thread, during the call, with the host's context.
                unsafe { progress(context.progress_context, lie) };
            }
            (STATUS_OK, buf(SHORT, SHORT.len()))
        }
        _ => (STATUS_OK, buf(SHORT, SHORT.len())),
    };
    // SAFETY: the host passes a valid out-parameter.
    unsafe { put(out, value) };
    status
}

unsafe extern "C" fn call_streaming(
    instance: *const c_void,
    tool: StrRef,
    arguments: StrRef,
    context: *const StreamContext,
    out: *mut OwnedBuf,
) -> u32 {
    // SAFETY: the host's context is valid for the call.
    let stream = unsafe { context.as_ref() };
    // SAFETY: the host keeps the tool name valid for the call.
    if unsafe { tool.as_bytes() } == b"lie.chunk"
        && let Some(stream) = stream
        && let Some(chunk) = stream.chunk
    {
        let lie = StrRef {
            ptr: SHORT.as_ptr(),
            len: LIE,
        };
        // SAFETY: called on the calling thread, during the call, with the host's context.
        unsafe { chunk(stream.chunk_context, lie) };
    }
    let call_context = stream.map_or(core::ptr::null(), |s| &raw const s.call);
    // SAFETY: the same host pointers, passed on.
    unsafe { call(instance, tool, arguments, call_context, out) }
}

unsafe extern "C" fn destroy(_instance: *mut c_void) {}

unsafe extern "C" fn free_buf(_buf: OwnedBuf) {}
