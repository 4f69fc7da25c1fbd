//! Process-wide settings that a program embedding the engine makes once, at the start of
//! `main`. The engine, a library, never changes them by itself.

/// Makes writing past a file-size limit (`ulimit -f`) an error instead of the end of the
/// process.
///
/// Past that limit a write raises `SIGXFSZ`, whose default action kills the process in the
/// middle of the write. Ignored, the write fails with `EFBIG` instead: the result store reports
/// it as an error (and its backend removes the file it was writing), and the call goes on
/// without offloading. Children (plugin workers, upstream servers) inherit the disposition.
///
/// Call it first thing in `main`, before any thread starts. A no-op where there is no
/// `SIGXFSZ`.
pub fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: `signal` with `SIG_IGN` installs no handler code; it only changes how the kernel
    // treats one signal for this process.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}
