//! The plugin C ABI: the only things that cross the boundary between a host and a plugin.
//!
//! A plugin and its host may be built by different Rust compilers, so nothing here relies on
//! Rust's unstable layout: every type is `#[repr(C)]`, and only raw pointers with lengths,
//! fixed-size integers and `extern "C"` function pointers cross. Structured data crosses as
//! UTF-8 JSON text.
//!
//! # How a host talks to a plugin
//!
//! 1. The host looks up one symbol, [`ENTRY_SYMBOL`] (`toolgate_plugin_entry`), of type
//!    [`EntryFn`], and calls it. It returns a pointer to a static [`PluginVTable`].
//! 2. The host reads only the [`VTableHeader`] first (the first two `u32` fields of every
//!    version of the table): if `abi_version` is not [`ABI_VERSION`], it stops there, without
//!    touching anything else. It also checks that `struct_size` covers the table it expects.
//! 3. [`PluginVTable::manifest`] gives the plugin's name, version and tools as JSON
//!    (see [`Manifest`](crate::Manifest) for the shape).
//! 4. [`PluginVTable::init`] takes the configuration from the policy as JSON and returns an
//!    opaque instance pointer, or an error message. A library may be instantiated more than
//!    once, with different configurations.
//! 5. [`PluginVTable::call`] runs one tool on an instance, with a [`CallContext`] that carries
//!    the host's cancellation flag and progress callback. It may be called from many threads
//!    at once on the same instance.
//! 6. [`PluginVTable::destroy`] drops an instance.
//! 7. [`PluginVTable::call_streaming`], when the table is large enough to have it (a table of
//!    [`VTABLE_V1_SIZE`] bytes, from an older plugin, does not): `call` with a
//!    [`StreamContext`] whose chunk callback takes the result's text as it is produced, and
//!    answers [`CHUNK_STOP`] once the host has enough.
//!
//! # Memory
//!
//! Whoever allocates, frees. Strings the host passes in ([`StrRef`]) are borrowed for the
//! duration of the call only. Buffers the plugin hands out ([`OwnedBuf`]) are allocated by the
//! plugin and must be given back to [`PluginVTable::free_buf`]; the host never frees them
//! itself, because the two sides may not even share an allocator.
//!
//! A host checks every length a plugin reports (an [`OwnedBuf`], a [`StrRef`] passed to a
//! callback) against a limit before it reads a byte (`toolgate_plugin_api::bounds` with the
//! `host` feature: 4 MiB for a manifest or a load-time message, 256 MiB for a call's output or
//! a chunk, 64 KiB for a progress message); past it the buffer is refused unread.
//!
//! # Panics
//!
//! A panic unwinding out of an `extern "C"` function aborts the process. Every function a
//! plugin exports must therefore catch panics itself and report them as [`STATUS_PANIC`] with
//! the panic message (the SDK does this for you). The same holds for the host's progress
//! callback, which must not unwind into the plugin.

use core::ffi::c_void;
use core::sync::atomic::AtomicBool;

/// The ABI version this crate speaks. A host refuses a plugin whose table has another version.
///
/// Bump it on any change to the layout or meaning of the types in this module.
pub const ABI_VERSION: u32 = 1;

/// The name of the one symbol a plugin exports.
pub const ENTRY_SYMBOL: &str = "toolgate_plugin_entry";

/// The type of the [`ENTRY_SYMBOL`] function: returns a pointer to a table that lives for as
/// long as the library is loaded. It must not fail, allocate or panic.
pub type EntryFn = unsafe extern "C" fn() -> *const VTableHeader;

/// The call succeeded. For [`PluginVTable::call`] the output buffer holds a JSON array of parts
/// (see [`Part`](crate::Part) for the wire shape); for [`PluginVTable::manifest`] the manifest
/// JSON; for [`PluginVTable::init`] the instance pointer was written.
///
/// # JSON revisions
///
/// The JSON that crosses has grown without a change to the table, so the ABI version is still
/// [`ABI_VERSION`]. The second revision adds a tool's `title`, `annotations` and `output_schema`
/// to the manifest ([`ToolManifest`](crate::ToolManifest)) and the `structured` part
/// ([`Part::Structured`](crate::Part::Structured)) to a call's output. A host of the first
/// revision ignores the manifest fields and refuses a call's output with a `structured` part as
/// invalid; a plugin that uses none of them works with hosts of both revisions, and a plugin of
/// the first revision works with every host. The third adds the manifest's `config_paths`
/// ([`Manifest::config_paths`](crate::Manifest::config_paths)), which an older host ignores
/// (it then passes the paths on as written).
pub const STATUS_OK: u32 = 0;
/// The operation failed; the output buffer holds a UTF-8 message for a person or a model.
pub const STATUS_ERROR: u32 = 1;
/// The plugin panicked; the output buffer holds the panic message.
pub const STATUS_PANIC: u32 = 2;
/// A call's arguments were not valid JSON or did not have the shape the tool expects; the
/// output buffer holds a UTF-8 message naming the tool and what was wrong.
pub const STATUS_INVALID_ARGUMENTS: u32 = 3;

/// A borrowed UTF-8 string, passed by the side that owns it for the duration of one call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StrRef {
    /// Start of the bytes; may be dangling or null when `len` is 0.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl StrRef {
    /// Borrows `s` for passing across the boundary.
    pub fn new(s: &str) -> StrRef {
        StrRef {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The bytes this refers to.
    ///
    /// # Safety
    ///
    /// `ptr` must point to `len` readable bytes that stay valid and unchanged for `'a`
    /// (or `len` must be 0).
    pub unsafe fn as_bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: guaranteed by the caller.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A byte buffer allocated by the plugin and handed to the host, which reads it and then gives
/// it back to [`PluginVTable::free_buf`].
#[repr(C)]
#[derive(Debug)]
pub struct OwnedBuf {
    /// Start of the bytes; null for an empty buffer.
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
}

impl OwnedBuf {
    /// An empty buffer: what a host initialises an out-parameter with. Freeing it is a no-op.
    pub const EMPTY: OwnedBuf = OwnedBuf {
        ptr: core::ptr::null_mut(),
        len: 0,
    };

    /// Hands `bytes` over as a raw buffer. Only the side that did this may free it, with
    /// [`OwnedBuf::free`].
    pub fn from_vec(bytes: Vec<u8>) -> OwnedBuf {
        if bytes.is_empty() {
            return OwnedBuf::EMPTY;
        }
        let boxed: Box<[u8]> = bytes.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed).cast::<u8>();
        OwnedBuf { ptr, len }
    }

    /// The bytes of the buffer.
    ///
    /// # Safety
    ///
    /// The buffer must come from [`OwnedBuf::from_vec`] (in either library) and not have been
    /// freed yet.
    pub unsafe fn as_bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: guaranteed by the caller.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Frees a buffer made by [`OwnedBuf::from_vec`] in this same library.
    ///
    /// # Safety
    ///
    /// The buffer must come from [`OwnedBuf::from_vec`] in the library calling this, and must
    /// not be used afterwards.
    pub unsafe fn free(self) {
        if self.ptr.is_null() {
            return;
        }
        let slice = core::ptr::slice_from_raw_parts_mut(self.ptr, self.len);
        // SAFETY: the pointer and length come from `Box::<[u8]>::into_raw` in `from_vec`.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// The host's progress callback: `context` is [`CallContext::progress_context`], `message` a
/// UTF-8 progress text. The host must not let a panic unwind out of it.
pub type ProgressFn = unsafe extern "C" fn(context: *mut c_void, message: StrRef);

/// The host's chunk callback, for streamed output: `context` is
/// [`StreamContext::chunk_context`], `text` a UTF-8 piece of the tool's text output. Returns
/// [`CHUNK_CONTINUE`], or [`CHUNK_STOP`] when the host wants no more (its result cap is reached,
/// or the call was cancelled): the tool should then return soon. The host must not let a panic
/// unwind out of it.
pub type ChunkFn = unsafe extern "C" fn(context: *mut c_void, text: StrRef) -> u32;

/// [`ChunkFn`]'s answer: go on.
pub const CHUNK_CONTINUE: u32 = 0;
/// [`ChunkFn`]'s answer: the host wants no more output; stop.
pub const CHUNK_STOP: u32 = 1;

/// What a tool call can see of its host, valid for the duration of that one call.
///
/// A plugin may poll the cancellation flag from any thread while the call runs, but must call
/// the progress callback only from the thread that received the call, and only before the call
/// returns.
#[repr(C)]
#[derive(Debug)]
pub struct CallContext {
    /// A flag the host sets when the call should stop (a deadline passed, the turn was
    /// cancelled). One byte holding 0 or 1, read atomically; null means "never cancelled".
    pub cancel_flag: *const AtomicBool,
    /// Called to report progress; `None` when the host does not listen.
    pub progress: Option<ProgressFn>,
    /// The first argument of every `progress` call; opaque to the plugin.
    pub progress_context: *mut c_void,
}

/// A [`CallContext`] with a chunk callback: what [`PluginVTable::call_streaming`] receives.
///
/// The chunk callback follows the rules of the progress callback: only from the thread that
/// received the call, only before the call returns. Text sent as chunks is the start of the
/// result; the parts the call returns follow it.
#[repr(C)]
#[derive(Debug)]
pub struct StreamContext {
    /// The cancellation flag and progress callback.
    pub call: CallContext,
    /// Called with each chunk of text; `None` when the host takes no chunks.
    pub chunk: Option<ChunkFn>,
    /// The first argument of every `chunk` call; opaque to the plugin.
    pub chunk_context: *mut c_void,
}

/// The type of [`PluginVTable::call_streaming`].
pub type CallStreamingFn = unsafe extern "C" fn(
    instance: *const c_void,
    tool: StrRef,
    arguments: StrRef,
    context: *const StreamContext,
    out: *mut OwnedBuf,
) -> u32;

/// The first fields of every version of the plugin table: read these, and only these, before
/// knowing the plugin speaks [`ABI_VERSION`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct VTableHeader {
    /// The ABI version the plugin was built for.
    pub abi_version: u32,
    /// `size_of` the whole table, in bytes, as the plugin sees it.
    pub struct_size: u32,
}

/// The table of functions a plugin exports, version [`ABI_VERSION`].
///
/// Every function returns one of the `STATUS_*` codes and never unwinds.
#[repr(C)]
#[derive(Debug)]
pub struct PluginVTable {
    /// The common header; `abi_version` is [`ABI_VERSION`].
    pub header: VTableHeader,
    /// Writes the manifest JSON (name, version, tools) into `out`.
    pub manifest: unsafe extern "C" fn(out: *mut OwnedBuf) -> u32,
    /// Starts an instance with the JSON configuration `config` (`null` when the policy gives
    /// none). On [`STATUS_OK`] writes the instance into `instance`; otherwise writes the message
    /// into `error`.
    pub init: unsafe extern "C" fn(
        config: StrRef,
        instance: *mut *mut c_void,
        error: *mut OwnedBuf,
    ) -> u32,
    /// Runs tool `tool` of `instance` with the JSON arguments `arguments`. Writes the parts
    /// (on [`STATUS_OK`]) or the message (otherwise) into `out`. Thread-safe: may run on many
    /// threads at once for the same instance.
    pub call: unsafe extern "C" fn(
        instance: *const c_void,
        tool: StrRef,
        arguments: StrRef,
        context: *const CallContext,
        out: *mut OwnedBuf,
    ) -> u32,
    /// Drops an instance made by `init`. No call may be running on it.
    pub destroy: unsafe extern "C" fn(instance: *mut c_void),
    /// Frees a buffer this plugin wrote into an out-parameter.
    pub free_buf: unsafe extern "C" fn(buf: OwnedBuf),
    /// Added after the first release of ABI 1, so present only when `struct_size` is at least
    /// [`VTABLE_SIZE`]: `call`, with a chunk callback for streamed text. A host reads it only
    /// after checking the size; a table of [`VTABLE_V1_SIZE`] bytes (an older plugin) lacks it
    /// and is called through `call`.
    pub call_streaming: Option<CallStreamingFn>,
}

/// The size of [`PluginVTable`] as this crate lays it out, for [`VTableHeader::struct_size`].
pub const VTABLE_SIZE: u32 = core::mem::size_of::<PluginVTable>() as u32;

/// The size of the first table of ABI 1, up to `free_buf`: the least a host accepts.
pub const VTABLE_V1_SIZE: u32 = core::mem::offset_of!(PluginVTable, call_streaming) as u32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_the_first_eight_bytes_of_the_table() {
        assert_eq!(core::mem::offset_of!(PluginVTable, header), 0);
        assert_eq!(core::mem::size_of::<VTableHeader>(), 8);
        assert_eq!(core::mem::offset_of!(VTableHeader, abi_version), 0);
        assert_eq!(core::mem::offset_of!(VTableHeader, struct_size), 4);
    }

    #[test]
    fn the_streaming_call_is_added_after_the_first_table() {
        assert_eq!(
            VTABLE_V1_SIZE as usize,
            8 + 5 * core::mem::size_of::<usize>()
        );
        const { assert!(VTABLE_SIZE > VTABLE_V1_SIZE) };
    }

    #[test]
    fn atomic_bool_is_one_byte_like_a_c_bool() {
        assert_eq!(core::mem::size_of::<AtomicBool>(), 1);
        assert_eq!(core::mem::align_of::<AtomicBool>(), 1);
    }

    #[test]
    fn owned_buf_round_trips_its_bytes() {
        let buf = OwnedBuf::from_vec(b"hello".to_vec());
        // SAFETY: made by from_vec just above, freed once below.
        unsafe {
            assert_eq!(buf.as_bytes(), b"hello");
            buf.free();
        }
    }

    #[test]
    fn empty_owned_buf_is_null_and_frees_as_a_no_op() {
        let buf = OwnedBuf::from_vec(Vec::new());
        assert!(buf.ptr.is_null());
        // SAFETY: an empty buffer owns nothing.
        unsafe {
            assert_eq!(buf.as_bytes(), b"");
            buf.free();
        }
    }

    #[test]
    fn str_ref_of_empty_string_reads_as_empty() {
        let r = StrRef {
            ptr: core::ptr::null(),
            len: 0,
        };
        // SAFETY: len is 0.
        assert_eq!(unsafe { r.as_bytes() }, b"");
    }
}
