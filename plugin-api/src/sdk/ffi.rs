//! The C side of an SDK plugin: the functions of the ABI table, each with panics caught at the
//! boundary, and the table itself.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::plugin::{ErasedInstance, ErasedPlugin};
use crate::abi::{
    self, ABI_VERSION, OwnedBuf, PluginVTable, STATUS_ERROR, STATUS_INVALID_ARGUMENTS, STATUS_OK,
    STATUS_PANIC, StrRef, VTABLE_SIZE, VTableHeader,
};

/// Names the plugin that a set of exported functions serve. Implemented by [`export_plugin!`](crate::export_plugin).
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
        call_streaming: Some(call_streaming_ffi),
    }
}

thread_local! {
    /// Set while this thread runs a guarded plugin function.
    static IN_GUARDED_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Set `TOOLGATE_PLUGIN_PANIC_OUTPUT=1` to let a caught plugin panic print as usual.
const PANIC_OUTPUT_ENV: &str = "TOOLGATE_PLUGIN_PANIC_OUTPUT";

/// A panic inside a guarded call is caught and its message handed to the host, which reports
/// it; printing it to stderr as well would only add noise to the host's output. Panics anywhere
/// else go to the hook that was installed before.
fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet =
                IN_GUARDED_CALL.with(|f| f.get()) && std::env::var_os(PANIC_OUTPUT_ENV).is_none();
            if !quiet {
                previous(info);
            }
        }));
    });
}

/// Runs `body` with panics caught, writes its bytes (or the panic message) into `out`, and
/// returns its status (or [`STATUS_PANIC`]).
fn guarded(out: *mut OwnedBuf, body: impl FnOnce() -> (u32, Vec<u8>)) -> u32 {
    install_quiet_panic_hook();
    let was = IN_GUARDED_CALL.with(|f| f.replace(true));
    let caught = catch_unwind(AssertUnwindSafe(body));
    IN_GUARDED_CALL.with(|f| f.set(was));
    let (status, bytes) = match caught {
        Ok(result) => result,
        Err(payload) => {
            let message = crate::panic::panic_message(&*payload);
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

/// A call's instance, tool name and arguments.
type Decoded<'a> = (&'a dyn ErasedInstance, &'a str, &'a str);

/// The instance, tool name and arguments of a call as the host passed them, checked: a null
/// instance or a tool name that is not UTF-8 is an error, arguments that are not UTF-8 are
/// invalid arguments. `Err` holds the status and message to answer.
///
/// # Safety
///
/// `instance` is null or was made by `init_ffi` and is not destroyed during the call; the
/// strings stay valid for the call's duration (ABI contract).
unsafe fn decode_call<'a>(
    instance: *const c_void,
    tool: StrRef,
    arguments: StrRef,
) -> Result<Decoded<'a>, (u32, Vec<u8>)> {
    if instance.is_null() {
        return Err((STATUS_ERROR, b"the host passed a null instance".to_vec()));
    }
    // SAFETY: a non-null instance comes from `init_ffi`, which made it from a
    // `Box<Box<dyn ErasedInstance>>`, and the host does not destroy it during a call.
    let erased = unsafe { &*instance.cast::<Box<dyn ErasedInstance>>() };
    let tool =
        utf8(tool, "the tool name").map_err(|message| (STATUS_ERROR, message.into_bytes()))?;
    let arguments = utf8(arguments, "the arguments").map_err(|message| {
        let message = format!("invalid arguments for tool `{tool}`: {message}");
        (STATUS_INVALID_ARGUMENTS, message.into_bytes())
    })?;
    Ok((&**erased, tool, arguments))
}

unsafe extern "C" fn call_ffi(
    instance: *const c_void,
    tool: StrRef,
    arguments: StrRef,
    context: *const abi::CallContext,
    out: *mut OwnedBuf,
) -> u32 {
    guarded(out, || {
        // SAFETY: as the host passed them (ABI contract), see `decode_call`.
        let (erased, tool, arguments) = match unsafe { decode_call(instance, tool, arguments) } {
            Ok(call) => call,
            Err(answer) => return answer,
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
        erased.call(tool, arguments, context, None)
    })
}

unsafe extern "C" fn call_streaming_ffi(
    instance: *const c_void,
    tool: StrRef,
    arguments: StrRef,
    context: *const abi::StreamContext,
    out: *mut OwnedBuf,
) -> u32 {
    if context.is_null() {
        // SAFETY: forwarded as received; `call_ffi` accepts a null context.
        return unsafe { call_ffi(instance, tool, arguments, std::ptr::null(), out) };
    }
    // SAFETY: the host keeps the context valid for the duration of the call.
    let stream = unsafe { &*context };
    guarded(out, || {
        // SAFETY: as the host passed them (ABI contract), see `decode_call`.
        let (erased, tool, arguments) = match unsafe { decode_call(instance, tool, arguments) } {
            Ok(call) => call,
            Err(answer) => return answer,
        };
        let chunk = stream.chunk.map(|chunk| (chunk, stream.chunk_context));
        erased.call(tool, arguments, &stream.call, chunk)
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Runs the streaming entry point with a context, so it decodes the call itself.
    fn call_streaming(instance: *const c_void, tool: StrRef, arguments: StrRef) -> (u32, String) {
        let context = abi::StreamContext {
            call: abi::CallContext {
                cancel_flag: std::ptr::null(),
                progress: None,
                progress_context: std::ptr::null_mut(),
            },
            chunk: None,
            chunk_context: std::ptr::null_mut(),
        };
        let mut out = OwnedBuf::EMPTY;
        // SAFETY: a null instance and strings that live through the call.
        let status = unsafe { call_streaming_ffi(instance, tool, arguments, &context, &mut out) };
        // SAFETY: written by this library, freed once.
        let text = unsafe {
            let text = String::from_utf8_lossy(out.as_bytes()).into_owned();
            out.free();
            text
        };
        (status, text)
    }

    #[test]
    fn a_streaming_call_on_a_null_instance_is_an_error() {
        let (status, text) =
            call_streaming(std::ptr::null(), StrRef::new("echo"), StrRef::new("{}"));
        assert_eq!(
            (status, text.as_str()),
            (STATUS_ERROR, "the host passed a null instance")
        );
    }

    #[test]
    fn arguments_that_are_not_utf8_are_invalid_arguments() {
        let bytes = [0xff_u8, 0xfe];
        let arguments = StrRef {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        };
        // A real instance: it is checked before the arguments.
        let instance: Box<dyn ErasedInstance> = Box::new(Nothing);
        let instance = Box::into_raw(Box::new(instance));
        let (status, text) = call_streaming(instance.cast(), StrRef::new("echo"), arguments);
        // SAFETY: made just above, freed once.
        drop(unsafe { Box::from_raw(instance) });
        assert_eq!(status, STATUS_INVALID_ARGUMENTS);
        assert!(
            text.starts_with("invalid arguments for tool `echo`"),
            "{text}"
        );
    }

    /// An instance that must not be called.
    struct Nothing;

    impl ErasedInstance for Nothing {
        fn call(
            &self,
            _tool: &str,
            _arguments: &str,
            _context: &abi::CallContext,
            _chunk: Option<(abi::ChunkFn, *mut c_void)>,
        ) -> (u32, Vec<u8>) {
            (STATUS_OK, b"called".to_vec())
        }
    }
}
