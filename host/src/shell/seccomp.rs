//! The seccomp filter every sandboxed command runs under, handed to bubblewrap
//! as BPF programs on inherited descriptors (`--add-seccomp-fd`).
//!
//! Namespaces and dropped capabilities already refuse most of what is listed
//! here; the filter is the second wall, so that one kernel bug in a namespaced
//! feature (io_uring, user namespaces inside the sandbox, bpf) is not enough,
//! and so that a command cannot reach what namespaces do not cover (another
//! process's memory, the terminal's input queue, the kernel keyring).
//! Programs are compiled by `seccompiler` (rust-vmm), once per process.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use nix::libc;

/// Every system call refused with `EPERM`, and why (one line each).
fn refused(network: bool) -> BTreeMap<i64, Vec<SeccompRule>> {
    let always = |nr: libc::c_long| (nr, Vec::new());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::from([
        // Reading or steering another process (the host's, through a shared user).
        always(libc::SYS_ptrace),
        always(libc::SYS_process_vm_readv),
        always(libc::SYS_process_vm_writev),
        // io_uring: a second system-call interface this filter would not see.
        always(libc::SYS_io_uring_setup),
        always(libc::SYS_io_uring_enter),
        always(libc::SYS_io_uring_register),
        // eBPF and perf: kernel attack surface, and tracing of other processes.
        always(libc::SYS_bpf),
        always(libc::SYS_perf_event_open),
        // The kernel keyring holds the user's credentials (kerberos, ecryptfs).
        always(libc::SYS_keyctl),
        always(libc::SYS_add_key),
        always(libc::SYS_request_key),
        // Mounts: the sandbox's file view is fixed by bwrap; none may change it.
        always(libc::SYS_mount),
        always(libc::SYS_umount2),
        always(libc::SYS_pivot_root),
        always(libc::SYS_move_mount),
        always(libc::SYS_open_tree),
        always(libc::SYS_fsopen),
        always(libc::SYS_fsconfig),
        always(libc::SYS_fsmount),
        always(libc::SYS_fspick),
        always(libc::SYS_mount_setattr),
        // New namespaces would give back every capability bwrap dropped.
        always(libc::SYS_unshare),
        always(libc::SYS_setns),
        // Replacing the kernel or loading code into it.
        always(libc::SYS_kexec_load),
        always(libc::SYS_kexec_file_load),
        always(libc::SYS_init_module),
        always(libc::SYS_finit_module),
        always(libc::SYS_delete_module),
        // Opens any file on a mounted filesystem by handle, past the mount view.
        always(libc::SYS_open_by_handle_at),
        // Stalls kernel threads on page faults: the base of many kernel exploits.
        always(libc::SYS_userfaultfd),
    ]);
    let arg = |index: u8, len: Len, op: Op, value: u64| {
        SeccompCondition::new(index, len, op, value).expect("a valid seccomp condition")
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).expect("a valid seccomp rule");
    // TIOCSTI pushes input into the terminal (commands typed for the user when
    // the sandbox ends); TIOCLINUX can do the same on a virtual console. The
    // request is compared as 32 bits, as the kernel reads it, so high bits
    // cannot dodge the rule.
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![arg(1, Len::Dword, Op::Eq, libc::TIOCSTI)]),
            rule(vec![arg(1, Len::Dword, Op::Eq, libc::TIOCLINUX)]),
        ],
    );
    // clone with a namespace flag is unshare by another name.
    let namespaces = [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        0x80, // CLONE_NEWTIME
    ];
    rules.insert(
        libc::SYS_clone,
        namespaces
            .iter()
            .map(|&flag| rule(vec![arg(0, Len::Qword, Op::MaskedEq(flag as u64), flag as u64)]))
            .collect(),
    );
    if !network {
        // Without the network only local sockets exist: no AF_INET, AF_INET6,
        // AF_NETLINK, AF_PACKET, AF_VSOCK, …
        rules.insert(
            libc::SYS_socket,
            vec![rule(vec![arg(0, Len::Dword, Op::Ne, libc::AF_UNIX as u64)])],
        );
    }
    rules
}

/// System calls answered `ENOSYS`, so that the C library falls back to an
/// older call the first filter can inspect.
fn missing() -> BTreeMap<i64, Vec<SeccompRule>> {
    // clone3 passes its flags in memory, out of a filter's reach; glibc
    // retries with clone when clone3 is missing.
    BTreeMap::from([(libc::SYS_clone3, Vec::new())])
}

#[cfg(target_arch = "x86_64")]
const ARCH: Option<TargetArch> = Some(TargetArch::x86_64);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<TargetArch> = Some(TargetArch::aarch64);
#[cfg(target_arch = "riscv64")]
const ARCH: Option<TargetArch> = Some(TargetArch::riscv64);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
const ARCH: Option<TargetArch> = None;

/// The programs, in the order bwrap loads them. (Any other architecture's
/// system calls, such as 32-bit x86 on x86_64, kill the process: seccompiler
/// checks the architecture first.)
fn programs(network: bool) -> Result<Vec<BpfProgram>, String> {
    let arch = ARCH.ok_or("no seccomp filter for this architecture")?;
    let compile = |rules, action| -> Result<BpfProgram, String> {
        SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
            .and_then(BpfProgram::try_from)
            .map_err(|e| format!("seccomp filter: {e}"))
    };
    let mut programs = vec![
        compile(refused(network), SeccompAction::Errno(libc::EPERM as u32))?,
        compile(missing(), SeccompAction::Errno(libc::ENOSYS as u32))?,
    ];
    if cfg!(target_arch = "x86_64") {
        programs.push(no_x32());
    }
    Ok(programs)
}

/// x32 system calls share x86_64's architecture value but set bit 30 of the
/// number, so none of the rules above would match them: refuse them all.
/// Four instructions, written out because seccompiler keys rules by exact
/// number.
fn no_x32() -> BpfProgram {
    use seccompiler::sock_filter;
    const LOAD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, offset 0 = seccomp_data.nr
    const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LOAD_NR, 0, 0, 0),
        op(JGE, 0, 1, 0x4000_0000),
        op(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// The programs as bytes, compiled once per process for each network setting.
fn encoded(network: bool) -> &'static Result<Vec<Vec<u8>>, String> {
    static CACHE: [OnceLock<Result<Vec<Vec<u8>>, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    CACHE[usize::from(network)].get_or_init(|| {
        Ok(programs(network)?
            .iter()
            .map(|program| {
                program
                    .iter()
                    .flat_map(|i| {
                        let mut bytes = Vec::with_capacity(8);
                        bytes.extend(i.code.to_ne_bytes());
                        bytes.push(i.jt);
                        bytes.push(i.jf);
                        bytes.extend(i.k.to_ne_bytes());
                        bytes
                    })
                    .collect()
            })
            .collect())
    })
}

/// One readable descriptor per program, each holding the whole program (a
/// pipe: the programs are a few hundred bytes, far below a pipe's buffer).
pub fn filter_fds(network: bool) -> std::io::Result<Vec<OwnedFd>> {
    let programs = encoded(network)
        .as_ref()
        .map_err(|e| std::io::Error::other(e.clone()))?;
    programs
        .iter()
        .map(|bytes| {
            let (reader, mut writer) = std::io::pipe()?;
            writer.write_all(bytes)?;
            Ok(OwnedFd::from(reader))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_compile_for_both_network_settings() {
        for network in [false, true] {
            let programs = encoded(network).as_ref().expect("compiles");
            assert!(programs.len() >= 2);
            assert!(programs.iter().all(|p| !p.is_empty() && p.len() % 8 == 0));
        }
        // The socket rule exists only without the network.
        assert!(encoded(false).as_ref().unwrap()[0].len() > encoded(true).as_ref().unwrap()[0].len());
    }
}
