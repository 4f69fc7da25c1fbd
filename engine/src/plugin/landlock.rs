//! Landlock for a plugin worker: once the worker is confined, it can open only the granted
//! roots (and what loading a library needs), signal only the processes it started, and reach
//! no abstract Unix socket made outside, whatever the plugin tries. Linux 5.13 or newer for
//! files, 6.12 (ABI 6) for signals and abstract sockets; on a kernel without Landlock the
//! worker runs without it and says so on stderr, and on one older than 6.12 it says that its
//! namespaces alone keep it from signalling other processes.
//!
//! Through the `landlock` crate, in its best-effort mode: every file right the running kernel
//! knows is handled (up to ABI 5's `IOCTL_DEV`), and a right it does not know is left out
//! rather than failing.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, BitFlags, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use toolgate_plugin_api::worker::Confine;

/// The newest ABI whose file rights are asked for; older kernels get what they have.
const FS_ABI: ABI = ABI::V5;

/// Read anywhere under these, so the dynamic loader and the Rust runtime work (and, with a
/// `subprocess` grant, programs run): the system's libraries and programs, the loader's cache,
/// the worker's own `/proc/self` (the runtime reads its own maps; no other process's), and
/// the harmless devices. Not the rest of `/dev`: disks, the kernel log, `/dev/shm` (other
/// processes' shared memory).
const SYSTEM_READ: [&str; 13] = [
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/proc/self",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/sys/devices/system/cpu",
];

/// Written too: where a program's output goes when nobody wants it.
const SYSTEM_WRITE: [&str; 1] = ["/dev/null"];

/// Read too, with a `net` grant: what resolving a host name reads.
const NET_READ: [&str; 5] = [
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
];

/// What reading needs: files, directories, and mapping or running a program.
fn read() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute
}

/// Confines this process to `confine`'s roots, plus the library and [`SYSTEM_READ`], and
/// scopes its signals and abstract Unix sockets to its own domain. Returns `Ok` without
/// confining on a kernel that has no Landlock (after a warning on stderr).
pub(crate) fn confine(library: &Path, confine: &Confine) -> Result<(), String> {
    let all = AccessFs::from_all(FS_ABI);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(|e| format!("landlock: {e}"))?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(|e| format!("landlock: {e}"))?
        .create()
        .map_err(|e| format!("landlock_create_ruleset: {e}"))?;
    // A pinned library loads from its sealed copy (`/proc/self/fd/N`): an in-memory file
    // that Landlock neither takes a rule on nor restricts.
    if !library.starts_with("/proc/self/fd") {
        ruleset = add(ruleset, library, read(), true)?;
    }
    for root in SYSTEM_READ {
        ruleset = add(ruleset, Path::new(root), read(), false)?;
    }
    for file in SYSTEM_WRITE {
        let write = read() | AccessFs::WriteFile;
        ruleset = add(ruleset, Path::new(file), write, false)?;
    }
    if confine.net {
        for file in NET_READ {
            ruleset = add(ruleset, Path::new(file), read(), false)?;
        }
    }
    for root in &confine.fs_read {
        ruleset = add(ruleset, root, read(), true)?;
    }
    for root in &confine.fs_write {
        ruleset = add(ruleset, root, all, true)?;
    }
    let status = ruleset
        .restrict_self()
        .map_err(|e| format!("landlock_restrict_self: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        eprintln!(
            "toolgate plugin-host: this kernel has no Landlock; the plugin's file grants are not enforced"
        );
    } else if let LandlockStatus::Available { effective_abi, .. } = status.landlock
        && effective_abi < ABI::V6
    {
        eprintln!(
            "toolgate plugin-host: this kernel's Landlock cannot scope signals and abstract \
             sockets (Linux 6.12); the worker's namespaces and seccomp filter stand in"
        );
    }
    Ok(())
}

/// Allows `access` beneath `path`. A missing path is an error when `required` (a granted root
/// that does not exist), and skipped otherwise (a system directory this system lacks).
fn add(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    required: bool,
) -> Result<landlock::RulesetCreated, String> {
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        Err(err) if required => return Err(format!("cannot open {}: {err}", path.display())),
        Err(_) => return Ok(ruleset),
    };
    // A rule on a file may carry only file rights.
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(FS_ABI)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("landlock_add_rule {}: {e}", path.display()))
}
