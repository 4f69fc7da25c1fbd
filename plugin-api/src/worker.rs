//! The worker protocol: how a host talks to a plugin loaded in another process
//! (`isolation: process`).
//!
//! The host starts a worker (`toolgate plugin-host`) with piped stdin and stdout. Each side
//! writes frames: a 4-byte little-endian length, then that many bytes of one JSON object with a
//! `"type"` field. Frames larger than [`MAX_FRAME`] are refused. The worker's stderr is not
//! part of the protocol (it carries the plugin's own logging, and the message of a crash).
//!
//! ```text
//! host -> worker   hello {library, config, confine?, grants?, builtin?, base_dir?}   once, first
//! worker -> host   manifest {name, version, tools, capabilities} | load_failed {message}
//!                  | not_granted {name, missing}   (asked for more than `grants`; not started)
//! host -> worker   call {id, tool, args, deadline_ms, keep_chars?}
//! host -> worker   cancel {id}
//! worker -> host   progress {id, message}
//! worker -> host   chunk {id, text}               streamed text of a running call
//! worker -> host   result {id, outcome}
//! ```
//!
//! Calls run concurrently in the worker, each on its own thread; results come back in the order
//! they finish. [`serve`] is the worker side, whole; the host side lives in the engine.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::{CancelFlag, Capabilities, LoadedPlugin, Part, PluginOutcome, PluginToolSpec};

mod opening;
pub mod pace;
pub use pace::WATCH;
use pace::{Input, Pace, take};

/// The largest frame either side accepts: 256 MiB.
pub const MAX_FRAME: usize = 256 * 1024 * 1024;

/// A frame from the host to the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// `hello` is written once per worker and no frame is kept: its size costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum HostFrame {
    /// Load this library with this configuration.
    Hello {
        /// The library file.
        library: PathBuf,
        /// The plugin's configuration, as `init` receives it.
        config: serde_json::Value,
        /// File access to confine the worker to before it loads the library, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confine: Option<Confine>,
        /// What the policy grants the plugin. When present, a plugin whose manifest asks for
        /// more is not started (its `init` never runs): the worker answers `not_granted`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grants: Option<Capabilities>,
        /// Serve the plugin of this name built into the worker's program
        /// ([`crate::builtin`]) instead of loading `library` (then the program itself, for the
        /// confinement).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        builtin: Option<String>,
        /// The folder of the policy that configures the plugin: the relative paths of the
        /// configuration at its manifest's `config_paths` are resolved against it before `init`
        /// ([`crate::resolve_config_paths`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_dir: Option<PathBuf>,
    },
    /// Run one tool.
    Call {
        /// The host's id for the call, unique while it runs.
        id: u64,
        /// The tool's name in the plugin.
        tool: String,
        /// The arguments, as JSON text.
        args: String,
        /// Milliseconds the host will wait; past them it kills the worker. Informational.
        deadline_ms: Option<u64>,
        /// Keep at most this many characters of the result's text; the worker drops the rest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_chars: Option<u64>,
    },
    /// Ask a running call to stop (sets its cancellation flag).
    Cancel {
        /// The call's id.
        id: u64,
    },
}

/// A frame from the worker to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerFrame {
    /// The library loaded: its manifest.
    Manifest {
        /// The plugin's name.
        name: String,
        /// The plugin's version.
        version: String,
        /// Its tools.
        tools: Vec<WireTool>,
        /// What it needs (its manifest's `capabilities`).
        #[serde(default)]
        capabilities: Capabilities,
    },
    /// The plugin asks for more than `hello`'s grants; it was not started.
    NotGranted {
        /// The plugin's name.
        name: String,
        /// What is missing ([`Capabilities::missing_from`]).
        missing: Vec<String>,
    },
    /// The library did not load.
    LoadFailed {
        /// Why, as the host loader words it.
        message: String,
    },
    /// A progress message of a running call.
    Progress {
        /// The call's id.
        id: u64,
        /// The message.
        message: String,
    },
    /// A text chunk of a running call, before its result (streaming).
    Chunk {
        /// The call's id.
        id: u64,
        /// The text.
        text: String,
    },
    /// A call ended.
    Result {
        /// The call's id.
        id: u64,
        /// How it ended.
        outcome: WireOutcome,
    },
}

/// What a worker may do once confined: the granted roots (the worker adds what it needs to
/// load the library: the library itself, the system's library directories), and whether it
/// may open Internet sockets and start processes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confine {
    /// Files and directories it may read.
    pub fs_read: Vec<PathBuf>,
    /// Files and directories it may read and write.
    pub fs_write: Vec<PathBuf>,
    /// A `net` grant: it may open Internet sockets (never Unix ones).
    #[serde(default)]
    pub net: bool,
    /// A `subprocess` grant: it may start processes and run programs.
    #[serde(default)]
    pub subprocess: bool,
}

/// A tool of the manifest frame: the tool as the worker's host reads it from the plugin.
pub type WireTool = PluginToolSpec;

/// How a call ended: [`PluginOutcome`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum WireOutcome {
    /// Success, with its parts.
    Ok {
        /// The parts.
        parts: Vec<Part>,
    },
    /// The tool failed.
    Error {
        /// Its message.
        message: String,
    },
    /// The arguments did not fit.
    InvalidArguments {
        /// Its message.
        message: String,
    },
    /// The tool panicked.
    Panic {
        /// The panic message.
        message: String,
    },
}

impl From<PluginOutcome> for WireOutcome {
    fn from(outcome: PluginOutcome) -> Self {
        match outcome {
            PluginOutcome::Ok(parts) => WireOutcome::Ok { parts },
            PluginOutcome::Error(message) => WireOutcome::Error { message },
            PluginOutcome::InvalidArguments(message) => WireOutcome::InvalidArguments { message },
            PluginOutcome::Panic(message) => WireOutcome::Panic { message },
        }
    }
}

impl From<WireOutcome> for PluginOutcome {
    fn from(outcome: WireOutcome) -> Self {
        match outcome {
            WireOutcome::Ok { parts } => PluginOutcome::Ok(parts),
            WireOutcome::Error { message } => PluginOutcome::Error(message),
            WireOutcome::InvalidArguments { message } => PluginOutcome::InvalidArguments(message),
            WireOutcome::Panic { message } => PluginOutcome::Panic(message),
        }
    }
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The pipe failed or closed in the middle of a frame.
    #[error("the pipe failed")]
    Io(#[from] io::Error),
    /// The length prefix announces a frame over [`MAX_FRAME`].
    #[error(
        "a frame of {len} bytes was announced, over the limit of {MAX_FRAME} bytes (256 MiB) \
         that one frame of the worker protocol may carry"
    )]
    TooLarge {
        /// The announced length.
        len: usize,
    },
    /// A frame to write would be over [`MAX_FRAME`]; nothing was written.
    #[error(
        "the frame is over the limit of {MAX_FRAME} bytes (256 MiB) that one frame of the \
         worker protocol may carry"
    )]
    TooLargeToSend,
    /// The frame is not the JSON expected.
    #[error("a frame is not valid")]
    Json(#[from] serde_json::Error),
}

/// Writes one frame. A frame over [`MAX_FRAME`] is refused ([`FrameError::TooLargeToSend`])
/// before anything is written.
pub fn write_frame<T: Serialize>(out: &mut impl Write, frame: &T) -> Result<(), FrameError> {
    let bytes = encode_frame(frame)?;
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// One frame's bytes: the length prefix, then the body. Serialising stops as soon as the body
/// passes [`MAX_FRAME`], so a frame too large to send costs at most that much memory.
pub fn encode_frame<T: Serialize>(frame: &T) -> Result<Vec<u8>, FrameError> {
    let mut bytes = Bounded {
        bytes: vec![0; 4],
        limit: 4 + MAX_FRAME,
        over: false,
    };
    if let Err(err) = serde_json::to_writer(&mut bytes, frame) {
        return Err(if bytes.over {
            FrameError::TooLargeToSend
        } else {
            err.into()
        });
    }
    let len = u32::try_from(bytes.bytes.len() - 4).map_err(|_| FrameError::TooLargeToSend)?;
    bytes.bytes[..4].copy_from_slice(&len.to_le_bytes());
    Ok(bytes.bytes)
}

/// A buffer that refuses to grow past `limit` bytes.
struct Bounded {
    bytes: Vec<u8>,
    limit: usize,
    /// A write was refused.
    over: bool,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.limit {
            self.over = true;
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads one frame; `Ok(None)` at a clean end of the stream (before a length prefix).
pub fn read_frame<T: for<'de> Deserialize<'de>>(
    input: &mut impl Read,
) -> Result<Option<T>, FrameError> {
    let mut prefix = [0u8; 4];
    let mut filled = 0;
    while filled < prefix.len() {
        match input.read(&mut prefix[filled..]) {
            Ok(0) if filled == 0 => return Ok(None),
            Ok(0) => return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err.into()),
        }
    }
    let len = u32::from_le_bytes(prefix) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge { len });
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    Ok(Some(serde_json::from_slice(&body)?))
}

/// Why [`serve`] stopped before the host closed the pipe.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A frame could not be read or written.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The first frame was not `hello`.
    #[error("the first frame must be hello")]
    NoHello,
}

/// The worker side, whole: reads `hello`, loads the library, answers with its manifest, then
/// runs calls until `input` ends. Returns `Ok` when the host closes the pipe.
///
/// # Safety
///
/// As [`LoadedPlugin::load`]: the library named in `hello` must be a sound plugin library. The
/// host that starts the worker vouches for it, as it would for loading it in its own process.
pub unsafe fn serve(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<(), ServeError> {
    // SAFETY: the caller's promise.
    unsafe { serve_confined(input, output, |_, _| Ok(())) }
}

/// [`serve`], with the platform's confinement: when `hello` asks for it, `confine` is called
/// with the library and the granted roots before the library is loaded. An `Err` from it is
/// told to the host as a load failure.
///
/// # Safety
///
/// As [`serve`].
pub unsafe fn serve_confined(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
    confine: impl FnOnce(&Path, &Confine) -> Result<(), String>,
) -> Result<(), ServeError> {
    // SAFETY: the caller's promise.
    unsafe { serve_input(Input::new(Box::new(input)), output, confine) }
}

/// [`serve_confined`] on a pipe (or any input with a file descriptor): while calls come back to
/// back and are quick, the thread that reads next watches the pipe for a short while
/// ([`WATCH`]) instead of sleeping in `read`, so that the next call costs no thread wake-up.
/// Once calls stop coming the reader sleeps as before.
///
/// # Safety
///
/// As [`serve`].
#[cfg(unix)]
pub unsafe fn serve_pipe_confined(
    input: impl Read + std::os::fd::AsFd + Send + 'static,
    output: impl Write + Send + 'static,
    confine: impl FnOnce(&Path, &Confine) -> Result<(), String>,
) -> Result<(), ServeError> {
    use std::os::fd::AsRawFd;
    let fd = input.as_fd().as_raw_fd();
    let mut input = Input::new(Box::new(input));
    // Valid as long as the reader, which `input` owns.
    input.fd = Some(fd);
    // SAFETY: the caller's promise.
    unsafe { serve_input(input, output, confine) }
}

/// # Safety
///
/// As [`serve`].
unsafe fn serve_input(
    mut input: Input,
    output: impl Write + Send + 'static,
    confine: impl FnOnce(&Path, &Confine) -> Result<(), String>,
) -> Result<(), ServeError> {
    let output = Arc::new(Mutex::new(output));
    let send = move |frame: &WorkerFrame| -> Result<(), FrameError> {
        let mut out = output.lock().unwrap_or_else(PoisonError::into_inner);
        write_frame(&mut *out, frame)
    };
    let Some(HostFrame::Hello {
        library,
        config,
        confine: wanted,
        grants,
        builtin,
        base_dir,
    }) = read_frame::<HostFrame>(&mut input.reader)?
    else {
        return Err(ServeError::NoHello);
    };
    if let Some(wanted) = &wanted
        && let Err(message) = confine(&library, wanted)
    {
        send(&WorkerFrame::LoadFailed {
            message: format!("the plugin worker cannot be confined to its grants: {message}"),
        })?;
        return Ok(());
    }
    // SAFETY: the caller's promise (`# Safety`).
    let opened = match unsafe { opening::open(&library, builtin.as_deref()) } {
        Ok(opened) => opened,
        Err(message) => {
            send(&WorkerFrame::LoadFailed { message })?;
            return Ok(());
        }
    };
    // Checked before `init`: a plugin asking for more than granted runs no code of its own
    // with the configuration.
    if let Some(grants) = &grants {
        let missing = opened.manifest().capabilities.missing_from(grants);
        if !missing.is_empty() {
            send(&WorkerFrame::NotGranted {
                name: opened.manifest().name.clone(),
                missing,
            })?;
            return Ok(());
        }
    }
    let config = match opening::configure(&opened, config, base_dir.as_deref()) {
        Ok(config) => config,
        Err(message) => {
            send(&WorkerFrame::LoadFailed { message })?;
            return Ok(());
        }
    };
    let plugin = match opened.start(&config) {
        Ok(plugin) => Arc::new(plugin),
        Err(err) => {
            send(&WorkerFrame::LoadFailed {
                message: opening::chain(&err),
            })?;
            return Ok(());
        }
    };
    send(&WorkerFrame::Manifest {
        name: plugin.name().to_string(),
        version: plugin.version().to_string(),
        tools: plugin.tools().to_vec(),
        capabilities: plugin.capabilities().clone(),
    })?;
    let calls = Arc::new(Calls {
        input: Mutex::new(input),
        plugin,
        send: Arc::new(send),
        running: Mutex::default(),
        readers: AtomicUsize::new(0),
        pace: Pace::default(),
    });
    let (end_tx, end_rx) = std::sync::mpsc::channel();
    calls.start_reader(end_tx).map_err(FrameError::Io)?;
    // Every reader holds a sender: they all end only at the end of the input, which one of
    // them reports first.
    end_rx.recv().unwrap_or(Ok(()))
}

/// What the worker's threads share.
///
/// The threads take turns reading the host's frames (leader and followers): the thread that
/// reads a `call` runs it itself, right away, and another thread, already waiting for the
/// input, reads on meanwhile (for `cancel` frames and concurrent calls). A call thus costs no
/// hand-over to another thread; a thread is started only when no other is left to read.
/// Threads are kept once started. The caller of [`serve`] only waits for the end: a call that
/// never returns cannot keep the worker alive once the host closes the pipe.
///
/// While calls come back to back and are quick ([`Pace`]), a thread that wants the input
/// and finds it taken retries for a short while before it sleeps on the lock, and the thread
/// that holds it watches the pipe before it sleeps in `read` (when the input has a descriptor):
/// the next call then wakes nobody, and the thread that read it hands the input over to
/// one that is awake.
struct Calls {
    input: Mutex<Input>,
    plugin: Arc<LoadedPlugin>,
    send: Arc<SendFrame>,
    running: Mutex<HashMap<u64, CancelFlag>>,
    /// Threads that read, or wait to read, the input (none of them runs a call).
    readers: AtomicUsize,
    pace: Pace,
}

/// Writes one frame to the host.
type SendFrame = dyn Fn(&WorkerFrame) -> Result<(), FrameError> + Send + Sync;

/// The end of the input as [`serve`] reports it.
type End = std::sync::mpsc::Sender<Result<(), ServeError>>;

impl Calls {
    /// Starts one more reading thread.
    fn start_reader(self: &Arc<Self>, end: End) -> io::Result<()> {
        self.readers.fetch_add(1, Ordering::SeqCst);
        let calls = self.clone();
        let started = std::thread::Builder::new()
            .name("call".into())
            .spawn(move || calls.read_and_run(end));
        if started.is_err() {
            self.readers.fetch_sub(1, Ordering::SeqCst);
        }
        started.map(drop)
    }

    /// A thread's life: read frames; run each call read, then read again.
    fn read_and_run(self: Arc<Self>, end: End) {
        loop {
            let mut input = self.take_input();
            if input.ended {
                return;
            }
            input.watch(&self.pace);
            let frame = match read_frame::<HostFrame>(&mut input.reader) {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    input.ended = true;
                    let _ = end.send(Ok(()));
                    return;
                }
                Err(err) => {
                    input.ended = true;
                    let _ = end.send(Err(err.into()));
                    return;
                }
            };
            match frame {
                HostFrame::Hello { .. } => {}
                HostFrame::Cancel { id } => {
                    if let Some(flag) = self
                        .running
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get(&id)
                    {
                        flag.cancel();
                    }
                }
                HostFrame::Call {
                    id,
                    tool,
                    args,
                    keep_chars,
                    ..
                } => {
                    // Leave a reader behind before running the call (the input is still held,
                    // so no other thread takes a call meanwhile).
                    if self.readers.fetch_sub(1, Ordering::SeqCst) == 1
                        && let Err(err) = self.start_reader(end.clone())
                    {
                        self.readers.fetch_add(1, Ordering::SeqCst);
                        drop(input);
                        let _ = (self.send)(&WorkerFrame::Result {
                            id,
                            outcome: WireOutcome::Error {
                                message: format!(
                                    "the plugin worker could not start a thread for the \
                                     call: {err}{}",
                                    memory_limit_note()
                                ),
                            },
                        });
                        continue;
                    }
                    let flag = CancelFlag::new();
                    self.running
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(id, flag.clone());
                    let read = self.pace.now();
                    self.pace.began(read);
                    drop(input);
                    self.run(id, &tool, &args, &flag, read, keep_chars);
                    self.readers.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// The input, once no other thread holds it. While calls come back to back and are quick,
    /// tries it for a while before it sleeps on the lock: the thread that holds it then hands
    /// it over without waking anyone.
    fn take_input(&self) -> std::sync::MutexGuard<'_, Input> {
        take(&self.input, &self.pace)
    }

    /// Runs one call (read at `at`), keeping `keep` characters of its text; sends its result.
    fn run(&self, id: u64, tool: &str, args: &str, flag: &CancelFlag, at: u64, keep: Option<u64>) {
        let send = &self.send;
        let mut progress = |message: &str| {
            // A closed pipe means the host is gone; nothing to tell.
            let _ = send(&WorkerFrame::Progress {
                id,
                message: message.to_string(),
            });
        };
        let mut chunk = |text: &str| {
            // In pieces that fit a frame, however large the text.
            let sent = pieces(text, CHUNK_PIECE).try_for_each(|piece| {
                send(&WorkerFrame::Chunk {
                    id,
                    text: piece.to_string(),
                })
            });
            // More only while the host reads and has not cancelled.
            sent.is_ok() && !flag.is_cancelled()
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.plugin
                .call_streaming(tool, args, flag, &mut progress, &mut chunk, keep)
        }))
        .unwrap_or_else(|payload| {
            PluginOutcome::Panic(crate::panic::panic_message(payload.as_ref()))
        });
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        // Noted before the answer leaves: the next call may come right after it.
        self.pace.ended(at, self.pace.now());
        let sent = send(&WorkerFrame::Result {
            id,
            outcome: outcome.into(),
        });
        if let Err(err @ FrameError::TooLargeToSend) = sent {
            // The host must hear of it now, not at its timeout.
            let _ = send(&WorkerFrame::Result {
                id,
                outcome: WireOutcome::Error {
                    message: format!(
                        "the result of {tool} cannot reach the host: {err}; return less, or \
                         stream it in chunks"
                    ),
                },
            });
        }
    }
}

/// The largest piece of streamed text one `chunk` frame carries: an eighth of [`MAX_FRAME`],
/// so that the frame fits even when every byte is escaped in JSON (`\u0001`, six bytes).
const CHUNK_PIECE: usize = MAX_FRAME / 8;

/// `text` in pieces of at most `max` bytes (at least one character each), cut between
/// characters.
fn pieces(text: &str, max: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    let mut first = true;
    std::iter::from_fn(move || {
        if rest.is_empty() && !std::mem::take(&mut first) {
            return None;
        }
        first = false;
        let mut end = rest.len().min(max);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            end = rest.chars().next().map_or(0, char::len_utf8);
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// What a failure to get memory may be due to: the worker's `memory_limit`, which the host
/// sets as its data limit (`RLIMIT_DATA`, which a thread's stack counts against); empty when
/// it has none.
fn memory_limit_note() -> String {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit(2) writes one rlimit, which `limit` is.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_DATA, &mut limit) };
        if read == 0 && limit.rlim_cur != libc::RLIM_INFINITY {
            let limit = limit.rlim_cur;
            let mib = 1024 * 1024;
            let limit = if limit.is_multiple_of(mib) {
                format!("{}MiB", limit / mib)
            } else {
                format!("{limit} bytes")
            };
            return format!(
                " (the plugin's memory_limit of {limit} may be used up: each running call's \
                 thread stack counts against it)"
            );
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_as_written() {
        let frame = HostFrame::Call {
            id: 7,
            tool: "echo".into(),
            args: r#"{"text":"hi"}"#.into(),
            deadline_ms: Some(500),
            keep_chars: Some(100),
        };
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &frame).expect("written");
        let back: Option<HostFrame> = read_frame(&mut bytes.as_slice()).expect("read");
        assert_eq!(back, Some(frame));
    }

    #[test]
    fn a_frame_is_a_little_endian_length_then_json() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &HostFrame::Cancel { id: 3 }).expect("written");
        let body = br#"{"type":"cancel","id":3}"#;
        assert_eq!(&bytes[..4], &(body.len() as u32).to_le_bytes());
        assert_eq!(&bytes[4..], body);
    }

    #[test]
    fn an_empty_stream_is_a_clean_end() {
        let read: Option<HostFrame> = read_frame(&mut [].as_slice()).expect("clean end");
        assert_eq!(read, None);
    }

    #[test]
    fn a_stream_cut_inside_a_frame_is_an_error() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &HostFrame::Cancel { id: 3 }).expect("written");
        bytes.truncate(bytes.len() - 2);
        assert!(matches!(
            read_frame::<HostFrame>(&mut bytes.as_slice()),
            Err(FrameError::Io(_))
        ));
    }

    #[test]
    fn streamed_text_is_cut_into_pieces_between_characters() {
        let text = "aé€b";
        let cut: Vec<&str> = pieces(text, 2).collect();
        assert_eq!(cut, vec!["a", "é", "€", "b"]);
        assert_eq!(pieces("", 4).collect::<Vec<_>>(), vec![""]);
        assert_eq!(pieces("abcdef", 4).collect::<Vec<_>>(), vec!["abcd", "ef"]);
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_before_anything_is_written() {
        let frame = HostFrame::Call {
            id: 1,
            tool: "echo".into(),
            args: "a".repeat(MAX_FRAME),
            deadline_ms: None,
            keep_chars: None,
        };
        let mut out = Vec::new();
        assert!(matches!(
            write_frame(&mut out, &frame),
            Err(FrameError::TooLargeToSend)
        ));
        assert!(out.is_empty());
    }

    #[test]
    fn a_length_over_the_limit_is_refused_before_reading_the_body() {
        let len = u32::try_from(MAX_FRAME + 1).expect("fits");
        let bytes = len.to_le_bytes();
        assert!(matches!(
            read_frame::<HostFrame>(&mut bytes.as_slice()),
            Err(FrameError::TooLarge { .. })
        ));
    }
}
