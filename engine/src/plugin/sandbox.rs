//! The namespaces a plugin worker runs in (`isolation: process`, Linux): its own user, PID and
//! mount namespaces, with a `/proc` of its own, and, when its plugin has no `net` grant, a
//! network namespace of its own. Inside, the worker sees no process but its own tree, so it
//! can neither signal nor read the host or any other process; when it ends, everything it
//! started ends with it; and without `net` no address (not even the host's `127.0.0.1`)
//! can be reached.
//!
//! Three processes make one worker:
//!
//! ```text
//! host ── X  (the host's child, `toolgate plugin-host`: waits, then ends as the worker ended)
//!         └─ B  (PID 1 of the new PID namespace, `toolgate plugin-host`: reaps, never serves)
//!             └─ C  (PID 2: the worker proper, which loads the plugin and serves the pipe)
//! ```
//!
//! The engine forks X; X leaves the host's session and unshares the namespaces ([`Sandbox::enter`],
//! between `fork` and `exec`, where it has one thread, as a new user namespace needs), clones
//! B, and both `exec` the program: neither keeps a copy of the host's memory. B mounts the new
//! `/proc` before its `exec` (while it still has the capabilities of its new user namespace),
//! and gets `SIGKILL` when X dies (`PR_SET_PDEATHSIG`). In `plugin-host`, [`split`] tells them
//! apart: B forks C and reaps every process of the namespace until C ends, then ends with C's
//! status (128 + the signal for a signal); X then ends the same way (dying of the same signal),
//! so the engine sees what C did. The engine kills X to kill the worker: B dies of it, and the
//! kernel kills every process left in a PID namespace whose first process ended.
//!
//! Where the system refuses a user namespace (a sysctl, a container's seccomp profile), a
//! privileged engine makes the others without one; failing that, the worker runs in the host's
//! namespaces and says so on its stderr (Landlock's signal scope, the seccomp filter and the
//! `/proc` rule still hold where the kernel has them). A `/proc` that cannot be mounted (a
//! container that masks parts of the host's) leaves the host's, with a warning.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;

/// What a worker without a `net` grant that could not leave the network writes on its stderr.
const SHARED_NETWORK: &str = "toolgate plugin-host: cannot leave the network (a new user \
    namespace was refused; they may be disabled here): the plugin has no net grant, and only \
    the seccomp filter keeps it from sockets\n";

/// What a worker that could not make its namespaces writes on its stderr.
const SHARED_NAMESPACES: &str = "toolgate plugin-host: cannot make namespaces (a new user \
    namespace was refused; they may be disabled here): the worker shares the host's processes, \
    and the processes it starts may outlive it\n";

/// What a worker that could not mount a `/proc` of its own writes on its stderr.
const HOST_PROC: &str = "toolgate plugin-host: cannot mount a /proc of its own (the system's \
    may be partly masked): other processes stay listed in /proc\n";

/// What B writes when it cannot run the program.
const NO_INIT: &str = "toolgate plugin-host: the worker's first process cannot start the \
    program\n";

/// The most threads and processes a worker's tree has at once, where the kernel counts them
/// per user namespace (Linux 5.14 and later, for a user other than root): `RLIMIT_NPROC` in the
/// worker's own user namespace.
pub(crate) const MAX_TASKS: libc::rlim_t = 512;

/// What a worker needs between `fork` and `exec` to make its namespaces: all allocated before
/// the fork, since the child may not allocate.
pub(crate) struct Sandbox {
    program: CString,
    /// `program`, `plugin-host`, null.
    argv: [*const libc::c_char; 3],
    _env: Vec<CString>,
    /// `NAME=value` of each variable, null-terminated.
    envp: Vec<*const libc::c_char>,
    deny_net: bool,
}

// SAFETY: the pointers point into the `CString`s the struct owns, whose heap buffers do not
// move with it and are never changed; they are only read.
unsafe impl Send for Sandbox {}
// SAFETY: as above; nothing writes through them.
unsafe impl Sync for Sandbox {}

const PLUGIN_HOST: &std::ffi::CStr = c"plugin-host";

impl Sandbox {
    /// For a worker that runs `program plugin-host` with exactly `env`; `deny_net` when its
    /// plugin has no `net` grant. `None` when a path or variable holds a NUL byte (the spawn
    /// then fails on its own).
    pub(crate) fn new<'a>(
        program: &OsStr,
        env: impl Iterator<Item = (&'a OsStr, &'a OsStr)>,
        deny_net: bool,
    ) -> Option<Sandbox> {
        let program = CString::new(program.as_bytes()).ok()?;
        let env = env
            .map(|(name, value)| {
                let mut pair = name.as_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(value.as_bytes());
                CString::new(pair).ok()
            })
            .collect::<Option<Vec<_>>>()?;
        let mut envp: Vec<*const libc::c_char> = env.iter().map(|v| v.as_ptr()).collect();
        envp.push(std::ptr::null());
        Some(Sandbox {
            argv: [program.as_ptr(), PLUGIN_HOST.as_ptr(), std::ptr::null()],
            program,
            _env: env,
            envp,
            deny_net,
        })
    }

    /// In the engine's child, between `fork` and `exec`: leaves the host's session, makes the
    /// namespaces and starts B. Async-signal-safe: system calls only, no allocation.
    ///
    /// # Safety
    ///
    /// Only in a child between `fork` and `exec`, with one thread, after its other limits are
    /// set (B and C inherit them).
    pub(crate) unsafe fn enter(&self) -> std::io::Result<()> {
        // SAFETY: system calls on this process; the caller's promise for the rest.
        unsafe {
            // Its own session and process group: the host's group (what `kill(0, ...)` and a
            // terminal's Ctrl-C reach) does not include it.
            libc::setsid();
            let net = if self.deny_net { libc::CLONE_NEWNET } else { 0 };
            let wanted = libc::CLONE_NEWPID | libc::CLONE_NEWNS | net;
            if libc::unshare(libc::CLONE_NEWUSER | wanted) == 0 {
                // Counted in the new user namespace only: the worker's own tree.
                let tasks = libc::rlimit {
                    rlim_cur: MAX_TASKS,
                    rlim_max: MAX_TASKS,
                };
                libc::setrlimit(libc::RLIMIT_NPROC, &tasks);
            } else if libc::unshare(wanted) != 0 {
                say(SHARED_NAMESPACES);
                if self.deny_net {
                    say(SHARED_NETWORK);
                }
                return Ok(());
            }
            // A plain fork, without the C library's handlers (the engine is multithreaded: a
            // lock held by another of its threads stays held here).
            let child = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0);
            if child < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if child == 0 {
                self.become_init();
            }
            Ok(())
        }
    }

    /// B, before its `exec`: dies with X, mounts its `/proc`, runs the program.
    unsafe fn become_init(&self) -> ! {
        // SAFETY: system calls with valid, NUL-terminated strings and arrays.
        unsafe {
            // X cannot have died yet: the engine kills it only after its `exec`, once spawned.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            let null = std::ptr::null::<libc::c_char>();
            // Private first, so that nothing mounted here reaches the host's namespace.
            let private = libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == 0;
            if !private
                || libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) != 0
            {
                say(HOST_PROC);
            }
            libc::execve(
                self.program.as_ptr(),
                self.argv.as_ptr(),
                self.envp.as_ptr(),
            );
            say(NO_INIT);
            libc::_exit(127)
        }
    }
}

/// Writes `text` on stderr (the worker's, whose tail reaches a crash message).
fn say(text: &str) {
    // SAFETY: write(2) of a valid buffer; a failure is ignored (nothing else to tell).
    unsafe {
        libc::write(libc::STDERR_FILENO, text.as_ptr().cast(), text.len());
    }
}

/// First thing in `plugin-host`: X waits for B and ends as C ended, B becomes the PID
/// namespace's init; both never return. Returns in C, and in a worker started without
/// namespaces.
pub(crate) fn split() {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } == 1 {
        init();
    } else if has_child() {
        wait_and_end_alike();
    }
}

/// Whether this process has a child: only X does, at its start (B, cloned before its `exec`).
fn has_child() -> bool {
    // SAFETY: waitid with WNOWAIT | WNOHANG only looks; `info` is written by the kernel.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
    }
}

/// B: forks C (which returns), then reaps every process of the namespace until C ends, and
/// ends with C's status: its exit status (at most 127), or 128 + the signal that killed it.
fn init() {
    // SAFETY: this process has one thread (the program has just started), so fork is safe;
    // the rest are system calls on plain numbers.
    unsafe {
        // A session of its own, inside the namespace: C's `kill(0, ...)` reaches no process
        // outside (B, as the namespace's init, ignores what C may send it).
        libc::setsid();
        let worker = libc::fork();
        if worker == 0 {
            return;
        }
        if worker < 0 {
            libc::_exit(127);
        }
        close_all();
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == worker {
                libc::_exit(encode(status));
            }
            if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
    }
}

/// C's wait status as B's exit status.
fn encode(status: libc::c_int) -> libc::c_int {
    if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        libc::WEXITSTATUS(status).min(127)
    }
}

/// X: closes the worker's pipes (C and B hold them), waits for B and ends as [`encode`] says C
/// did.
fn wait_and_end_alike() -> ! {
    close_all();
    // SAFETY: waitpid on this process's only child; `die_of` and `_exit` end the process.
    unsafe {
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid > 0 {
                if libc::WIFSIGNALED(status) {
                    die_of(libc::WTERMSIG(status));
                }
                let code = libc::WEXITSTATUS(status);
                if code > 128 {
                    die_of(code - 128);
                }
                libc::_exit(code);
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
    }
}

/// Ends this process with `signal`, as its default action does (without a core file).
fn die_of(signal: libc::c_int) -> ! {
    // SAFETY: resets the signal to its default action, unblocks it and sends it to this
    // process; `_exit` if it did not end it.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

/// Closes every file descriptor of this process.
fn close_all() {
    // SAFETY: closing descriptors this process owns; nothing here uses them afterwards.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0) != 0 {
            for fd in 0..1024 {
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_told_apart_from_an_exit_status() {
        // Wait statuses as the kernel makes them: the signal in the low bits, or the code
        // shifted by 8.
        assert_eq!(encode(libc::SIGSEGV), 128 + libc::SIGSEGV);
        assert_eq!(encode(3 << 8), 3);
        assert_eq!(encode(200 << 8), 127);
    }

    #[test]
    fn the_program_and_environment_are_ready_before_the_fork() {
        let env = [(OsStr::new("A"), OsStr::new("1"))];
        let sandbox =
            Sandbox::new(OsStr::new("/bin/toolgate"), env.into_iter(), true).expect("no NUL bytes");
        assert_eq!(sandbox.envp.len(), 2);
        assert!(sandbox.envp[1].is_null());
        // SAFETY: the first pointer is into a CString the sandbox owns.
        let first = unsafe { std::ffi::CStr::from_ptr(sandbox.envp[0]) };
        assert_eq!(first.to_bytes(), b"A=1");
        assert!(Sandbox::new(OsStr::new("/bin/a\0b"), std::iter::empty(), false).is_none());
    }
}
