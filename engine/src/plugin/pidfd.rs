//! A worker process as a handle on the process itself, so that killing it can never hit
//! another process that took its number.
//!
//! A pid names a process only until its parent reaps it; after that the kernel hands the
//! number to the next process started. A worker's reader thread reaps it when its output ends,
//! so a `kill(pid)` from another thread (a call's deadline, the load watchdog) that races with
//! the reaping could reach a stranger. A pidfd (`pidfd_open`, Linux 5.3+) refers to the process
//! it was opened on: once that process is reaped, signalling it fails with `ESRCH`. It is
//! opened right after the spawn, while the child cannot have been reaped (only its parent
//! reaps it, and no thread has waited for it yet).
//!
//! Where there is no pidfd (another system, an older kernel, `pidfd_open` refused), [`kill`]
//! falls back to `kill(2)`; the callers then kill only while they know the child is not reaped
//! (under the lock the reader takes before it reaps, or before the spawner reaps).
//!
//! [`kill`]: Process::kill

use std::process::Child;

/// A started worker process.
#[derive(Debug)]
pub(crate) struct Process {
    pid: u32,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl Process {
    /// The handle of `child`, which has not been waited for yet.
    pub(crate) fn of(child: &Child) -> Process {
        #[cfg(target_os = "linux")]
        let pidfd = {
            let pid = rustix::process::Pid::from_child(child);
            match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
                Ok(fd) => Some(fd),
                Err(err) => {
                    tracing::debug!(pid = child.id(), "no pidfd for the plugin worker: {err}");
                    None
                }
            }
        };
        Process {
            pid: child.id(),
            #[cfg(target_os = "linux")]
            pidfd,
        }
    }

    /// Its process id (for logs).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends it SIGKILL. Through the pidfd, this reaches no other process, even after this
    /// one was reaped and its number reused; without one, see the module's documentation.
    pub(crate) fn kill(&self) {
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &self.pidfd {
            // ESRCH: it has ended (and may be reaped): nothing to kill.
            let _ = rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::KILL);
            return;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return;
        };
        // SAFETY: kill(2) with the pid of a child that, as the callers ensure, has not been
        // reaped yet (see the module's documentation).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// Set in the environment of the test binary run inside its own PID namespace.
    const INSIDE: &str = "TOOLGATE_TEST_INSIDE_PID_NAMESPACE";

    /// Runs [`a_kill_after_the_reaping_spares_the_process_that_took_the_pid_inside`] in a new
    /// user and PID namespace, where the test may choose the next pid (`ns_last_pid`), so that
    /// a pid is reused at once and for sure.
    #[test]
    fn a_kill_after_the_reaping_spares_the_process_that_took_the_pid() {
        let usable = Command::new("unshare")
            .args([
                "--user",
                "--map-root-user",
                "--pid",
                "--fork",
                "--mount-proc",
            ])
            .arg("true")
            .status()
            .is_ok_and(|s| s.success());
        if !usable {
            eprintln!("skipped: this system refuses `unshare` of a user and PID namespace");
            return;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let inside = Command::new("unshare")
            .args(["--user", "--map-root-user", "--pid", "--fork", "--mount-proc"])
            .arg(exe)
            .args([
                "--ignored",
                "--exact",
                "plugin::pidfd::tests::a_kill_after_the_reaping_spares_the_process_that_took_the_pid_inside",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(INSIDE, "1")
            .output()
            .expect("the test binary runs in a namespace");
        let out = String::from_utf8_lossy(&inside.stdout);
        assert!(
            inside.status.success() && out.contains("1 passed"),
            "{out}\n{}",
            String::from_utf8_lossy(&inside.stderr)
        );
    }

    #[test]
    #[ignore = "run by a_kill_after_the_reaping_spares_the_process_that_took_the_pid"]
    fn a_kill_after_the_reaping_spares_the_process_that_took_the_pid_inside() {
        assert!(
            std::env::var_os(INSIDE).is_some(),
            "must run in its own PID namespace"
        );
        let mut worker = Command::new("sleep").arg("60").spawn().expect("sleep");
        let process = Process::of(&worker);
        worker.kill().expect("killed");
        worker.wait().expect("reaped");
        // The next process gets the worker's old pid.
        std::fs::write(
            "/proc/sys/kernel/ns_last_pid",
            (process.pid() - 1).to_string(),
        )
        .expect("ns_last_pid set");
        let mut stranger = Command::new("sleep").arg("60").spawn().expect("sleep");
        assert_eq!(stranger.id(), process.pid(), "the pid was not reused");
        process.kill();
        // SIGTERM from here: the stranger dies of it, unless the SIGKILL above reached it.
        let pid = libc::pid_t::try_from(stranger.id()).expect("a pid");
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = stranger.wait().expect("reaped");
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    }
}
