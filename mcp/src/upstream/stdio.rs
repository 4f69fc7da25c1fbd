//! A server run as a child process: spawned in a process group of its own (so it and anything
//! it starts can be stopped together, and a terminal's Ctrl-C reaches toolgate, not it), with
//! only the environment its entry declares (plus [`INHERITED`]), its stderr forwarded to the
//! log with the last lines kept for the log's messages (never the model's), its exit watched,
//! and its stdout read to the end even after the connection is done with it ([`Stdout`]).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::config::StdioLaunch;
use super::error::UpstreamError;
use super::frame::Bounded;

/// Lines of stderr kept for error messages.
const TAIL_LINES: usize = 8;
/// Characters kept of each such line.
const TAIL_LINE_CHARS: usize = 300;
/// How long a child may take to exit once its stdin is closed before it is sent SIGTERM, and
/// once sent SIGTERM before it is killed: MCP's stdio shutdown (close the input, wait, SIGTERM,
/// wait, SIGKILL). Two seconds leave a Python or Node server on a loaded machine time to see
/// its input end and exit by itself.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// The longest [`Child::stop`] takes: three waits of [`EXIT_GRACE`] (for the exit, after
/// SIGTERM, after SIGKILL).
pub(crate) const STOP_AT_MOST: Duration = EXIT_GRACE.saturating_mul(3);
/// [`EXIT_GRACE`] for a server that failed to start.
pub(crate) const FAILED_START_GRACE: Duration = Duration::from_millis(500);
/// How long a child's stdout is still read (and what comes dropped) once the connection no
/// longer reads it: longer than stopping it takes (about three [`EXIT_GRACE`]s and the close's
/// half second), after which its whole process group is dead and the pipe at its end; the bound
/// is for a process that left the group and holds the pipe open.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// Bytes read from the pipe at a time while draining it.
const DRAIN_CHUNK: usize = 8 * 1024;

/// The variables of toolgate's own environment a server gets without its entry naming them:
/// what a program needs to run at all, and nothing that is usually a secret. `PATH` finds the
/// programs a server starts (`npx` runs `node`, `uvx` runs `python`); `HOME` is where tools
/// keep caches and settings (npm, uv, pip); `LANG`, `LC_ALL` and `LC_CTYPE` set the text
/// encoding of its pipes; `TZ` is the local time zone; `TMPDIR` is where temporary files go.
/// Everything else (`TOOLGATE_TOKEN`, other servers' keys, cloud credentials) is passed only by
/// the entry's `env:` (`NAME: "${NAME}"`).
pub(crate) const INHERITED: &[&str] =
    &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];

/// A running child process.
pub(crate) struct Child {
    program: String,
    /// The process (and process group) id.
    pid: Option<u32>,
    /// `Some(status)` once it has exited.
    exit: watch::Receiver<Option<String>>,
    tail: Arc<Mutex<VecDeque<String>>>,
    /// `true` once its stderr has ended (every line of it is in `tail`).
    stderr_ended: watch::Receiver<bool>,
}

/// The child's pipes, for the MCP transport: its stdout bounded per message (see
/// [`frame`](super::frame)).
pub(crate) type Pipes = (Bounded<Stdout>, ChildStdin);

/// A child's stdout that is read to its end even once it is dropped.
///
/// The transport closes the child's stdin and drops its stdout together. A server may still
/// be writing then: the answer to a request that crossed the shutdown, a last log line. With
/// nobody reading, that write fails with `EPIPE` and usually kills the server (Python ends on
/// the `BrokenPipeError`, Node on the `EPIPE` error, a program with default signal handling
/// on `SIGPIPE`) before it sees its input end and exits as MCP's stdio shutdown asks. So
/// dropping a `Stdout` hands the pipe to a task that reads and drops whatever still comes,
/// until the pipe ends (the child and its process group exited) or [`DRAIN_LIMIT`] passes.
/// Memory: [`DRAIN_CHUNK`] bytes.
pub(crate) struct Stdout {
    pipe: Option<ChildStdout>,
    server: String,
}

impl AsyncRead for Stdout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.pipe.as_mut() {
            Some(pipe) => Pin::new(pipe).poll_read(cx, buf),
            None => Poll::Ready(Ok(())),
        }
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        let Some(mut pipe) = self.pipe.take() else {
            return;
        };
        // Outside a runtime (nothing should drop one there) the pipe just closes.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let server = std::mem::take(&mut self.server);
        runtime.spawn(async move {
            let mut scratch = vec![0u8; DRAIN_CHUNK];
            let mut drained = 0usize;
            let ended = tokio::time::timeout(DRAIN_LIMIT, async {
                while let Ok(n @ 1..) = pipe.read(&mut scratch).await {
                    drained = drained.saturating_add(n);
                }
            })
            .await
            .is_ok();
            if drained > 0 || !ended {
                tracing::debug!(
                    target: "toolgate_mcp::upstream",
                    server = %server,
                    bytes = drained,
                    ended,
                    "read and dropped the MCP server's output after its connection closed"
                );
            }
        });
    }
}

/// Starts the program. `server` names it in log lines.
pub(crate) fn spawn(launch: &StdioLaunch, server: &str) -> Result<(Child, Pipes), UpstreamError> {
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .env_clear()
        .envs(
            INHERITED
                .iter()
                .filter_map(|name| Some((name, std::env::var_os(name)?))),
        )
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Should everything else fail, dropping the handle still kills the child.
        .kill_on_drop(true);
    if let Some(dir) = &launch.cwd {
        command.current_dir(dir);
    }
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|source| UpstreamError::Spawn {
        program: launch.program.clone(),
        source,
    })?;
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // Unreachable: all three are piped above.
        return Err(UpstreamError::Spawn {
            program: launch.program.clone(),
            source: std::io::Error::other("the child's pipes were not opened"),
        });
    };

    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let kept = tail.clone();
    let name = server.to_owned();
    let (stderr_done, stderr_ended) = watch::channel(false);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            // The log only: a server's stderr may hold secrets, so it never reaches the model.
            tracing::debug!(target: "toolgate_mcp::upstream", server = %name, "stderr: {line}");
            let mut tail = kept.lock().unwrap_or_else(|p| p.into_inner());
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line.chars().take(TAIL_LINE_CHARS).collect());
        }
        let _ = stderr_done.send(true);
    });

    let (exited, exit) = watch::channel(None);
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => format!("its status could not be read: {e}"),
        };
        let _ = exited.send(Some(status));
    });

    Ok((
        Child {
            program: launch.program.clone(),
            pid,
            exit,
            tail,
            stderr_ended,
        },
        (
            Bounded::new(
                Stdout {
                    pipe: Some(stdout),
                    server: server.to_owned(),
                },
                server,
            ),
            stdin,
        ),
    ))
}

impl Child {
    /// The program as it was run.
    pub(crate) fn program(&self) -> &str {
        &self.program
    }

    /// Resolves once the child has exited.
    pub(crate) async fn exited(&self) {
        let mut exit = self.exit.clone();
        // An error means the watcher is gone, which happens only once it has sent.
        let _ = exit.wait_for(Option::is_some).await;
    }

    /// Its exit status, once it has exited.
    pub(crate) fn status(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Its exit status, waiting at most `wait` for it.
    pub(crate) async fn status_within(&self, wait: Duration) -> Option<String> {
        let _ = tokio::time::timeout(wait, self.exited()).await;
        self.status()
    }

    /// Its last lines on stderr, once its stderr has ended or `wait` has passed (a process it
    /// started may hold the pipe open): an exited server's last words are read before they are
    /// logged.
    pub(crate) async fn stderr_tail_within(&self, wait: Duration) -> String {
        let mut ended = self.stderr_ended.clone();
        let _ = tokio::time::timeout(wait, ended.wait_for(|e| *e)).await;
        self.stderr_tail()
    }

    /// Its last lines on stderr, joined with ` | `: for the log, never for the model.
    pub(crate) fn stderr_tail(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join(" | ")
    }

    /// How it ended, in words the model may see: `it exited (exit status: 1)`. Neither its
    /// stderr nor its command line (either may hold a secret).
    pub(crate) fn exit_note(&self) -> String {
        match self.status() {
            Some(status) => format!("it exited ({status})"),
            None => "it closed its connection".to_owned(),
        }
    }

    /// Stops it as MCP's stdio transport says: the caller has closed its stdin already; it
    /// gets [`EXIT_GRACE`] to exit, then SIGTERM and as long again, then its whole process
    /// group is killed. A server that exits at once costs no wait.
    pub(crate) async fn stop(&self) {
        self.stop_within(EXIT_GRACE).await;
    }

    /// [`Child::stop`] with `grace` for each wait: a server that failed to start (it did not
    /// answer in time, or broke the protocol) is not waited for as long as one that served.
    pub(crate) async fn stop_within(&self, grace: Duration) {
        if self.status_within(grace).await.is_none() {
            self.signal(Signal::Terminate);
            if self.status_within(grace).await.is_none() {
                self.kill_group();
                let _ = self.status_within(grace).await;
            }
        }
        // Whatever it started and left behind goes with it.
        self.kill_group();
    }

    fn kill_group(&self) {
        self.signal(Signal::KillGroup);
    }

    /// Sends `signal` to the child (`Terminate`: the child alone, which may stop what it
    /// started in its own way) or to its whole process group (`KillGroup`).
    fn signal(&self, how: Signal) {
        #[cfg(unix)]
        if let Some(pid) = self.pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
            let (target, signal) = match how {
                Signal::Terminate => (pid, libc::SIGTERM),
                Signal::KillGroup => (-pid, libc::SIGKILL),
            };
            // SAFETY: kill(2) on the child's pid, or with a negative pid on the process group
            // the child leads (it was spawned with process_group(0)); no memory is touched.
            unsafe {
                libc::kill(target, signal);
            }
        }
        #[cfg(not(unix))]
        let _ = how;
    }
}

/// What [`Child::signal`] sends.
#[derive(Clone, Copy)]
enum Signal {
    /// SIGTERM to the child.
    Terminate,
    /// SIGKILL to the child's process group.
    KillGroup,
}

impl Drop for Child {
    /// A child dropped while it runs (its start was abandoned) is killed with its group.
    fn drop(&mut self) {
        if self.status().is_none() {
            self.kill_group();
        }
    }
}
