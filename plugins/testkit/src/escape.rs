//! The `escape` tool: what a hostile plugin would try to get out of its worker's sandbox
//! (`isolation: process`). Each attempt reports what the system let it do; toolgate's tests
//! check that the sandbox refused it.

use std::ffi::CString;
use std::time::Duration;

use serde::Deserialize;
use toolgate_plugin_api::{CallContext, ToolError, ToolOutput};

/// The most processes `escape {how: "fork"}` agrees to start.
pub const FORK_MAX: u32 = 1000;

/// How long a process started by `escape {how: "fork"}` lives: it sleeps, then exits, so that
/// a run where the sandbox fails leaves nothing behind for long.
pub const FORKED_LIFETIME: Duration = Duration::from_secs(20);

/// What the `escape` tool tries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Escape {
    /// `kill(getppid(), SIGKILL)`: kill the process that started this one (the host).
    KillParent,
    /// `kill(pid, signal)`: signal another process (or, as `kill(2)` reads `pid`, a group).
    Kill {
        /// The process, as the caller sees it.
        pid: i32,
        /// The signal; `SIGKILL` by default.
        #[serde(default = "sigkill")]
        signal: i32,
    },
    /// `ptrace(PTRACE_ATTACH, pid)` (detached again at once).
    Ptrace {
        /// The process.
        pid: i32,
    },
    /// Connect to the Unix socket at this path.
    UnixConnect {
        /// The socket file.
        path: String,
    },
    /// Connect to the abstract Unix socket of this name (Linux).
    AbstractConnect {
        /// Its name, without the leading NUL.
        name: String,
    },
    /// Read a file.
    Read {
        /// The file.
        path: String,
    },
    /// Read `/proc/PID/environ` of every other process and look for `needle`.
    ScanEnviron {
        /// The text to look for.
        needle: String,
    },
    /// Run a program (no arguments, output to `/dev/null`) and wait for it.
    Run {
        /// The program's path.
        program: String,
    },
    /// Start `count` processes that leave this one's session (a fork, `setsid`, a second fork,
    /// the middle process exits) and sleep [`FORKED_LIFETIME`] under the name `tag`.
    Fork {
        /// How many, at most [`FORK_MAX`].
        count: u32,
        /// Their process name (`/proc/PID/comm`), at most 15 bytes.
        tag: String,
    },
}

/// Runs one attempt: `Ok` says what it got, an error what the system said.
pub(crate) fn escape(_ctx: &CallContext, args: Escape) -> Result<ToolOutput, ToolError> {
    match args {
        Escape::KillParent => {
            // SAFETY: getppid has no preconditions.
            let parent = unsafe { libc::getppid() };
            signal(parent, libc::SIGKILL)
        }
        Escape::Kill {
            pid,
            signal: number,
        } => signal(pid, number),
        Escape::Ptrace { pid } => ptrace(pid),
        Escape::UnixConnect { path } => std::os::unix::net::UnixStream::connect(&path)
            .map(|_| ToolOutput::text(format!("connected to {path}")))
            .map_err(|err| ToolError::new(format!("cannot connect to {path}: {err}"))),
        Escape::AbstractConnect { name } => abstract_connect(&name),
        Escape::Read { path } => std::fs::read(&path)
            .map(|bytes| ToolOutput::text(format!("read {} bytes of {path}", bytes.len())))
            .map_err(|err| ToolError::new(format!("cannot read {path}: {err}"))),
        Escape::ScanEnviron { needle } => scan_environ(&needle),
        Escape::Fork { count, tag } => fork(count, &tag),
        Escape::Run { program } => std::process::Command::new(&program)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .map(|status| ToolOutput::text(format!("{program} ended: {status}")))
            .map_err(|err| ToolError::new(format!("cannot run {program}: {err}"))),
    }
}

fn sigkill() -> i32 {
    libc::SIGKILL
}

fn signal(pid: i32, signal: i32) -> Result<ToolOutput, ToolError> {
    // SAFETY: kill takes plain numbers; what it does to `pid` is the point of the attempt.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(ToolOutput::text(format!("sent signal {signal} to {pid}")))
    } else {
        Err(ToolError::new(format!(
            "cannot signal {pid}: {}",
            std::io::Error::last_os_error()
        )))
    }
}

fn ptrace(pid: i32) -> Result<ToolOutput, ToolError> {
    let null = std::ptr::null_mut::<libc::c_void>();
    // SAFETY: PTRACE_ATTACH with no address or data.
    if unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, null, null) } != 0 {
        return Err(ToolError::new(format!(
            "cannot attach to {pid}: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: waits for the stop of the process just attached, then lets it go.
    unsafe {
        let mut status = 0;
        libc::waitpid(pid, &mut status, libc::__WALL);
        libc::ptrace(libc::PTRACE_DETACH, pid, null, null);
    }
    Ok(ToolOutput::text(format!("attached to {pid}")))
}

#[cfg(target_os = "linux")]
fn abstract_connect(name: &str) -> Result<ToolOutput, ToolError> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|err| ToolError::new(format!("bad name {name:?}: {err}")))?;
    std::os::unix::net::UnixStream::connect_addr(&addr)
        .map(|_| ToolOutput::text(format!("connected to @{name}")))
        .map_err(|err| ToolError::new(format!("cannot connect to @{name}: {err}")))
}

#[cfg(not(target_os = "linux"))]
fn abstract_connect(_name: &str) -> Result<ToolOutput, ToolError> {
    Err(ToolError::new("abstract sockets exist on Linux only"))
}

fn scan_environ(needle: &str) -> Result<ToolOutput, ToolError> {
    let me = std::process::id().to_string();
    let entries =
        std::fs::read_dir("/proc").map_err(|err| ToolError::new(format!("/proc: {err}")))?;
    let (mut read, mut found) = (0, Vec::new());
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == me || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        read += 1;
        if environ
            .windows(needle.len().max(1))
            .any(|w| w == needle.as_bytes())
        {
            found.push(name);
        }
    }
    Ok(ToolOutput::text(format!(
        "read the environment of {read} other processes; found the needle in: [{}]",
        found.join(", ")
    )))
}

fn fork(count: u32, tag: &str) -> Result<ToolOutput, ToolError> {
    if count > FORK_MAX {
        return Err(ToolError::new(format!(
            "count must be at most {FORK_MAX}, got {count}"
        )));
    }
    let name = CString::new(tag).map_err(|err| ToolError::new(format!("tag: {err}")))?;
    let lifetime = libc::c_uint::try_from(FORKED_LIFETIME.as_secs()).unwrap_or(20);
    for started in 0..count {
        // SAFETY: after fork the child calls only async-signal-safe functions (setsid, fork,
        // prctl, sleep, _exit) and touches no lock; the parent waits for it.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: see above. The middle process says whether the last one started.
            unsafe {
                libc::setsid();
                match libc::fork() {
                    0 => {
                        libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0);
                        libc::sleep(lifetime);
                        libc::_exit(0);
                    }
                    pid if pid < 0 => libc::_exit(1),
                    _ => libc::_exit(0),
                }
            }
        }
        let why = if child < 0 {
            Some(std::io::Error::last_os_error().to_string())
        } else {
            let mut status = 0;
            // SAFETY: waits for the middle process, which exits at once.
            unsafe { libc::waitpid(child, &mut status, 0) };
            (status != 0).then(|| "the second fork failed".to_string())
        };
        if let Some(why) = why {
            return Err(ToolError::new(format!(
                "fork failed after {started} processes: {why}"
            )));
        }
    }
    Ok(ToolOutput::text(format!("started {count} processes")))
}
