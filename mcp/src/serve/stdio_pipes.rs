//! stdin and stdout, read and written by the runtime's event loop when they are pipes.
//!
//! tokio's `stdin()` and `stdout()` work on anything (a terminal, a file) because each read and
//! each write runs as a task on the blocking thread pool: for every request that is one thread
//! hand-off to read it and another to write its answer, on top of the work. An MCP client starts
//! `serve` with pipes, and a pipe can be watched by the event loop like a socket: [`Input`] and
//! [`Output`] do that (the pipes are made non-blocking), and fall back to tokio's versions for
//! anything else. stdout stays with tokio's version when it is the same pipe as stderr
//! (`2>&1`): a non-blocking stdout would make the log's writes to stderr fail when the pipe is
//! full.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// The process's stdin.
pub(crate) enum Input {
    Pipe(pipe::Receiver),
    Other(tokio::io::Stdin),
}

/// The process's stdout.
pub(crate) enum Output {
    Pipe(pipe::Sender),
    Other(tokio::io::Stdout),
}

impl Input {
    /// stdin; must be called within the runtime.
    pub(crate) fn stdin() -> Input {
        let stdin = io::stdin();
        match owned_pipe(stdin.as_fd())
            .and_then(|fd| fd.map(pipe::Receiver::from_owned_fd).transpose())
        {
            Ok(Some(receiver)) => Input::Pipe(receiver),
            Ok(None) => Input::Other(tokio::io::stdin()),
            Err(e) => {
                tracing::debug!(error = %e, "stdin is read through a thread");
                Input::Other(tokio::io::stdin())
            }
        }
    }

    /// Whether it is read by the event loop.
    pub(crate) fn is_pipe(&self) -> bool {
        matches!(self, Input::Pipe(_))
    }
}

impl Output {
    /// stdout; must be called within the runtime.
    pub(crate) fn stdout() -> Output {
        let stdout = io::stdout();
        if same_file(stdout.as_fd(), io::stderr().as_fd()) {
            return Output::Other(tokio::io::stdout());
        }
        match owned_pipe(stdout.as_fd())
            .and_then(|fd| fd.map(pipe::Sender::from_owned_fd).transpose())
        {
            Ok(Some(sender)) => Output::Pipe(sender),
            Ok(None) => Output::Other(tokio::io::stdout()),
            Err(e) => {
                tracing::debug!(error = %e, "stdout is written through a thread");
                Output::Other(tokio::io::stdout())
            }
        }
    }
}

/// A copy of `fd` when it is a pipe.
fn owned_pipe(fd: BorrowedFd<'_>) -> io::Result<Option<std::os::fd::OwnedFd>> {
    let stat = fstat(fd)?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return Ok(None);
    }
    fd.try_clone_to_owned().map(Some)
}

/// Whether `a` and `b` are the same file (the same pipe, say).
fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (fstat(a), fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => true,
    }
}

fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is an open descriptor for the borrow, and `stat` points to writable memory
    // the size of a `struct stat`, which fstat(2) fills when it answers 0.
    let answer = unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) };
    if answer != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat answered 0, so it filled the whole struct.
    Ok(unsafe { stat.assume_init() })
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Input::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Input::Other(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Output::Other(stdout) => Pin::new(stdout).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Output::Other(stdout) => Pin::new(stdout).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            Output::Other(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_write_vectored(cx, bufs),
            Output::Other(stdout) => Pin::new(stdout).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Output::Pipe(pipe) => pipe.is_write_vectored(),
            Output::Other(stdout) => stdout.is_write_vectored(),
        }
    }
}
