//! The host side: load a plugin library, check it, and call its tools.

use std::ffi::c_void;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::abi::{
    self, ABI_VERSION, ENTRY_SYMBOL, EntryFn, OwnedBuf, PluginVTable, STATUS_ERROR,
    STATUS_INVALID_ARGUMENTS, STATUS_OK, STATUS_PANIC, StrRef, VTABLE_SIZE, VTABLE_V1_SIZE,
    VTableHeader,
};
use crate::bounds::{self, MAX_OUTPUT_BYTES, MAX_PROGRESS_BYTES, TooLong};
use crate::builtin::Builtin;
use crate::load_error::{LoadError, OpenError, TableProblem};
use crate::manifest::{Capabilities, Manifest};
use crate::part::Part;

mod opening;
use opening::{read_manifest, start};

/// One tool a plugin offers, as the model will see it (and, as it is, in the manifest frame of
/// a worker process).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PluginToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments object.
    pub parameters: serde_json::Value,
    /// A name for people, when the manifest gives one.
    #[serde(default)]
    pub title: Option<String>,
    /// Behaviour hints (MCP `annotations`), when the manifest gives them.
    #[serde(default)]
    pub annotations: Option<serde_json::Value>,
    /// The JSON Schema of its structured result, when the manifest gives one.
    #[serde(default)]
    pub output_schema: Option<serde_json::Value>,
}

/// The result of one [`LoadedPlugin::call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginOutcome {
    /// The tool succeeded with these parts, in order.
    Ok(Vec<Part>),
    /// The tool failed; the message is the plugin's, written for the model.
    Error(String),
    /// The arguments were not JSON or not of the shape the tool expects; the message names the
    /// tool and what was wrong.
    InvalidArguments(String),
    /// The tool panicked; the plugin caught it and this is the panic message.
    Panic(String),
}

/// A cancellation flag the host owns and a plugin polls: cheap to clone, all clones share one
/// flag. Once cancelled it stays cancelled.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag that is not set.
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// Sets the flag: every call that receives it sees `is_cancelled() == true` from now on.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`CancelFlag::cancel`] was called on this flag or a clone of it.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A loaded, checked and started plugin.
///
/// ```no_run
/// use std::path::Path;
/// use toolgate_plugin_api::{CancelFlag, LoadedPlugin, PluginOutcome};
///
/// // SAFETY: the fs plugin of this workspace, built with the SDK: a library we trust.
/// let plugin = unsafe {
///     LoadedPlugin::load(
///         Path::new("target/debug/libtoolgate_plugin_fs.so"),
///         &serde_json::json!({"root": "/srv/docs"}),
///     )
/// }?;
/// for tool in plugin.tools() {
///     println!("{}: {}", tool.name, tool.description);
/// }
/// let cancel = CancelFlag::new();
/// let outcome = plugin.call("fs.list_dir", "{}", &cancel, &mut |progress| eprintln!("{progress}"));
/// match outcome {
///     PluginOutcome::Ok(parts) => println!("{parts:?}"),
///     other => eprintln!("failed: {other:?}"),
/// }
/// # Ok::<(), toolgate_plugin_api::LoadError>(())
/// ```
///
/// A library is never unloaded: once loaded it stays mapped for the life of the process, so no
/// pointer into it (its table, a thread it started) can ever dangle. Dropping a
/// `LoadedPlugin` drops the plugin's instance (its state), not the library.
///
/// `Send + Sync`: [`LoadedPlugin::call`] may run on many threads at once. The SDK makes every
/// plugin honour that (a plugin's state must be `Send + Sync`); a plugin written by hand against
/// [`crate::abi`] must too.
pub struct LoadedPlugin {
    path: PathBuf,
    name: String,
    version: String,
    tools: Vec<PluginToolSpec>,
    capabilities: Capabilities,
    table: &'static PluginVTable,
    instance: NonNull<c_void>,
}

// SAFETY: the table is immutable static data of a library that is never unloaded, and the ABI
// requires an instance to be usable from any thread, by many threads at once (`call` is
// thread-safe; `destroy` runs only from `Drop`, when no call can be running).
unsafe impl Send for LoadedPlugin {}
// SAFETY: see `Send`.
unsafe impl Sync for LoadedPlugin {}

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("path", &self.path)
            .field("name", &self.name)
            .field("version", &self.version)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// Loads the library at `path`, checks that it is a toolgate plugin speaking this ABI,
    /// reads its manifest and starts an instance with `config` (`null` when the policy gives
    /// none).
    ///
    /// Loading the same library twice (say with two configurations) gives two independent
    /// instances of one library.
    ///
    /// Before the system loader sees the file, it must be a regular file (a FIFO would block,
    /// a device never ends) and a complete shared library for this platform and architecture:
    /// its headers are read and every segment the loader maps must lie inside the file (mapping
    /// past the end of a truncated file kills the process with SIGBUS). Otherwise the error is
    /// [`LoadError::NotALibrary`]; when the loader itself refuses, [`LoadError::Open`] carries
    /// its own message. Then the ABI version, the table's size and the manifest are checked.
    ///
    /// # Safety
    ///
    /// Loading a library runs its code: its initialisers run inside `load`, before anything can
    /// look at them, and its exported functions run in `load` (entry, manifest, init), in every
    /// [`LoadedPlugin::call`] and on drop. No check can tell whether that code is sound, so
    /// `load` is `unsafe` (as `libloading::Library::new` is) and the caller promises that the
    /// library at `path`, for as long as the process lives:
    ///
    /// - has initialisers (and finalisers) that are sound to run in this process: load only
    ///   libraries you trust, as you would only run programs you trust;
    /// - if it exports [`ENTRY_SYMBOL`], exports it as an [`EntryFn`] that returns null or a
    ///   pointer to a [`VTableHeader`] valid for the life of the process;
    /// - if that header declares this crate's [`ABI_VERSION`] and a large enough size, keeps the
    ///   whole contract of [`crate::abi`] in that table: thread-safe `call`, buffers freed only by
    ///   its own `free_buf`, no panic unwinding out of a function. A plugin built with this
    ///   crate's SDK ([`export_plugin!`](crate::export_plugin)) keeps it by construction.
    ///
    /// What `load` checks itself (the file, its headers, the ABI version and size, the manifest)
    /// the caller need not promise. The file must also not change while it is being loaded.
    ///
    /// The engine calls this for the plugins a policy names: a policy is trusted configuration,
    /// like a program's command line, and its author vouches for the libraries it lists.
    pub unsafe fn load(path: &Path, config: &serde_json::Value) -> Result<LoadedPlugin, LoadError> {
        // SAFETY: the caller's promise, which is `open`'s.
        unsafe { LoadedPlugin::open(path) }?.start(config)
    }

    /// The first half of [`LoadedPlugin::load`]: loads the library, checks it and reads its
    /// manifest, without starting an instance (`init` has not run). A host checks the manifest
    /// (say its [`Capabilities`] against its grants), then calls [`OpenedPlugin::start`] or
    /// drops it. The library's initialisers and the plugin's entry and `manifest` functions
    /// have run: the ABI gives the manifest only through them, so this is the earliest point.
    ///
    /// # Safety
    ///
    /// As [`LoadedPlugin::load`].
    pub unsafe fn open(path: &Path) -> Result<OpenedPlugin, LoadError> {
        let path = path.to_path_buf();
        match std::fs::metadata(&path) {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(LoadError::NotFound { path });
            }
            Err(err) => {
                return Err(LoadError::Open {
                    path,
                    error: OpenError::Metadata(err),
                });
            }
        }

        if let Err(problem) = crate::libfile::check(&path) {
            return Err(LoadError::NotALibrary { path, problem });
        }

        // SAFETY: the caller promises that the library's initialisers are sound (`# Safety`);
        // `libfile::check` made sure every segment the loader maps lies inside the file.
        let library = match unsafe { libloading::Library::new(&path) } {
            Ok(library) => library,
            Err(err) => {
                return Err(LoadError::Open {
                    path,
                    error: OpenError::Loader(err),
                });
            }
        };
        // Never unloaded: the table, and anything the plugin started, live as long as we do.
        let library: &'static libloading::Library = Box::leak(Box::new(library));

        // SAFETY: the symbol, if present, has the ABI's `EntryFn` type (the caller's promise).
        let entry: EntryFn = match unsafe { library.get::<EntryFn>(ENTRY_SYMBOL) } {
            Ok(symbol) => *symbol,
            Err(_) => {
                return Err(LoadError::NotAPlugin {
                    path,
                    symbol: ENTRY_SYMBOL,
                });
            }
        };

        // SAFETY: the entry function takes nothing and returns null or a pointer to a header
        // valid for the life of the process (the caller's promise).
        let header_ptr = unsafe { entry() };
        // SAFETY: as above.
        unsafe { open_table(path, header_ptr) }
    }

    /// [`LoadedPlugin::open`] for a plugin linked into this program ([`Builtin`]): the same
    /// checks of its table (ABI version, size) and its manifest, without a library file. Its
    /// path, in messages, is `built-in:NAME`.
    pub fn open_builtin(builtin: &Builtin) -> Result<OpenedPlugin, LoadError> {
        let path = PathBuf::from(format!("built-in:{}", builtin.name()));
        let header_ptr = std::ptr::from_ref(builtin.table()).cast::<VTableHeader>();
        // SAFETY: a `Builtin` is made only by `export_plugin!`, from the SDK's static table,
        // which keeps the whole contract of `crate::abi`.
        unsafe { open_table(path, header_ptr) }
    }
}

/// Checks the table behind `header_ptr` (null, ABI version, size) and reads the manifest.
///
/// # Safety
///
/// `header_ptr` is null or points to a [`VTableHeader`] valid for the life of the process, at
/// the start of a table that keeps the contract of [`crate::abi`] when it declares this ABI.
unsafe fn open_table(
    path: PathBuf,
    header_ptr: *const VTableHeader,
) -> Result<OpenedPlugin, LoadError> {
    if header_ptr.is_null() {
        return Err(LoadError::BadTable {
            path,
            problem: TableProblem::NullEntry,
        });
    }
    // SAFETY: every version of the table starts with this header; we read nothing else
    // before checking the version.
    let header: VTableHeader = unsafe { header_ptr.read() };
    if header.abi_version != ABI_VERSION {
        return Err(LoadError::AbiMismatch {
            path,
            expected: ABI_VERSION,
            found: header.abi_version,
        });
    }
    if header.struct_size < VTABLE_V1_SIZE {
        return Err(LoadError::BadTable {
            path,
            problem: TableProblem::TooSmall {
                size: header.struct_size,
            },
        });
    }
    // SAFETY: the version and size were checked; the table is static data that lives as long
    // as the process (a library that is never unloaded, or this program's own).
    let table = unsafe { read_table(header_ptr, header.struct_size) };
    let manifest = read_manifest(table, &path)?;
    Ok(OpenedPlugin {
        path,
        manifest,
        table,
    })
}

/// A plugin library loaded and checked, its manifest read, its instance not started (what
/// [`LoadedPlugin::open`] returns). Dropping it starts nothing; the library stays loaded.
pub struct OpenedPlugin {
    path: PathBuf,
    manifest: Manifest,
    table: &'static PluginVTable,
}

impl fmt::Debug for OpenedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedPlugin")
            .field("path", &self.path)
            .field("manifest", &self.manifest)
            .finish_non_exhaustive()
    }
}

impl OpenedPlugin {
    /// The plugin's manifest, as checked.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Starts the plugin's instance with `config` (its `init`): the second half of
    /// [`LoadedPlugin::load`].
    pub fn start(self, config: &serde_json::Value) -> Result<LoadedPlugin, LoadError> {
        let OpenedPlugin {
            path,
            manifest,
            table,
        } = self;
        let instance = start(table, &path, &manifest.name, config)?;
        Ok(LoadedPlugin {
            path,
            name: manifest.name,
            version: manifest.version,
            tools: manifest
                .tools
                .into_iter()
                .map(|tool| PluginToolSpec {
                    name: tool.name,
                    description: tool.description,
                    parameters: tool.parameters,
                    title: tool.title,
                    annotations: tool.annotations,
                    output_schema: tool.output_schema,
                })
                .collect(),
            capabilities: manifest.capabilities,
            table,
            instance,
        })
    }
}

impl LoadedPlugin {
    /// What the plugin's manifest says it needs (empty when it declares nothing).
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// The plugin's name, from its manifest.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plugin's own version, from its manifest.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The path it was loaded from, as given to [`LoadedPlugin::load`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tools it offers, in the order the plugin lists them.
    pub fn tools(&self) -> &[PluginToolSpec] {
        &self.tools
    }

    /// Runs `tool` with the JSON `arguments` and waits for it: a blocking call, so an async
    /// host runs it on a blocking thread.
    ///
    /// `cancel` is the flag the tool polls; setting it from another thread asks the tool to
    /// stop, but a tool that ignores it runs to the end, so a host that enforces a deadline
    /// stops waiting instead of relying on it. `progress` receives the tool's progress messages,
    /// in order, on this thread, before `call` returns; a panic in it is re-raised here once
    /// the plugin has returned (it never unwinds through the plugin).
    ///
    /// Safe to call from many threads at once.
    pub fn call(
        &self,
        tool: &str,
        arguments: &str,
        cancel: &CancelFlag,
        progress: &mut dyn FnMut(&str),
    ) -> PluginOutcome {
        self.call_kept(tool, arguments, cancel, progress, None)
    }

    /// [`LoadedPlugin::call`], keeping at most `keep` characters of the outcome's text.
    fn call_kept(
        &self,
        tool: &str,
        arguments: &str,
        cancel: &CancelFlag,
        progress: &mut dyn FnMut(&str),
        keep: Option<u64>,
    ) -> PluginOutcome {
        let mut sink = ProgressSink {
            callback: progress,
            panic: None,
        };
        let context = abi::CallContext {
            cancel_flag: Arc::as_ptr(&cancel.0),
            progress: Some(progress_trampoline),
            progress_context: (&raw mut sink).cast::<c_void>(),
        };
        let mut out = OwnedBuf::EMPTY;
        // SAFETY: the table and instance are valid (checked in `load`, destroyed only on drop);
        // every pointer passed lives until the call returns.
        let status = unsafe {
            (self.table.call)(
                self.instance.as_ptr(),
                StrRef::new(tool),
                StrRef::new(arguments),
                &context,
                &mut out,
            )
        };
        let outcome = self.take_outcome(status, out, tool, keep);
        if let Some(payload) = sink.panic {
            resume_unwind(payload);
        }
        outcome
    }
}

impl LoadedPlugin {
    /// Decodes what a call wrote into `out` and frees the buffer with the plugin's own
    /// `free_buf`.
    fn take_outcome(
        &self,
        status: u32,
        out: OwnedBuf,
        tool: &str,
        keep: Option<u64>,
    ) -> PluginOutcome {
        // SAFETY: the plugin wrote `out` (or left it empty); we free it right after.
        let outcome = match unsafe { bounds::owned_bytes(&out, MAX_OUTPUT_BYTES) } {
            Ok(bytes) => decode_outcome(status, bytes, &self.name, tool, keep),
            Err(too_long) => PluginOutcome::Error(format!(
                "plugin {} returned {too_long}, for tool `{tool}`; none of it was read",
                self.name
            )),
        };
        // SAFETY: `out` was written by this plugin and is not used again.
        unsafe { (self.table.free_buf)(out) };
        outcome
    }

    /// Whether the plugin takes a chunk callback (a table with `call_streaming`). A plugin
    /// built with an older SDK does not; [`LoadedPlugin::call_streaming`] then calls it
    /// without chunks.
    pub fn can_stream(&self) -> bool {
        self.table.call_streaming.is_some()
    }

    /// [`LoadedPlugin::call`], with `chunk` receiving the text the tool streams, in order, on
    /// this thread, before the call returns; the parts of the outcome follow that text.
    /// `chunk` returns `false` to ask the tool to stop (it is told [`abi::CHUNK_STOP`]). A
    /// plugin that cannot stream is simply called, and `chunk` never runs. `keep`: at most this
    /// many characters of the outcome's text parts are kept, the rest is dropped unread.
    pub fn call_streaming(
        &self,
        tool: &str,
        arguments: &str,
        cancel: &CancelFlag,
        progress: &mut dyn FnMut(&str),
        chunk: &mut dyn FnMut(&str) -> bool,
        keep: Option<u64>,
    ) -> PluginOutcome {
        let Some(call_streaming) = self.table.call_streaming else {
            return self.call_kept(tool, arguments, cancel, progress, keep);
        };
        let mut progress_sink = ProgressSink {
            callback: progress,
            panic: None,
        };
        let mut chunk_sink = ChunkSink {
            callback: chunk,
            panic: None,
            too_long: None,
        };
        let context = abi::StreamContext {
            call: abi::CallContext {
                cancel_flag: Arc::as_ptr(&cancel.0),
                progress: Some(progress_trampoline),
                progress_context: (&raw mut progress_sink).cast::<c_void>(),
            },
            chunk: Some(chunk_trampoline),
            chunk_context: (&raw mut chunk_sink).cast::<c_void>(),
        };
        let mut out = OwnedBuf::EMPTY;
        // SAFETY: as in `call`; the stream context lives until the call returns.
        let status = unsafe {
            call_streaming(
                self.instance.as_ptr(),
                StrRef::new(tool),
                StrRef::new(arguments),
                &context,
                &mut out,
            )
        };
        let mut outcome = self.take_outcome(status, out, tool, keep);
        if let Some(payload) = progress_sink.panic.or(chunk_sink.panic) {
            resume_unwind(payload);
        }
        if let Some(too_long) = chunk_sink.too_long {
            outcome = PluginOutcome::Error(format!(
                "plugin {} streamed a chunk of {too_long}, for tool `{tool}`; it was not read and the call was stopped",
                self.name
            ));
        }
        outcome
    }
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        // SAFETY: the instance came from this table's `init`, and `&mut self` means no call is
        // running. The library itself stays loaded.
        unsafe { (self.table.destroy)(self.instance.as_ptr()) };
    }
}

/// The plugin's table as a whole [`PluginVTable`]: the table itself when it is that large, or
/// a copy of an older, shorter table of ABI 1 without `call_streaming`.
///
/// # Safety
///
/// `header` points to a table of ABI 1 of `size` bytes, at least [`VTABLE_V1_SIZE`], valid for
/// the life of the process.
unsafe fn read_table(header: *const VTableHeader, size: u32) -> &'static PluginVTable {
    if size >= VTABLE_SIZE {
        // SAFETY: the caller's promise: a whole table, never freed.
        return unsafe { &*header.cast::<PluginVTable>() };
    }
    // Read no further than the older table's size.
    // SAFETY: the caller's promise: at least the first table is there.
    let first = unsafe { header.cast::<TableV1>().read() };
    Box::leak(Box::new(PluginVTable {
        header: first.header,
        manifest: first.manifest,
        init: first.init,
        call: first.call,
        destroy: first.destroy,
        free_buf: first.free_buf,
        call_streaming: None,
    }))
}

/// The first table of ABI 1: [`PluginVTable`] up to `free_buf`.
#[repr(C)]
#[derive(Clone, Copy)]
struct TableV1 {
    header: VTableHeader,
    manifest: unsafe extern "C" fn(out: *mut OwnedBuf) -> u32,
    init: unsafe extern "C" fn(StrRef, *mut *mut c_void, *mut OwnedBuf) -> u32,
    call: unsafe extern "C" fn(
        *const c_void,
        StrRef,
        StrRef,
        *const abi::CallContext,
        *mut OwnedBuf,
    ) -> u32,
    destroy: unsafe extern "C" fn(instance: *mut c_void),
    free_buf: unsafe extern "C" fn(buf: OwnedBuf),
}

const _: () = assert!(std::mem::size_of::<TableV1>() == VTABLE_V1_SIZE as usize);

/// Where the chunk trampoline finds the host's callback.
struct ChunkSink<'a> {
    callback: &'a mut dyn FnMut(&str) -> bool,
    panic: Option<Box<dyn std::any::Any + Send>>,
    /// A chunk over [`MAX_OUTPUT_BYTES`]: not read, and the call is told to stop.
    too_long: Option<TooLong>,
}

unsafe extern "C" fn chunk_trampoline(context: *mut c_void, text: StrRef) -> u32 {
    if context.is_null() {
        return abi::CHUNK_STOP;
    }
    // SAFETY: `context` is the `ChunkSink` of a call still running on this thread (chunks may
    // only be sent from the calling thread, during the call).
    let sink = unsafe { &mut *context.cast::<ChunkSink<'_>>() };
    if sink.panic.is_some() || sink.too_long.is_some() {
        return abi::CHUNK_STOP;
    }
    // SAFETY: the plugin keeps the text valid for the duration of this callback.
    let text = match unsafe { bounds::borrowed_bytes(text, MAX_OUTPUT_BYTES) } {
        Ok(bytes) => String::from_utf8_lossy(bytes),
        Err(too_long) => {
            sink.too_long = Some(too_long);
            return abi::CHUNK_STOP;
        }
    };
    let callback = &mut sink.callback;
    match catch_unwind(AssertUnwindSafe(|| callback(&text))) {
        Ok(true) => abi::CHUNK_CONTINUE,
        Ok(false) => abi::CHUNK_STOP,
        Err(payload) => {
            sink.panic = Some(payload);
            abi::CHUNK_STOP
        }
    }
}

/// Where the progress trampoline finds the host's callback.
struct ProgressSink<'a> {
    callback: &'a mut dyn FnMut(&str),
    panic: Option<Box<dyn std::any::Any + Send>>,
}

unsafe extern "C" fn progress_trampoline(context: *mut c_void, message: StrRef) {
    if context.is_null() {
        return;
    }
    // SAFETY: `context` is the `ProgressSink` of a call still running on this thread (the
    // plugin may only report progress from the calling thread, during the call).
    let sink = unsafe { &mut *context.cast::<ProgressSink<'_>>() };
    if sink.panic.is_some() {
        return;
    }
    // SAFETY: the plugin keeps the message valid for the duration of this callback.
    let text = match unsafe { bounds::borrowed_bytes(message, MAX_PROGRESS_BYTES) } {
        Ok(bytes) => String::from_utf8_lossy(bytes),
        Err(too_long) => format!("(a progress message of {too_long}, left out)").into(),
    };
    let callback = &mut sink.callback;
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| callback(&text))) {
        sink.panic = Some(payload);
    }
}

/// The outcome a call's `status` and output `bytes` mean, keeping at most `keep` characters of
/// its text parts ([`crate::decode::parts`]).
fn decode_outcome(
    status: u32,
    bytes: &[u8],
    plugin: &str,
    tool: &str,
    keep: Option<u64>,
) -> PluginOutcome {
    let text = || String::from_utf8_lossy(bytes).into_owned();
    match status {
        STATUS_OK => match crate::decode::parts(bytes, keep) {
            Ok(parts) => PluginOutcome::Ok(parts),
            Err(err) => PluginOutcome::Error(format!(
                "plugin {plugin} returned malformed output for tool `{tool}`: {err}"
            )),
        },
        STATUS_ERROR => PluginOutcome::Error(text()),
        STATUS_INVALID_ARGUMENTS => PluginOutcome::InvalidArguments(text()),
        STATUS_PANIC => PluginOutcome::Panic(text()),
        other => PluginOutcome::Error(format!(
            "plugin {plugin} returned unknown status {other} for tool `{tool}`: {}",
            text()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_status_becomes_an_error_naming_it() {
        let outcome = decode_outcome(77, b"huh", "p", "t", None);
        assert_eq!(
            outcome,
            PluginOutcome::Error("plugin p returned unknown status 77 for tool `t`: huh".into())
        );
    }

    #[test]
    fn malformed_ok_output_becomes_an_error() {
        let outcome = decode_outcome(STATUS_OK, b"not json", "p", "t", None);
        let PluginOutcome::Error(message) = outcome else {
            panic!("expected an error, got {outcome:?}");
        };
        assert!(message.starts_with("plugin p returned malformed output for tool `t`"));
    }

    #[test]
    fn cancel_flag_clones_share_one_flag() {
        let flag = CancelFlag::new();
        let clone = flag.clone();
        assert!(!clone.is_cancelled());
        flag.cancel();
        assert!(clone.is_cancelled());
    }

    unsafe extern "C" fn no_manifest(_out: *mut OwnedBuf) -> u32 {
        STATUS_ERROR
    }
    unsafe extern "C" fn no_init(_: StrRef, _: *mut *mut c_void, _: *mut OwnedBuf) -> u32 {
        STATUS_ERROR
    }
    unsafe extern "C" fn no_call(
        _: *const c_void,
        _: StrRef,
        _: StrRef,
        _: *const abi::CallContext,
        _: *mut OwnedBuf,
    ) -> u32 {
        STATUS_ERROR
    }
    unsafe extern "C" fn no_destroy(_: *mut c_void) {}
    unsafe extern "C" fn no_free(_: OwnedBuf) {}

    #[test]
    fn an_older_table_without_the_streaming_call_is_read_as_one_that_cannot_stream() {
        static OLD: TableV1 = TableV1 {
            header: VTableHeader {
                abi_version: ABI_VERSION,
                struct_size: VTABLE_V1_SIZE,
            },
            manifest: no_manifest,
            init: no_init,
            call: no_call,
            destroy: no_destroy,
            free_buf: no_free,
        };
        // SAFETY: a static table of the first layout, of its own size.
        let table = unsafe { read_table(&raw const OLD.header, VTABLE_V1_SIZE) };
        assert!(table.call_streaming.is_none());
        assert_eq!(table.header.struct_size, VTABLE_V1_SIZE);
        assert_eq!(
            table.call as *const () as usize,
            no_call as *const () as usize
        );
    }

    #[test]
    fn loaded_plugin_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<LoadedPlugin>();
    }
}
