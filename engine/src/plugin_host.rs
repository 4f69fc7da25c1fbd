//! The worker side of `isolation: process`: what `toolgate plugin-host` runs.
//!
//! The engine starts its program (by default the running one, see
//! [`EngineBuilder::plugin_host`](crate::EngineBuilder::plugin_host)) as `PROGRAM plugin-host`
//! for each plugin the policy isolates. The worker reads frames from stdin, loads the library
//! named in the first one, and answers on stdout (`toolgate_plugin_api::worker` describes the
//! protocol). A program of your own that embeds the engine and wants to be its own plugin host
//! calls [`serve_stdio`] when started with `plugin-host`, first thing, before it starts any
//! thread: on Linux the worker is three processes of the program (docs/plugins.md, "The
//! worker's sandbox"), which `serve_stdio` tells apart and of which only the last serves.

pub use toolgate_plugin_api::worker::{FrameError, ServeError};

/// Serves one plugin over this process's stdin and stdout until stdin ends.
///
/// # Errors
///
/// When the pipe breaks or the host speaks out of protocol. A library that does not load is
/// not an error here: the host is told, and this returns `Ok`.
pub fn serve_stdio() -> Result<(), ServeError> {
    // The first two of a sandboxed worker's processes wait here for the third, which serves.
    #[cfg(target_os = "linux")]
    crate::plugin::sandbox::split();
    let stdin = std::io::stdin();
    let frames = protocol_output().map_err(|e| ServeError::Frame(FrameError::Io(e)))?;
    // SAFETY: the engine that started this worker names a library from its policy, which it
    // would otherwise load into its own process: the same promise as `LoadedPlugin::load`.
    // On a pipe: the worker watches it briefly between back-to-back calls.
    unsafe { toolgate_plugin_api::worker::serve_pipe_confined(stdin, frames, confine) }
}

/// The platform's confinement of a worker to its grants: Landlock (files, signals, abstract
/// Unix sockets), then a seccomp filter (sockets, processes), on Linux.
#[cfg(target_os = "linux")]
fn confine(
    library: &std::path::Path,
    roots: &toolgate_plugin_api::worker::Confine,
) -> Result<(), String> {
    crate::plugin::landlock::confine(library, roots)?;
    crate::plugin::seccomp::confine(crate::plugin::seccomp::Allow {
        net: roots.net,
        subprocess: roots.subprocess,
    })
}

#[cfg(not(target_os = "linux"))]
fn confine(
    _library: &std::path::Path,
    _roots: &toolgate_plugin_api::worker::Confine,
) -> Result<(), String> {
    eprintln!("toolgate plugin-host: grants are not enforced on this platform");
    Ok(())
}

/// The frames' own copy of stdout; stdout itself (fd 1) then points at stderr, so that a plugin
/// that prints cannot break a frame.
fn protocol_output() -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: dup and dup2 on the standard descriptors, which are open; the new descriptor is
    // owned by the returned file alone.
    unsafe {
        let frames = libc::dup(libc::STDOUT_FILENO);
        if frames < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(std::fs::File::from_raw_fd(frames))
    }
}
