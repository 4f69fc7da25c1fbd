//! No network for a plugin worker whose plugin has no `net` grant: the worker is moved into a
//! new user namespace and a new network namespace as it starts (before `exec`), so before it
//! loads the library. The new network namespace has only a loopback device, which is down, and
//! no route anywhere: every connection, the host's own `127.0.0.1` included, fails
//! (`ENETUNREACH`), and a socket bound there is seen by nobody outside. A user namespace makes
//! this possible without privileges; where the system forbids them (a sysctl, a container's
//! seccomp profile), the worker runs with the network and says so on its stderr.

/// What a worker that could not leave the network writes on its stderr.
pub(crate) const DECLARED_ONLY: &str = "toolgate plugin-host: cannot leave the network (a new \
    user namespace was refused; they may be disabled here): the plugin has no net grant, but \
    that is only declared\n";

/// Leaves the network: `unshare(CLONE_NEWUSER | CLONE_NEWNET)`. Must run while the process has
/// one thread (the kernel refuses a new user namespace otherwise, with `EINVAL`): the engine
/// calls it in the worker between `fork` and `exec`. Async-signal-safe (one system call, no
/// allocation but the error's, which is plain data).
pub(crate) fn leave_network() -> std::io::Result<()> {
    // SAFETY: unshare takes flags only and affects this process alone.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_with_several_threads_cannot_leave_the_network_and_is_told_why() {
        // The test harness runs tests on threads of its own: this process has several, and the
        // kernel refuses a new user namespace to it. That is the "declared only" path.
        let other =
            std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(200)));
        let err =
            leave_network().expect_err("a threaded process cannot unshare its user namespace");
        other.join().expect("the thread ends");
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    }
}
