//! `isolation: process`: a plugin loaded in a worker process (`toolgate plugin-host`), and the
//! supervisor that starts it, talks to it and restarts it.
//!
//! One [`Supervisor`] per plugin owns at most one live worker at a time. Calls are written to
//! the worker's stdin as frames (`toolgate_plugin_api::worker`); one reader thread per worker
//! reads its stdout and hands each result to the call that waits for it. When the worker's
//! stdout ends (a crash: a signal, `abort()`, an allocation failure, a stack overflow), every
//! call in flight on it gets a `plugin_crashed` error that names the signal, and the next call
//! starts a new worker, after a pause that doubles with each crash in a row ([`backoff`]).
//!
//! While calls come back to back and are quick ([`wait::worker_pace`]), neither the reader
//! thread nor the caller sleeps between a call and its result: the reader watches the worker's
//! output for a short while after the last call was sent or result came, and the caller watches for
//! its result (spinning first while that pays off, then yielding) for at most
//! [`wait::CALLER_WAIT`]; the worker watches
//! its input the same way (`toolgate_plugin_api::worker::serve_pipe_confined`). A lone call,
//! or one after a pause, finds them all asleep and costs no CPU until it comes.
//!
//! A call that the guard abandons (its deadline passed, or the turn was cancelled) is sent a
//! `cancel` frame; if the worker has not answered it [`KILL_GRACE`] later, the worker is
//! killed, so a plugin stuck in a loop costs a restart, never a thread of the host.
//!
//! The worker runs with a cleared environment (only the granted variables), `no_new_privs`, the
//! policy's `memory_limit` as its data limit (`RLIMIT_DATA`: its private writable memory, not
//! address space it only reserves; see docs/plugins.md) and in namespaces of its own
//! ([`super::sandbox`]: user, PID, mount, and network when its plugin has no `net` grant), all
//! set between `fork` and `exec`; the worker confines itself further (Landlock, seccomp) before
//! it loads the library (`crate::plugin_host`). It ends when the host closes its stdin (the host
//! exited, or dropped the plugin).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use toolgate_plugin_api::worker::pace::Pace;
use toolgate_plugin_api::worker::{
    Confine, FrameError, HostFrame, WireTool, WorkerFrame, read_frame, write_frame,
};
use toolgate_plugin_api::{Capabilities, PluginOutcome};

use super::pidfd::Process;
use super::wait;
use crate::error::{Chain, WorkerError};
use crate::tool::{ProgressFn, ToolError};
use tail::{Tail, keep_tail, tail_text};

mod tail;

/// How long an abandoned call has to answer its `cancel` before its worker is killed.
pub(crate) const KILL_GRACE: Duration = Duration::from_millis(200);

/// How long a new worker has to load its library and answer `hello` before it is killed.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest pause before a restart.
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// The error kind of a call whose worker died under it.
pub(crate) const PLUGIN_CRASHED: &str = "plugin_crashed";

/// What starts a worker: the program, the library and what the policy says about it.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSpec {
    /// The `toolgate` program (`plugin-host` is one of its commands).
    pub program: PathBuf,
    /// The plugin library (for a built-in, the program itself).
    pub library: PathBuf,
    /// The name of the plugin built into the program that the worker serves, instead of
    /// loading `library`.
    pub builtin: Option<String>,
    /// The policy's folder, against which the worker resolves the configuration's paths.
    pub base_dir: PathBuf,
    /// Its sealed copy when the policy pins it: the worker loads that, not the file.
    pub pinned: Option<Arc<super::pinned::PinnedLibrary>>,
    /// What the policy grants: a worker does not start a plugin that asks for more.
    pub grants: Capabilities,
    /// No `net` grant: the worker leaves the network before loading (where it can).
    pub deny_net: bool,
    /// The configuration `init` receives.
    pub config: serde_json::Value,
    /// The worker's memory limit (`RLIMIT_DATA`), in bytes.
    pub memory_limit: Option<u64>,
    /// The environment variables the worker keeps (everything else is cleared).
    pub env: Vec<String>,
    /// What the worker is confined to (Landlock, seccomp): its grants.
    pub confine: Option<Confine>,
}

/// The plugin as a worker describes it.
#[derive(Debug, Clone)]
pub(crate) struct WorkerManifest {
    pub name: String,
    pub tools: Vec<WireTool>,
    pub capabilities: Capabilities,
}

type Reply = Result<PluginOutcome, ToolError>;

/// A call in flight on a worker.
struct Pending {
    done: oneshot::Sender<Reply>,
    /// When it was sent, in ns of its worker's pace ([`Pace::now`]).
    sent_ns: u64,
    progress: Option<ProgressFn>,
    /// Where its streamed text goes.
    chunks: mpsc::UnboundedSender<String>,
    /// What the call holds (its thread permit, its group's lock) until the worker answers or
    /// dies.
    _keep: Box<dyn Send>,
}

/// One live worker process.
struct Running {
    /// Killed through this, never by a pid that may have been reused ([`super::pidfd`]).
    process: Arc<Process>,
    /// `None` once the supervisor is gone: closing it ends the worker.
    stdin: Mutex<Option<ChildStdin>>,
    /// `None` once the worker is dead: later calls must not wait on it.
    pending: Mutex<Option<HashMap<u64, Pending>>>,
    /// Why the host killed it, if it did (the crash message says so).
    killed_because: Mutex<Option<String>>,
    /// Its stderr's last bytes.
    stderr: Arc<Tail>,
    /// The policy's `memory_limit`, named when the worker runs out of it.
    memory_limit: Option<u64>,
    started: Instant,
    /// When calls come and go, for the short waits of back-to-back calls.
    pace: Pace,
}

/// Supervises the worker of one plugin.
pub(crate) struct Supervisor {
    spec: WorkerSpec,
    label: String,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Whether its callers' spins for a result pay off (a pipe's round trip rarely fits one).
    caller_spin: wait::Spin,
}

#[derive(Default)]
struct State {
    current: Option<Arc<Running>>,
    /// Crashes since the last call a worker answered.
    crashes: u32,
    last_crash: Option<Instant>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The pause before the restart that follows `crashes` crashes in a row: none after the first,
/// then 100 ms, doubling, at most [`BACKOFF_MAX`].
pub(crate) fn backoff(crashes: u32) -> Duration {
    if crashes <= 1 {
        return Duration::ZERO;
    }
    let doublings = (crashes - 2).min(16);
    (Duration::from_millis(100) * 2u32.pow(doublings)).min(BACKOFF_MAX)
}

impl Supervisor {
    /// Starts the first worker and reads the plugin's manifest from it (blocking); the worker
    /// stays up for the calls.
    pub(crate) fn start(
        spec: WorkerSpec,
    ) -> Result<(Arc<Supervisor>, WorkerManifest), WorkerError> {
        let label = spec.library.display().to_string();
        let supervisor = Arc::new(Supervisor {
            spec,
            label,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(1),
            caller_spin: wait::Spin::default(),
        });
        let (running, manifest) = supervisor.spawn()?;
        lock(&supervisor.state).current = Some(running);
        Ok((supervisor, manifest))
    }

    /// Starts a worker, says hello and reads its manifest.
    fn spawn(self: &Arc<Self>) -> Result<(Arc<Running>, WorkerManifest), WorkerError> {
        let program = &self.spec.program;
        let mut command = Command::new(program);
        command
            .arg("plugin-host")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear();
        for name in &self.spec.env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let inherit = self.spec.pinned.as_ref().and_then(|p| p.inherited_fd());
        confine(
            &mut command,
            self.spec.memory_limit,
            inherit,
            self.spec.deny_net,
        );
        let mut child = command.spawn().map_err(|source| WorkerError::Spawn {
            program: program.clone(),
            source,
        })?;
        let protocol = |what: String| WorkerError::Protocol {
            program: program.clone(),
            what,
        };
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill_and_reap(&mut child);
            return Err(protocol("has no pipes".into()));
        };
        // A frame's length and body in one read, instead of two.
        let mut stdout = std::io::BufReader::with_capacity(64 * 1024, stdout);
        let tail = Arc::new(Tail::default());
        keep_tail(stderr, tail.clone());
        let hello = HostFrame::Hello {
            library: self.spec.pinned.as_ref().map_or_else(
                || self.spec.library.clone(),
                |p| p.load_path().to_path_buf(),
            ),
            config: self.spec.config.clone(),
            confine: self.spec.confine.clone(),
            grants: Some(self.spec.grants.clone()),
            builtin: self.spec.builtin.clone(),
            base_dir: Some(self.spec.base_dir.clone()),
        };
        // A library whose loading or `init` never returns must not hang the build.
        let process = Arc::new(Process::of(&child));
        let (answered, watchdog) = std::sync::mpsc::channel::<()>();
        let watched = process.clone();
        let watchdog = std::thread::Builder::new()
            .name("toolgate-worker-hello".into())
            .spawn(move || {
                let late = matches!(
                    watchdog.recv_timeout(HELLO_TIMEOUT),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                );
                if late {
                    watched.kill();
                }
                late
            });
        let answer = write_frame(&mut stdin, &hello)
            .map_err(|e| protocol(format!("did not take the hello frame: {}", Chain(&e))))
            .and_then(|()| {
                read_frame::<WorkerFrame>(&mut stdout)
                    .map_err(|e| protocol(format!("did not answer hello: {}", Chain(&e))))
            });
        // Answered or not, the watchdog has nothing more to do; it has ended before the
        // child is reaped below, so it kills nothing else.
        drop(answered);
        let late = watchdog.is_ok_and(|w| w.join().unwrap_or(false));
        let manifest = match answer {
            Ok(Some(WorkerFrame::Manifest {
                name,
                tools,
                capabilities,
                ..
            })) => WorkerManifest {
                name,
                tools,
                capabilities,
            },
            Ok(Some(WorkerFrame::LoadFailed { message })) => {
                kill_and_reap(&mut child);
                return Err(WorkerError::Load { message });
            }
            Ok(Some(WorkerFrame::NotGranted { name, missing })) => {
                kill_and_reap(&mut child);
                return Err(WorkerError::NotGranted {
                    plugin: name,
                    missing,
                });
            }
            Ok(Some(other)) => {
                kill_and_reap(&mut child);
                return Err(protocol(format!("answered hello with {other:?}")));
            }
            Ok(None) | Err(_) => {
                let status = kill_and_reap(&mut child);
                let stderr = tail_text(&tail);
                // A worker that dies before it reads hello (the sandbox's first processes
                // start under the limit too) may have died of it as well.
                let hint = self.spec.memory_limit.map_or(String::new(), |limit| {
                    format!(
                        "; its memory_limit of {} may be too small for it to start and load \
                         the library",
                        size(limit)
                    )
                });
                let why = match (late, answer) {
                    (true, _) => format!(
                        "was killed because loading the plugin took longer than {} s (the \
                         library's initialisers, its manifest or its init did not return)",
                        HELLO_TIMEOUT.as_secs()
                    ),
                    (false, Err(WorkerError::Protocol { what, .. })) => {
                        format!("{what} (it {}){hint}", describe_exit(status))
                    }
                    (false, _) => format!(
                        "ended while loading the plugin (it {}){hint}",
                        describe_exit(status)
                    ),
                };
                return Err(protocol(format!(
                    "{why}{}",
                    if stderr.is_empty() {
                        String::new()
                    } else {
                        format!("; it said: {stderr}")
                    }
                )));
            }
        };
        let running = Arc::new(Running {
            process,
            stdin: Mutex::new(Some(stdin)),
            pending: Mutex::new(Some(HashMap::new())),
            killed_because: Mutex::new(None),
            stderr: tail,
            memory_limit: self.spec.memory_limit,
            started: Instant::now(),
            pace: wait::worker_pace(),
        });
        let reader = running.clone();
        let supervisor = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name(format!("toolgate-worker-{}", manifest.name))
            .spawn(move || {
                read_results(&reader, &mut stdout);
                // Taken before the child is reaped: once it is, its pid may be reused, and
                // nothing may kill it any more (see `Abandon`).
                let calls = lock(&reader.pending).take().unwrap_or_default();
                let status = child.wait().ok();
                let message = crash_message(&reader, status);
                if let Some(supervisor) = supervisor.upgrade() {
                    supervisor.crashed(&reader);
                }
                for (_, call) in calls {
                    let _ = call
                        .done
                        .send(Err(ToolError::coded(PLUGIN_CRASHED, message.clone())));
                }
            });
        if let Err(e) = spawned {
            // Without its reader nobody would ever see its answers: stop it now.
            running.process.kill();
            return Err(protocol(format!("cannot be read: no thread: {e}")));
        }
        Ok((running, manifest))
    }

    /// Counts a crash of `running` and forgets it, unless a newer worker already replaced it.
    fn crashed(&self, running: &Arc<Running>) {
        let mut state = lock(&self.state);
        if state
            .current
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, running))
        {
            state.current = None;
        }
        state.crashes = state.crashes.saturating_add(1);
        state.last_crash = Some(Instant::now());
    }

    /// The live worker, started (after its backoff) if there is none.
    async fn worker(self: &Arc<Self>) -> Result<Arc<Running>, ToolError> {
        let wait = {
            let state = lock(&self.state);
            if let Some(current) = &state.current {
                return Ok(current.clone());
            }
            let pause = backoff(state.crashes);
            state
                .last_crash
                .map_or(Duration::ZERO, |at| pause.saturating_sub(at.elapsed()))
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let this = self.clone();
        let started = tokio::task::spawn_blocking(move || {
            // Another call may have started one while this one slept.
            let mut state = lock(&this.state);
            if let Some(current) = &state.current {
                return Ok(current.clone());
            }
            let (running, _) = this.spawn()?;
            state.current = Some(running.clone());
            Ok::<_, WorkerError>(running)
        })
        .await;
        match started {
            Ok(Ok(running)) => {
                tracing::info!(
                    plugin = %self.label,
                    pid = running.process.pid(),
                    "plugin worker started"
                );
                Ok(running)
            }
            Ok(Err(e)) => Err(ToolError::coded(
                PLUGIN_CRASHED,
                format!(
                    "{}; the call did not run, and the next call starts the worker again",
                    Chain(&e)
                ),
            )),
            Err(e) => Err(ToolError::coded(
                PLUGIN_CRASHED,
                format!("the plugin's worker could not be restarted: {e}"),
            )),
        }
    }

    /// Runs `tool` on the worker. Dropping the future abandons the call: the worker is told to
    /// cancel it, and killed if it has not answered [`KILL_GRACE`] later.
    pub(crate) async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: String,
        progress: Option<ProgressFn>,
        keep: Box<dyn Send>,
        chunks: mpsc::UnboundedSender<String>,
        keep_chars: Option<u64>,
    ) -> Result<PluginOutcome, ToolError> {
        let running = self.worker().await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (done, answer) = oneshot::channel();
        let sent_ns = running.pace.now();
        {
            let mut pending = lock(&running.pending);
            let Some(pending) = pending.as_mut() else {
                return Err(ToolError::coded(
                    PLUGIN_CRASHED,
                    "the plugin's worker died as the call was sent; try again",
                ));
            };
            pending.insert(
                id,
                Pending {
                    done,
                    sent_ns,
                    progress,
                    chunks,
                    _keep: keep,
                },
            );
        }
        let frame = HostFrame::Call {
            id,
            tool: tool.to_string(),
            args,
            deadline_ms: None,
            keep_chars,
        };
        let quick = running.pace.began(sent_ns);
        match running.send(&frame) {
            Ok(()) => {}
            Err(e @ FrameError::TooLargeToSend) => {
                // Nothing was sent: the worker never hears of it.
                if let Some(pending) = lock(&running.pending).as_mut() {
                    pending.remove(&id);
                }
                return Err(ToolError::invalid_arguments(format!(
                    "the arguments cannot be sent to the plugin's worker: {}",
                    Chain(&e)
                )));
            }
            // The reader sees the end too and answers every pending call, this one included.
            Err(e) => {
                tracing::warn!(plugin = %self.label, "writing a call to the plugin worker failed: {}", Chain(&e));
            }
        }
        let mut guard = Abandon {
            running: running.clone(),
            id,
            answered: false,
        };
        let reply = wait::answer(answer, quick.then_some(&self.caller_spin))
            .await
            .unwrap_or_else(|| {
                Err(ToolError::coded(
                    PLUGIN_CRASHED,
                    "the plugin's worker ended without answering",
                ))
            });
        guard.answered = true;
        if reply.is_ok() {
            lock(&self.state).crashes = 0;
        }
        reply
    }
}

impl Running {
    /// Watches `stdout` for the next frame while calls are hot ([`wait::worker_pace`]), so
    /// that the read that follows finds it without sleeping; returns at the latest the pace's
    /// watch after the last call was sent or result came.
    fn watch(&self, stdout: &std::io::BufReader<std::process::ChildStdout>) {
        use std::os::fd::AsFd;
        if stdout.buffer().is_empty() {
            self.pace.watch_fd(stdout.get_ref().as_fd());
        }
    }

    fn send(&self, frame: &HostFrame) -> Result<(), FrameError> {
        match lock(&self.stdin).as_mut() {
            Some(stdin) => write_frame(stdin, frame),
            None => Err(FrameError::Io(std::io::ErrorKind::BrokenPipe.into())),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // Closing its stdin ends the worker; its reader thread then reaps it.
        if let Some(current) = lock(&self.state).current.take() {
            lock(&current.stdin).take();
        }
    }
}

/// Abandons a call whose future is dropped before its answer came.
struct Abandon {
    running: Arc<Running>,
    id: u64,
    answered: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let running = self.running.clone();
        let id = self.id;
        let _ = running.send(&HostFrame::Cancel { id });
        let spawned = std::thread::Builder::new()
            .name("toolgate-worker-deadline".into())
            .spawn(move || {
                std::thread::sleep(KILL_GRACE);
                // Killed under the lock the reader takes before it reaps the worker.
                let pending = lock(&running.pending);
                if pending.as_ref().is_some_and(|p| p.contains_key(&id)) {
                    *lock(&running.killed_because) = Some(format!(
                        "the host killed the worker because a call ran past its deadline and \
                         did not stop within {} ms of being cancelled",
                        KILL_GRACE.as_millis()
                    ));
                    running.process.kill();
                }
            });
        if spawned.is_err() {
            let pending = lock(&self.running.pending);
            if pending.is_some() {
                self.running.process.kill();
            }
        }
    }
}

/// Reads the worker's frames until its stdout ends.
fn read_results(running: &Running, stdout: &mut std::io::BufReader<std::process::ChildStdout>) {
    loop {
        running.watch(stdout);
        match read_frame::<WorkerFrame>(stdout) {
            Ok(Some(WorkerFrame::Result { id, outcome })) => {
                let pending = lock(&running.pending).as_mut().and_then(|p| p.remove(&id));
                if let Some(pending) = pending {
                    running.pace.ended(pending.sent_ns, running.pace.now());
                    let _ = pending.done.send(Ok(outcome.into()));
                }
            }
            Ok(Some(WorkerFrame::Progress { id, message })) => {
                let progress = lock(&running.pending)
                    .as_ref()
                    .and_then(|p| p.get(&id))
                    .and_then(|p| p.progress.clone());
                if let Some(progress) = progress {
                    progress(&message);
                }
            }
            Ok(Some(WorkerFrame::Chunk { id, text })) => {
                let chunks = lock(&running.pending)
                    .as_ref()
                    .and_then(|p| p.get(&id))
                    .map(|p| p.chunks.clone());
                // A reader that is gone was told to cancel (see `Abandon`).
                if let Some(chunks) = chunks {
                    let _ = chunks.send(text);
                }
            }
            Ok(Some(other)) => {
                tracing::warn!("unexpected frame from a plugin worker: {other:?}");
            }
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("reading from a plugin worker failed: {}", Chain(&e));
                // A pipe that failed mid-frame is most likely a worker that died writing.
                if !matches!(e, FrameError::Io(_)) {
                    lock(&running.killed_because).get_or_insert_with(|| {
                        format!(
                            "the host killed the worker because its output broke the \
                             protocol: {}",
                            Chain(&e)
                        )
                    });
                }
                running.process.kill();
                return;
            }
        }
    }
}

/// What the model is told about a worker that died.
fn crash_message(running: &Running, status: Option<std::process::ExitStatus>) -> String {
    let mut message = format!(
        "the plugin's worker process {} after {} ms",
        describe_exit(status),
        running.started.elapsed().as_millis()
    );
    if let Some(why) = lock(&running.killed_because).as_ref() {
        message.push_str(&format!(" ({why})"));
    }
    let stderr = tail_text(&running.stderr);
    // Rust's words when an allocation fails.
    if let Some(limit) = running.memory_limit
        && stderr.contains("memory allocation of")
    {
        message.push_str(&format!(
            " (an allocation went past the plugin's memory_limit of {})",
            size(limit)
        ));
    }
    if !stderr.is_empty() {
        message.push_str(&format!("; its last words: {stderr}"));
    }
    message.push_str("; the call did not finish, and the worker restarts for the next call");
    message
}

/// `was killed by signal 11 (SIGSEGV)`, `exited with status 3`.
fn describe_exit(status: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(status) => match (status.code(), status.signal()) {
            (_, Some(signal)) => {
                format!("was killed by signal {signal} ({})", signal_name(signal))
            }
            (Some(code), None) => format!("exited with status {code}"),
            (None, None) => "ended".to_string(),
        },
        None => "ended (its status is unknown)".to_string(),
    }
}

/// The usual name of a signal.
pub(crate) fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        libc::SIGPIPE => "SIGPIPE",
        _ => "another signal",
    }
}

fn kill_and_reap(child: &mut Child) -> Option<std::process::ExitStatus> {
    let _ = child.kill();
    child.wait().ok()
}

/// A `memory_limit` as the policy writes it (`256MiB`), or in bytes.
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(
            || format!("{bytes} bytes"),
            |(unit, name)| format!("{}{name}", bytes / unit),
        )
}

/// Sets the worker's limits between `fork` and `exec`, lets it inherit `inherit` (the sealed
/// copy of a pinned library, under the same number) and puts it in namespaces of its own
/// ([`super::sandbox`]; with `deny_net`, a network namespace too; the child has one thread
/// here, as a new user namespace needs).
fn confine(
    command: &mut Command,
    memory_limit: Option<u64>,
    inherit: Option<std::os::fd::RawFd>,
    deny_net: bool,
) {
    use std::os::unix::process::CommandExt;
    // The program and environment the sandbox's first process runs, prepared here: the child
    // may not allocate.
    #[cfg(target_os = "linux")]
    let sandbox = super::sandbox::Sandbox::new(
        command.get_program(),
        command
            .get_envs()
            .filter_map(|(name, value)| Some((name, value?))),
        deny_net,
    );
    #[cfg(not(target_os = "linux"))]
    let _ = deny_net;
    // SAFETY: the closure calls only async-signal-safe functions (setrlimit, prctl, fcntl,
    // and the sandbox's system calls) and does not allocate.
    unsafe {
        command.pre_exec(move || {
            if let Some(fd) = inherit
                && libc::fcntl(fd, libc::F_SETFD, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(limit) = memory_limit {
                let limit = libc::rlim_t::try_from(limit).unwrap_or(libc::RLIM_INFINITY);
                let rlimit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                // RLIMIT_DATA, not RLIMIT_AS: what the worker writes to, not the address
                // space it reserves (malloc's arenas, thread stacks); see docs/plugins.md.
                if libc::setrlimit(libc::RLIMIT_DATA, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Last: the worker's other processes inherit the limits above.
            #[cfg(target_os = "linux")]
            if let Some(sandbox) = &sandbox {
                sandbox.enter()?;
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_restart_is_immediate_and_later_ones_double_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_millis(100));
        assert_eq!(backoff(3), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(400));
        assert_eq!(backoff(40), BACKOFF_MAX);
    }

    #[test]
    fn a_signal_is_named_in_the_exit_description() {
        use std::os::unix::process::ExitStatusExt;
        let status = std::process::ExitStatus::from_raw(libc::SIGSEGV);
        assert_eq!(
            describe_exit(Some(status)),
            "was killed by signal 11 (SIGSEGV)"
        );
    }
}
