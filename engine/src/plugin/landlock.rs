//! Landlock for a plugin worker: once the worker is confined, it can open only the granted
//! roots (and what loading a library needs), whatever the plugin tries. Linux 5.13 or newer;
//! on a kernel without Landlock the worker runs unconfined and says so on stderr.
//!
//! Raw system calls through `libc`, as the kernel's `landlock.h` defines them; only file access
//! is handled (network rules need ABI 4 and are not used).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use toolgate_plugin_api::worker::Confine;

const ACCESS_FS_EXECUTE: u64 = 1 << 0;
const ACCESS_FS_WRITE_FILE: u64 = 1 << 1;
const ACCESS_FS_READ_FILE: u64 = 1 << 2;
const ACCESS_FS_READ_DIR: u64 = 1 << 3;
/// ABI 1: every right from EXECUTE (bit 0) to MAKE_SYM (bit 12).
const ACCESS_FS_V1: u64 = (1 << 13) - 1;
const ACCESS_FS_REFER: u64 = 1 << 13;
const ACCESS_FS_TRUNCATE: u64 = 1 << 14;
const ACCESS_FS_IOCTL_DEV: u64 = 1 << 15;

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

/// What reading needs: files, directories, and mapping or running a program.
const READ: u64 = ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR | ACCESS_FS_EXECUTE;

/// Read anywhere under these, so the dynamic loader and the Rust runtime work: the system's
/// libraries, the loader's cache, `/proc` (the runtime reads its own maps) and `/dev`
/// (`/dev/null`, `/dev/urandom`).
const SYSTEM_READ: [&str; 7] = [
    "/usr",
    "/lib",
    "/lib64",
    "/etc/ld.so.cache",
    "/proc",
    "/dev",
    "/sys/devices/system/cpu",
];

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Confines this process to `confine`'s roots, plus the library and [`SYSTEM_READ`]. Returns
/// `Ok` without confining on a kernel that has no Landlock (after a warning on stderr).
pub(crate) fn confine(library: &Path, confine: &Confine) -> Result<(), String> {
    // SAFETY: the version query takes no pointer.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if abi < 1 {
        eprintln!(
            "toolgate plugin-host: this kernel has no Landlock; the plugin's file grants are not enforced"
        );
        return Ok(());
    }
    let mut handled = ACCESS_FS_V1;
    if abi >= 2 {
        handled |= ACCESS_FS_REFER;
    }
    if abi >= 3 {
        handled |= ACCESS_FS_TRUNCATE;
    }
    if abi >= 5 {
        handled |= ACCESS_FS_IOCTL_DEV;
    }
    let attr = RulesetAttr {
        handled_access_fs: handled,
    };
    // SAFETY: `attr` is valid for its size during the call.
    let ruleset = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    let ruleset = libc::c_int::try_from(ruleset)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| {
            format!(
                "landlock_create_ruleset: {}",
                std::io::Error::last_os_error()
            )
        })?;
    let result = (|| {
        // Every right this kernel handles.
        let write = handled;
        // A pinned library loads from its sealed copy (`/proc/self/fd/N`): an in-memory file
        // that Landlock neither takes a rule on nor restricts.
        if !library.starts_with("/proc/self/fd") {
            add(ruleset, library, READ & handled, true)?;
        }
        for root in SYSTEM_READ {
            add(ruleset, Path::new(root), READ & handled, false)?;
        }
        for root in &confine.fs_read {
            add(ruleset, root, READ & handled, true)?;
        }
        for root in &confine.fs_write {
            add(ruleset, root, write & handled, true)?;
        }
        // SAFETY: plain system call on our own ruleset fd.
        let restricted = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
        if restricted != 0 {
            return Err(format!(
                "landlock_restrict_self: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    })();
    // SAFETY: closing the fd we created.
    unsafe { libc::close(ruleset) };
    result
}

/// Allows `access` beneath `path`. A missing path is an error when `required` (a granted root
/// that does not exist), and skipped otherwise (a system directory this system lacks).
fn add(ruleset: libc::c_int, path: &Path, access: u64, required: bool) -> Result<(), String> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{} has a NUL byte", path.display()))?;
    // SAFETY: a valid C string; O_PATH opens without reading.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return if required {
            Err(format!("cannot open {}: {err}", path.display()))
        } else {
            Ok(())
        };
    }
    // A rule on a file may carry only file rights.
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let access = if is_dir {
        access
    } else {
        access
            & (ACCESS_FS_EXECUTE
                | ACCESS_FS_WRITE_FILE
                | ACCESS_FS_READ_FILE
                | ACCESS_FS_TRUNCATE
                | ACCESS_FS_IOCTL_DEV)
    };
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
    };
    // SAFETY: `attr` is valid during the call; `fd` is ours.
    let added = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            RULE_PATH_BENEATH,
            &raw const attr,
            0u32,
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: closing the fd we opened.
    unsafe { libc::close(fd) };
    if added != 0 {
        return Err(format!("landlock_add_rule {}: {err}", path.display()));
    }
    Ok(())
}
