//! A seccomp filter for a plugin worker: the system calls its grants do not cover fail with
//! `EPERM`, before the library is loaded. Installed by the worker itself (`plugin-host`), on
//! its one thread, with `no_new_privs`; every thread and process it starts inherits it.
//!
//! | what | refused |
//! |---|---|
//! | sockets, no `net` grant | `socket` and `socketpair` of every family (Unix sockets included) |
//! | sockets, `net` grant | `socket` of any family but `AF_INET` and `AF_INET6` (no Unix, netlink, packet sockets) |
//! | processes, no `subprocess` grant | `fork`, `vfork`, `clone` without `CLONE_THREAD` (threads still start), `execve`, `execveat`; `clone3` answers `ENOSYS`, so that the C library falls back to `clone`, whose flags a filter can see |
//! | always | `ptrace`, `process_vm_readv`/`writev`, `io_uring_*` (whose operations a filter cannot see), namespaces and mounts (`unshare`, `setns`, `mount` and the new mount API, `pivot_root`), `bpf`, `perf_event_open`, `userfaultfd`, the kernel keyring; on x86_64 every x32 call (`ENOSYS`), and every i386 call kills the process |
//!
//! Through the `seccompiler` crate (rust-vmm), which compiles the rules to BPF for x86_64,
//! aarch64 and riscv64; on another architecture the worker says so on stderr and runs without
//! a filter, as it does on a kernel without seccomp.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// What the filter allows beyond the always-allowed: the worker's grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allow {
    /// A `net` grant: Internet sockets.
    pub net: bool,
    /// A `subprocess` grant: new processes and `exec`.
    pub subprocess: bool,
}

/// System calls no worker makes.
fn always_refused() -> Vec<libc::c_long> {
    vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ]
}

/// The filters for `allow`, in the order they are installed: the `EPERM` one, and, without a
/// `subprocess` grant, the one that answers `clone3` with `ENOSYS`.
pub(crate) fn filters(allow: Allow) -> Result<Vec<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = always_refused()
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    let arg0 = |op, value| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
    };
    let rule = |conditions| SeccompRule::new(conditions).map_err(|e| e.to_string());
    if allow.net {
        // Any family but the Internet ones.
        let other = rule(vec![
            arg0(SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            arg0(SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
        ])?;
        rules.insert(libc::SYS_socket, vec![other]);
    } else {
        rules.insert(libc::SYS_socket, Vec::new());
        rules.insert(libc::SYS_socketpair, Vec::new());
    }
    let mut programs = Vec::new();
    if !allow.subprocess {
        let process = rule(vec![arg0(
            SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
            0,
        )?])?;
        rules.insert(libc::SYS_clone, vec![process]);
        #[cfg(target_arch = "x86_64")]
        {
            rules.insert(libc::SYS_fork, Vec::new());
            rules.insert(libc::SYS_vfork, Vec::new());
        }
        rules.insert(libc::SYS_execve, Vec::new());
        rules.insert(libc::SYS_execveat, Vec::new());
    }
    programs.push(compile(rules, libc::EPERM, arch)?);
    if !allow.subprocess {
        let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
        programs.push(compile(clone3, libc::ENOSYS, arch)?);
    }
    #[cfg(target_arch = "x86_64")]
    programs.push(no_x32());
    Ok(programs)
}

/// x86_64's x32 system calls (numbers with `__X32_SYSCALL_BIT`) reach the same kernel code
/// under other numbers, which the rules above do not name: all of them answer `ENOSYS`, as on
/// a kernel built without x32. (The i386 ones, another architecture, kill the process: the
/// filters above check the architecture first.) By hand: `seccompiler` matches single numbers.
#[cfg(target_arch = "x86_64")]
fn no_x32() -> BpfProgram {
    use seccompiler::sock_filter;
    const LOAD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        // seccomp_data.arch
        op(LOAD, 0, 0, 4),
        op(JEQ, 0, 3, AUDIT_ARCH_X86_64),
        // seccomp_data.nr
        op(LOAD, 0, 0, 0),
        op(JGE, 0, 1, X32_SYSCALL_BIT),
        op(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: TargetArch,
) -> Result<BpfProgram, String> {
    let errno = u32::try_from(errno).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// Installs the filters for `allow` on this thread (and so on every thread and process it
/// starts from now on). Returns `Ok` without a filter where the system cannot have one (after
/// a warning on stderr).
pub(crate) fn confine(allow: Allow) -> Result<(), String> {
    let programs = match filters(allow) {
        Ok(programs) => programs,
        Err(why) => {
            eprintln!(
                "toolgate plugin-host: no seccomp filter for this architecture ({why}): the \
                 plugin's sockets and processes are not restricted beyond its namespaces"
            );
            return Ok(());
        }
    };
    for program in &programs {
        if let Err(err) = seccompiler::apply_filter(program) {
            let unsupported = matches!(
                &err,
                seccompiler::Error::Seccomp(e) if e.raw_os_error() == Some(libc::EINVAL)
            );
            if unsupported {
                eprintln!(
                    "toolgate plugin-host: this kernel has no seccomp filters: the plugin's \
                     sockets and processes are not restricted beyond its namespaces"
                );
                return Ok(());
            }
            return Err(format!("seccomp: {err}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grant_combination_compiles_to_a_filter() {
        for net in [false, true] {
            for subprocess in [false, true] {
                let programs = filters(Allow { net, subprocess }).expect("compiles");
                let x32 = usize::from(cfg!(target_arch = "x86_64"));
                assert_eq!(programs.len(), if subprocess { 1 } else { 2 } + x32);
                assert!(programs.iter().all(|p| !p.is_empty()));
            }
        }
    }
}
