//! `testkit`: a toolgate plugin whose tools exist to exercise the host.
//!
//! Its tools and their behaviour are a public contract that toolgate's own tests rely on:
//!
//! | tool | arguments | behaviour |
//! |---|---|---|
//! | `echo` | `{text}` | returns `text` unchanged |
//! | `sleep` | `{ms}` | sleeps `ms` milliseconds in steps of at most 5 ms; once the host cancels, returns the error `cancelled` |
//! | `stubborn_sleep` | `{ms, until_closed?}` | sleeps `ms` milliseconds, ignoring cancellation; with `until_closed` (`ip:port`), connects there and returns when the other end closes the connection (at most `ms` milliseconds after), so a test decides when it ends |
//! | `panic` | `{}` | panics with [`PANIC_MESSAGE`] |
//! | `fail` | `{message}` | fails with `message` |
//! | `big_output` | `{bytes}` | returns exactly `bytes` bytes of ASCII text in lines (see [`big_text`]) |
//! | `huge_output` | `{bytes}` | returns `bytes` bytes of `x`, up to [`HUGE_OUTPUT_MAX`]: past the worker protocol's frame limit |
//! | `forge_frame` | `{len}` | writes the 4-byte length prefix `len` straight into the worker's pipe to the host, outside the protocol, to the first writable pipe from descriptor 3 on that is not behind stdin or stderr |
//! | `multimodal` | `{}` | returns the text [`MULTIMODAL_BEFORE`], a 1x1 PNG ([`PNG_PIXEL`]), the text [`MULTIMODAL_AFTER`] |
//! | `progress` | `{steps}` | reports `step i of N` for i in 1..=N, then returns `done: N steps` |
//! | `stream` | `{count, delay_ms}` | streams `count` chunks `chunk i\n` (i from 1), `delay_ms` apart, then returns `streamed N chunks`; stops as soon as the host wants no more |
//! | `crash` | `{how}` | brings its process down: `abort`, `segfault`, `oom`, `stack_overflow`, or `spin` (see [`Crash`]) |
//! | `connect` | `{addr}` | opens a TCP connection to `addr` (`ip:port`) within 5 s and closes it; returns `connected to ADDR`, or fails with the system's error |
//! | `escape` | `{how, ...}` | tries to get out of a worker's sandbox: signal, trace, connect to a Unix socket, read a file or other processes' environments, start processes or run programs (see [`Escape`]) |
//!
//! `crash`, `forge_frame` and `escape` exist to test process isolation (`isolation: process`):
//! call them only in a worker process. In process `crash` takes the host down with it, as it is
//! meant to; `escape` is what a hostile plugin would do, and in process (or unconfined) it may
//! kill the host or other processes.
//!
//! Its configuration may hold `init_sleep_ms`: its `init` then sleeps that long, as a plugin
//! whose loading hangs.

#![warn(missing_docs)]

use std::time::{Duration, Instant};

use serde::Deserialize;
use toolgate_plugin_api::serde_json::Value;
use toolgate_plugin_api::{CallContext, NoArgs, Tool, ToolError, ToolOutput, json};

mod escape;
pub use escape::{Escape, FORK_MAX, FORKED_LIFETIME};

/// The message the `panic` tool panics with.
pub const PANIC_MESSAGE: &str = "deliberate panic from the testkit `panic` tool";

/// The text part before the image in the `multimodal` result.
pub const MULTIMODAL_BEFORE: &str = "Here is a one-pixel image:";

/// The text part after the image in the `multimodal` result.
pub const MULTIMODAL_AFTER: &str = "That was the image.";

/// The largest output `big_output` agrees to make: 64 MiB.
pub const BIG_OUTPUT_MAX: u64 = 64 * 1024 * 1024;

/// The largest output `huge_output` agrees to make: 512 MiB.
pub const HUGE_OUTPUT_MAX: u64 = 512 * 1024 * 1024;

/// A valid 1x1 orange RGBA PNG: what the `multimodal` tool sends as its image.
pub const PNG_PIXEL: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xdf, 0xc0, 0xf0,
    0x1f, 0x00, 0x06, 0x80, 0x02, 0x7f, 0x10, 0x4c, 0x1b, 0xe1, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// How often `sleep` looks at the cancellation flag.
const SLEEP_STEP: Duration = Duration::from_millis(5);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    text: String,
}

fn echo(_ctx: &CallContext, args: EchoArgs) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(args.text))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SleepArgs {
    ms: u64,
}

fn sleep(ctx: &CallContext, args: SleepArgs) -> Result<ToolOutput, ToolError> {
    let deadline = Instant::now() + Duration::from_millis(args.ms);
    loop {
        ctx.check_cancelled()?;
        let now = Instant::now();
        if now >= deadline {
            return Ok(ToolOutput::text(format!("slept {} ms", args.ms)));
        }
        std::thread::sleep(SLEEP_STEP.min(deadline - now));
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StubbornArgs {
    ms: u64,
    until_closed: Option<String>,
}

fn stubborn_sleep(_ctx: &CallContext, args: StubbornArgs) -> Result<ToolOutput, ToolError> {
    let most = Duration::from_millis(args.ms);
    let Some(addr) = args.until_closed else {
        std::thread::sleep(most);
        return Ok(ToolOutput::text(format!(
            "slept {} ms, ignoring cancellation",
            args.ms
        )));
    };
    let deadline = Instant::now() + most;
    let mut peer = std::net::TcpStream::connect(&addr)
        .map_err(|e| ToolError::new(format!("could not connect to {addr}: {e}")))?;
    // Reads (and drops) until the other end closes, or the `ms` bound passes; never looks
    // at the cancellation flag.
    let mut buf = [0u8; 64];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        if peer.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match std::io::Read::read(&mut peer, &mut buf) {
            Ok(0) => {
                return Ok(ToolOutput::text(format!(
                    "{addr} closed, ignoring cancellation"
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(ToolOutput::text(format!(
        "slept {} ms, ignoring cancellation",
        args.ms
    )))
}

fn panic(_ctx: &CallContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    panic!("{PANIC_MESSAGE}");
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailArgs {
    message: String,
}

fn fail(_ctx: &CallContext, args: FailArgs) -> Result<ToolOutput, ToolError> {
    Err(ToolError::new(args.message))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BigOutputArgs {
    bytes: u64,
}

fn big_output(_ctx: &CallContext, args: BigOutputArgs) -> Result<ToolOutput, ToolError> {
    if args.bytes > BIG_OUTPUT_MAX {
        return Err(ToolError::new(format!(
            "bytes must be at most {BIG_OUTPUT_MAX}, got {}",
            args.bytes
        )));
    }
    // In range of usize: at most 64 MiB.
    let len = usize::try_from(args.bytes).map_err(|_| ToolError::new("bytes is too large"))?;
    Ok(ToolOutput::text(big_text(len)))
}

/// The text `big_output {bytes: len}` returns: exactly `len` bytes of ASCII, in numbered lines
/// of 64 bytes (`line 000001 ` followed by letters and a newline); the last line is cut short
/// to hit the length.
pub fn big_text(len: usize) -> String {
    const FILL: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut text = String::with_capacity(len + 64);
    let mut line = 1_u64;
    while text.len() < len {
        let prefix = format!("line {line:06} ");
        text.push_str(&prefix);
        text.push_str(&FILL[..63 - prefix.len().min(63)]);
        text.push('\n');
        line += 1;
    }
    text.truncate(len);
    text
}

fn huge_output(_ctx: &CallContext, args: BigOutputArgs) -> Result<ToolOutput, ToolError> {
    if args.bytes > HUGE_OUTPUT_MAX {
        return Err(ToolError::new(format!(
            "bytes must be at most {HUGE_OUTPUT_MAX}, got {}",
            args.bytes
        )));
    }
    let len = usize::try_from(args.bytes).map_err(|_| ToolError::new("bytes is too large"))?;
    Ok(ToolOutput::text("x".repeat(len)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgeFrameArgs {
    len: u32,
}

/// Writes the length prefix `len` (little-endian) into the worker's pipe to the host, as a
/// plugin that goes around the protocol would: to the first pipe it can write, among this
/// process's descriptors from 3 on, that is not the pipe behind stdin or stderr (in a worker,
/// stdout points at stderr and the frames have a descriptor of their own). Returns which
/// descriptor it wrote to; in a worker the host kills it before that answer can arrive.
fn forge_frame(_ctx: &CallContext, args: ForgeFrameArgs) -> Result<ToolOutput, ToolError> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let pipe = |fd: i32| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
    let standard = [pipe(0), pipe(2)];
    let entries = std::fs::read_dir("/proc/self/fd")
        .map_err(|err| ToolError::new(format!("cannot list /proc/self/fd: {err}")))?;
    let mut fds: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd >= 3)
        .collect();
    fds.sort_unstable();
    for fd in fds {
        let Some(target) = pipe(fd) else { continue };
        if !target.to_string_lossy().starts_with("pipe:") || standard.contains(&Some(target)) {
            continue;
        }
        // SAFETY: an open descriptor of this process, borrowed for one write and never
        // closed here (ManuallyDrop).
        let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        if file.write_all(&args.len.to_le_bytes()).is_ok() {
            return Ok(ToolOutput::text(format!(
                "wrote the prefix to descriptor {fd}"
            )));
        }
    }
    Err(ToolError::new("no pipe to the host found"))
}

/// `init_sleep_ms` in the configuration: sleeps that long before the plugin starts.
fn init(config: Value) -> Result<(), String> {
    if let Some(ms) = config.get("init_sleep_ms").and_then(Value::as_u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    Ok(())
}

fn multimodal(_ctx: &CallContext, _args: NoArgs) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(MULTIMODAL_BEFORE)
        .with_image("image/png", &PNG_PIXEL)
        .with_text(MULTIMODAL_AFTER))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgressArgs {
    steps: u32,
}

fn progress(ctx: &CallContext, args: ProgressArgs) -> Result<ToolOutput, ToolError> {
    for step in 1..=args.steps {
        ctx.progress(&format!("step {step} of {}", args.steps));
    }
    Ok(ToolOutput::text(format!("done: {} steps", args.steps)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamArgs {
    count: u64,
    #[serde(default)]
    delay_ms: u64,
}

fn stream(ctx: &CallContext, args: StreamArgs) -> Result<ToolOutput, ToolError> {
    for i in 1..=args.count {
        if i > 1 && args.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(args.delay_ms));
        }
        ctx.emit(&format!("chunk {i}\n"))?;
    }
    Ok(ToolOutput::text(format!("streamed {} chunks", args.count)))
}

/// How the `crash` tool brings its process down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Crash {
    /// `abort()`: the process ends with SIGABRT.
    Abort,
    /// A write through a null pointer: SIGSEGV.
    Segfault,
    /// Allocates and touches memory in [`OOM_STEP`] blocks until an allocation fails, then
    /// ends the process the way Rust does on an allocation failure (SIGABRT). Gives up with an
    /// error after [`OOM_MAX`] without a failure, so it never eats a machine without a limit.
    Oom,
    /// Unbounded recursion: the stack guard page is hit, and Rust aborts the process.
    StackOverflow,
    /// Spins on the CPU, ignoring cancellation, for [`SPIN_MAX`], then fails.
    Spin,
}

/// The block size `crash {how: "oom"}` allocates in: 16 MiB.
pub const OOM_STEP: usize = 16 * 1024 * 1024;

/// What `crash {how: "oom"}` allocates at most before giving up: 8 GiB.
pub const OOM_MAX: usize = 8 * 1024 * 1024 * 1024;

/// How long `crash {how: "spin"}` spins before giving up: 60 s.
pub const SPIN_MAX: Duration = Duration::from_secs(60);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CrashArgs {
    how: Crash,
}

fn crash(_ctx: &CallContext, args: CrashArgs) -> Result<ToolOutput, ToolError> {
    match args.how {
        Crash::Abort => std::process::abort(),
        Crash::Segfault => {
            // Hidden from the optimiser, so the write really happens.
            let null = std::hint::black_box(std::ptr::null_mut::<u8>());
            // SAFETY: none: this write faults on purpose, which is the tool's whole job.
            unsafe { null.write_volatile(1) };
            Err(ToolError::new(
                "the write through a null pointer did not fault",
            ))
        }
        Crash::Oom => {
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            let layout = std::alloc::Layout::array::<u8>(OOM_STEP)
                .map_err(|err| ToolError::new(err.to_string()))?;
            while blocks.len() * OOM_STEP < OOM_MAX {
                let mut block: Vec<u8> = Vec::new();
                if block.try_reserve_exact(OOM_STEP).is_err() {
                    std::alloc::handle_alloc_error(layout);
                }
                // Touched, so the memory is really used, not only reserved.
                block.resize(OOM_STEP, 1);
                blocks.push(std::hint::black_box(block));
            }
            Err(ToolError::new(format!(
                "allocated {OOM_MAX} bytes without running out of memory"
            )))
        }
        Crash::StackOverflow => {
            let depth = recurse(std::hint::black_box(0));
            Err(ToolError::new(format!(
                "recursed {depth} levels without overflowing the stack"
            )))
        }
        Crash::Spin => {
            let start = Instant::now();
            while start.elapsed() < SPIN_MAX {
                std::hint::spin_loop();
            }
            Err(ToolError::new(format!("spun for {SPIN_MAX:?}")))
        }
    }
}

/// Recurses until the stack runs out; each level holds 4 KiB of stack.
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth as u8; 4096]);
    recurse(depth + 1) + u64::from(frame[0])
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConnectArgs {
    addr: String,
}

/// Opens (and drops) a TCP connection: whether this process may reach the network.
fn connect(_ctx: &CallContext, args: ConnectArgs) -> Result<ToolOutput, ToolError> {
    let addr: std::net::SocketAddr = args
        .addr
        .parse()
        .map_err(|err| ToolError::new(format!("addr {:?} is not ip:port: {err}", args.addr)))?;
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map(|_| ToolOutput::text(format!("connected to {addr}")))
        .map_err(|err| ToolError::new(format!("cannot connect to {addr}: {err}")))
}

fn ms_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "ms": {"type": "integer", "minimum": 0, "description": description}
        },
        "required": ["ms"],
        "additionalProperties": false
    })
}

fn no_args_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

toolgate_plugin_api::export_plugin! {
    name: "testkit",
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    tools: [
        Tool::new("echo", echo)
            .description("Return the given text unchanged.")
            .parameters(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to return."}},
                "required": ["text"],
                "additionalProperties": false
            })),
        Tool::new("sleep", sleep)
            .description("Sleep for a number of milliseconds, stopping early if cancelled.")
            .parameters(ms_schema("How long to sleep, in milliseconds.")),
        Tool::new("stubborn_sleep", stubborn_sleep)
            .description(
                "Sleep for a number of milliseconds, ignoring cancellation; or, with \
                 `until_closed`, until the other end of a TCP connection to that address closes \
                 it (at most the milliseconds given).",
            )
            .parameters(json!({
                "type": "object",
                "properties": {
                    "ms": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "How long to sleep, in milliseconds (with `until_closed`: at most)."
                    },
                    "until_closed": {
                        "type": "string",
                        "description": "`ip:port` to connect to; returns when that end closes the connection."
                    }
                },
                "required": ["ms"],
                "additionalProperties": false
            })),
        Tool::new("panic", panic)
            .description("Panic, to test that panics are caught.")
            .parameters(no_args_schema()),
        Tool::new("fail", fail)
            .description("Fail with the given message.")
            .parameters(json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The error message."}},
                "required": ["message"],
                "additionalProperties": false
            })),
        Tool::new("big_output", big_output)
            .description("Return exactly the given number of bytes of ASCII text, in lines.")
            .parameters(json!({
                "type": "object",
                "properties": {"bytes": {
                    "type": "integer", "minimum": 0, "maximum": BIG_OUTPUT_MAX,
                    "description": "How many bytes to return."
                }},
                "required": ["bytes"],
                "additionalProperties": false
            })),
        Tool::new("huge_output", huge_output)
            .description("Return the given number of bytes of `x`, up to 512 MiB.")
            .parameters(json!({
                "type": "object",
                "properties": {"bytes": {
                    "type": "integer", "minimum": 0, "maximum": HUGE_OUTPUT_MAX,
                    "description": "How many bytes to return."
                }},
                "required": ["bytes"],
                "additionalProperties": false
            })),
        Tool::new("forge_frame", forge_frame)
            .description("Write a frame length prefix straight into the worker's pipe to the host; for testing the worker protocol only.")
            .parameters(json!({
                "type": "object",
                "properties": {"len": {"type": "integer", "minimum": 0, "maximum": u32::MAX, "description": "The announced length."}},
                "required": ["len"],
                "additionalProperties": false
            })),
        Tool::new("multimodal", multimodal)
            .description("Return a text part, a one-pixel PNG image, and another text part.")
            .parameters(no_args_schema()),
        Tool::new("progress", progress)
            .description("Report the given number of progress steps, then finish.")
            .parameters(json!({
                "type": "object",
                "properties": {"steps": {
                    "type": "integer", "minimum": 0, "description": "How many progress messages to send."
                }},
                "required": ["steps"],
                "additionalProperties": false
            })),
        Tool::new("stream", stream)
            .description("Stream numbered chunks of text, some milliseconds apart.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "minimum": 0, "description": "How many chunks."},
                    "delay_ms": {"type": "integer", "minimum": 0, "description": "Milliseconds between chunks."}
                },
                "required": ["count"],
                "additionalProperties": false
            })),
        Tool::new("crash", crash)
            .description("Bring this process down (abort, segfault, out of memory, stack overflow, or spin forever); for testing process isolation only.")
            .parameters(json!({
                "type": "object",
                "properties": {"how": {
                    "type": "string",
                    "enum": ["abort", "segfault", "oom", "stack_overflow", "spin"],
                    "description": "How to crash."
                }},
                "required": ["how"],
                "additionalProperties": false
            })),
        Tool::new("connect", connect)
            .description("Open a TCP connection to ip:port and close it; for testing network confinement.")
            .parameters(json!({
                "type": "object",
                "properties": {"addr": {"type": "string", "description": "ip:port"}},
                "required": ["addr"],
                "additionalProperties": false
            })),
        Tool::new("escape", escape::escape)
            .description("Try to get out of the worker's sandbox (signal, trace, Unix sockets, files, other processes' environments, processes); for testing isolation only.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "how": {
                        "type": "string",
                        "enum": ["kill_parent", "kill", "ptrace", "unix_connect", "abstract_connect", "read", "scan_environ", "fork", "run"]
                    },
                    "pid": {"type": "integer"},
                    "signal": {"type": "integer", "description": "for kill; SIGKILL by default"},
                    "path": {"type": "string"},
                    "program": {"type": "string"},
                    "name": {"type": "string"},
                    "needle": {"type": "string"},
                    "count": {"type": "integer", "minimum": 0, "maximum": FORK_MAX},
                    "tag": {"type": "string", "maxLength": 15}
                },
                "required": ["how"],
                "additionalProperties": false
            })),
    ],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_text_has_exactly_the_requested_length() {
        for len in [0, 1, 63, 64, 65, 1000, 100_003] {
            assert_eq!(big_text(len).len(), len);
        }
    }

    #[test]
    fn big_text_is_made_of_numbered_64_byte_lines() {
        let text = big_text(64 * 3);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("line 000002 abc"));
        assert!(lines.iter().all(|line| line.len() == 63));
    }

    #[test]
    fn png_pixel_starts_with_the_png_signature_and_ends_with_iend() {
        assert_eq!(&PNG_PIXEL[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(
            &PNG_PIXEL[PNG_PIXEL.len() - 8..PNG_PIXEL.len() - 4],
            b"IEND"
        );
    }

    #[test]
    fn sleep_without_a_host_runs_to_the_end() {
        let ctx = CallContext::detached("sleep", &());
        let out = sleep(&ctx, SleepArgs { ms: 1 }).expect("sleeps");
        assert_eq!(out, ToolOutput::text("slept 1 ms"));
    }

    #[test]
    fn progress_without_a_host_still_finishes() {
        let ctx = CallContext::detached("progress", &());
        let out = progress(&ctx, ProgressArgs { steps: 3 }).expect("finishes");
        assert_eq!(out, ToolOutput::text("done: 3 steps"));
    }
}
