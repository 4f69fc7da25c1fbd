//! [`LoadError`]: why a plugin library could not be loaded, with what was wrong as typed data.

use std::path::PathBuf;

use crate::abi::{ABI_VERSION, ENTRY_SYMBOL, VTABLE_V1_SIZE};

/// Why a plugin library could not be loaded. Each message names the library's path.
///
/// Each message is complete: a variant with a typed cause (an I/O or loader error, a JSON error,
/// what is wrong with the file, the table or the manifest) keeps it in a field and says it in its
/// text, and `source()` never returns what the text already says. `InitFailed` and `Panicked`
/// carry the plugin's own message, text that crossed the C ABI.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// There is no file at the path.
    #[error("plugin library {} does not exist", path.display())]
    NotFound {
        /// The path that was given.
        path: PathBuf,
    },
    /// The file is not a complete shared library for this platform: a directory, a FIFO, a
    /// device, a file of another format, or a truncated library. Checked before the system
    /// loader sees it, since mapping a truncated library kills the process.
    #[error("{} {problem}", path.display())]
    NotALibrary {
        /// The library's path.
        path: PathBuf,
        /// What is wrong with it, said as a phrase that follows the path.
        problem: LibraryProblem,
    },
    /// The file exists but the system loader refused it (not a shared library, wrong
    /// architecture, a missing dependency, ...).
    #[error("cannot open plugin library {}: {error}", path.display())]
    Open {
        /// The library's path.
        path: PathBuf,
        /// What the file system or the system loader said.
        error: OpenError,
    },
    /// The library loads but does not export the entry symbol.
    #[error("{} is not a toolgate plugin: it does not export {symbol}", path.display())]
    NotAPlugin {
        /// The library's path.
        path: PathBuf,
        /// The symbol looked for ([`ENTRY_SYMBOL`]).
        symbol: &'static str,
    },
    /// The plugin was built for another version of the ABI.
    #[error(
        "{} was built for toolgate plugin ABI {found}, this toolgate speaks ABI {expected}; \
         rebuild the plugin against this version of toolgate-plugin-api",
        path.display()
    )]
    AbiMismatch {
        /// The library's path.
        path: PathBuf,
        /// The version this host speaks ([`ABI_VERSION`]).
        expected: u32,
        /// The version the plugin declares.
        found: u32,
    },
    /// The plugin's table is unusable (null, or smaller than its version requires).
    #[error("{} has a broken plugin table: {problem}", path.display())]
    BadTable {
        /// The library's path.
        path: PathBuf,
        /// What is wrong with it.
        problem: TableProblem,
    },
    /// The plugin's manifest (name, version, tools) could not be read or is invalid.
    #[error("{} has a bad manifest: {problem}", path.display())]
    BadManifest {
        /// The library's path.
        path: PathBuf,
        /// What is wrong with it.
        problem: ManifestProblem,
    },
    /// The plugin's `init` refused its configuration.
    #[error("plugin {plugin} ({}) failed to start: {message}", path.display())]
    InitFailed {
        /// The library's path.
        path: PathBuf,
        /// The plugin's name from its manifest.
        plugin: String,
        /// The plugin's message.
        message: String,
    },
    /// The plugin panicked while describing itself or starting.
    #[error("plugin {plugin} ({}) panicked while {during}: {message}", path.display())]
    Panicked {
        /// The library's path.
        path: PathBuf,
        /// The plugin's name, when it is known.
        plugin: String,
        /// `describing itself` or `starting`.
        during: &'static str,
        /// The panic message.
        message: String,
    },
}

/// What is wrong with a file that cannot be a plugin library: the cause in
/// [`LoadError::NotALibrary`]. Each text is a phrase that follows the file's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LibraryProblem {
    /// The file's type or contents cannot be read.
    #[error("cannot be read: {0}")]
    Unreadable(std::io::Error),
    /// The path is not a regular file.
    #[error("is {kind}, not a shared library file")]
    NotAFile {
        /// What it is instead, such as "a directory" or "a FIFO (named pipe)".
        kind: &'static str,
    },
    /// The file is in no object format this host knows.
    #[error("is not a shared library: it is not an {native} file ({size} bytes)")]
    UnknownFormat {
        /// The format this platform loads: `ELF` or `Mach-O`.
        native: &'static str,
        /// The file's size.
        size: u64,
    },
    /// The file is an object file, but not of a kind a loader reads as a library.
    #[error("is not a shared library: it is not an {native} file")]
    NotALoadableFormat {
        /// The format this platform loads: `ELF` or `Mach-O`.
        native: &'static str,
    },
    /// The file is of another platform's format.
    #[error("is a {format} file; this system loads {native} shared libraries")]
    ForeignFormat {
        /// The file's format.
        format: &'static str,
        /// The format this platform loads.
        native: &'static str,
    },
    /// The headers do not parse.
    #[error("is damaged or truncated ({size} bytes): its headers cannot be read: {error}")]
    BadHeaders {
        /// The file's size.
        size: u64,
        /// What the object-file reader said.
        error: object::read::Error,
    },
    /// The file is an executable, an object file or a core dump, not a shared library.
    #[error("is not a shared library: it is {what}")]
    NotDynamic {
        /// What it is, such as "an executable program".
        what: &'static str,
    },
    /// The library is built for another machine.
    #[error("is built for another architecture ({found}); this program runs on {host}")]
    OtherArchitecture {
        /// The library's architecture.
        found: String,
        /// This program's.
        host: String,
    },
    /// A segment the loader would map lies (partly) past the end of the file.
    #[error(
        "is truncated or damaged: a segment{} needs bytes {start}..{end} of the file, \
         which has only {size} bytes",
        segment.as_ref().map(|name| format!(" ({name})")).unwrap_or_default()
    )]
    SegmentOutside {
        /// The segment's name, when it has one.
        segment: Option<String>,
        /// Where the segment starts in the file.
        start: u64,
        /// Where it ends.
        end: u64,
        /// The file's size.
        size: u64,
    },
    /// One architecture's library in a fat Mach-O file lies (partly) past the end of the file.
    #[error(
        "is truncated or damaged: its {arch} library needs bytes {start}..{end} of the \
         file, which has only {size} bytes"
    )]
    FatArchOutside {
        /// The architecture.
        arch: String,
        /// Where its library starts in the file.
        start: u64,
        /// Where it ends.
        end: u64,
        /// The file's size.
        size: u64,
    },
    /// One architecture's library in a fat Mach-O file cannot be read.
    #[error("is damaged: its {arch} library cannot be read: {error}")]
    FatArchUnreadable {
        /// The architecture.
        arch: String,
        /// What the object-file reader said.
        error: object::read::Error,
    },
    /// A fat Mach-O file without a library for this program's architecture.
    #[error(
        "has no library for this program's architecture ({host}); it holds {}",
        held.join(", ")
    )]
    NoHostArchitecture {
        /// This program's architecture.
        host: String,
        /// The architectures the file holds.
        held: Vec<String>,
    },
}

/// What the file system or the system loader said when a library could not be opened: the
/// cause in [`LoadError::Open`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file's metadata cannot be read.
    #[error("{0}")]
    Metadata(std::io::Error),
    /// The system loader refused the library; the text is the loader's own (`dlerror`, or the
    /// Windows error), which `libloading` keeps as its error's source.
    #[error("{}", loader_message(.0))]
    Loader(libloading::Error),
}

/// What the system loader said. `libloading`'s own message is only "dlopen failed"; the
/// loader's text (`dlerror`, or the Windows error) is its source.
fn loader_message(err: &libloading::Error) -> String {
    match std::error::Error::source(err) {
        Some(source) => source.to_string(),
        None => err.to_string(),
    }
}

/// What is wrong with a plugin's table: the cause in [`LoadError::BadTable`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableProblem {
    /// The entry function returned no table.
    #[error("{ENTRY_SYMBOL} returned a null pointer")]
    NullEntry,
    /// The table is smaller than this ABI's.
    #[error("it is {size} bytes, ABI {ABI_VERSION} needs at least {VTABLE_V1_SIZE}")]
    TooSmall {
        /// The size the table declares.
        size: u32,
    },
    /// `init` said it succeeded but gave no instance.
    #[error("init reported success but returned a null instance")]
    NullInstance,
}

/// What is wrong with a plugin's manifest: the cause in [`LoadError::BadManifest`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestProblem {
    /// The plugin's `manifest` function failed.
    #[error("the plugin could not describe itself (status {status}): {message}")]
    Failed {
        /// The status it returned.
        status: u32,
        /// Its message.
        message: String,
    },
    /// The manifest is longer than [`MAX_MANIFEST_BYTES`](crate::bounds::MAX_MANIFEST_BYTES):
    /// it was not read.
    #[error("the manifest is {0}; it was not read")]
    TooLong(crate::bounds::TooLong),
    /// The manifest is not the JSON of a [`Manifest`](crate::Manifest).
    #[error("invalid JSON: {0}")]
    Json(serde_json::Error),
    /// The plugin's name is blank.
    #[error("the plugin name is blank")]
    BlankName,
    /// A tool's name is blank.
    #[error("a tool has a blank name")]
    BlankToolName,
    /// Two tools have one name.
    #[error("tool `{name}` is listed twice")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// A tool's parameters are not a JSON object.
    #[error("the parameters of tool `{tool}` are not a JSON Schema object")]
    ParametersNotObject {
        /// The tool.
        tool: String,
    },
    /// A tool's `output_schema` or `annotations` is there but not a JSON object.
    #[error("the {field} of tool `{tool}` is not a JSON object")]
    NotAnObject {
        /// The tool.
        tool: String,
        /// `output_schema` or `annotations`.
        field: &'static str,
    },
}
