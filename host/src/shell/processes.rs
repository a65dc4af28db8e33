//! A bound on how many processes (and threads) one sandboxed command may
//! have at once, so that a fork bomb is contained.
//!
//! The bound is a cgroup of its own with `pids.max` (cgroup v2, or v1's
//! `pids` hierarchy) that the command joins before it executes, so nothing it
//! starts escapes the count. Where the host cannot make one (an unprivileged
//! user without a delegated cgroup), `RLIMIT_NPROC` does the job: for a user
//! other than root the kernel counts every task of that user, so the limit is
//! set to the user's current count plus the bound. Root is exempt from
//! `RLIMIT_NPROC` even inside a user namespace (the sandbox's uid maps to it),
//! which is why the cgroup comes first.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// How one command's processes are bounded: a cgroup (removed on drop) or an
/// rlimit for the child.
#[derive(Debug)]
pub enum Bound {
    /// A cgroup with `pids.max`; the child writes itself into `procs`.
    Cgroup {
        /// The cgroup's directory.
        dir: PathBuf,
        /// Its `cgroup.procs`, opened for the child to join.
        procs: Option<OwnedFd>,
    },
    /// `RLIMIT_NPROC` for the child.
    Rlimit(u64),
    /// Neither could be set up.
    None,
}

impl Bound {
    /// A bound of `max` tasks for one command.
    pub fn new(max: u64) -> Bound {
        if let Some(bound) = cgroup(max) {
            return bound;
        }
        if nix::unistd::geteuid().is_root() {
            return Bound::None;
        }
        Bound::Rlimit(user_tasks().saturating_add(max))
    }

    /// The `cgroup.procs` descriptor the child writes itself into.
    pub fn take_procs(&mut self) -> Option<OwnedFd> {
        match self {
            Bound::Cgroup { procs, .. } => procs.take(),
            _ => None,
        }
    }

    /// The `RLIMIT_NPROC` the child sets.
    pub fn rlimit(&self) -> Option<u64> {
        match self {
            Bound::Rlimit(max) => Some(*max),
            _ => None,
        }
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if let Bound::Cgroup { dir, .. } = self {
            // Killed processes leave the cgroup moments after the kill.
            for _ in 0..50 {
                if std::fs::remove_dir(&*dir).is_ok() || !dir.exists() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// A fresh cgroup under this process's own, in the hierarchy that has the
/// `pids` controller.
fn cgroup(max: u64) -> Option<Bound> {
    let parent = pids_cgroup_dir()?;
    let dir = parent.join(format!("iota-{}", crate::secret::token()));
    std::fs::create_dir(&dir).ok()?;
    // Dropping it removes the directory again if a step below fails.
    let mut bound = Bound::Cgroup {
        dir: dir.clone(),
        procs: None,
    };
    std::fs::write(dir.join("pids.max"), max.to_string()).ok()?;
    let opened = File::options().write(true).open(dir.join("cgroup.procs")).ok()?;
    if let Bound::Cgroup { procs, .. } = &mut bound {
        *procs = Some(opened.into());
    }
    Some(bound)
}

/// This process's cgroup directory in the hierarchy with `pids`: v1's
/// `pids` line, else v2's unified line when `pids` is among its controllers.
fn pids_cgroup_dir() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let relative = |path: &str| PathBuf::from(path.trim_start_matches('/'));
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        if controllers.split(',').any(|c| c == "pids") {
            let dir = Path::new("/sys/fs/cgroup/pids").join(relative(path));
            if dir.join("cgroup.procs").exists() {
                return Some(dir);
            }
        }
    }
    let unified = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new("/sys/fs/cgroup").join(relative(unified));
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    enabled.split_whitespace().any(|c| c == "pids").then_some(dir)
}

/// How many tasks (processes and threads) this process's user has now.
fn user_tasks() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::getuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == me))
        .map(|e| std::fs::read_dir(e.path().join("task")).map_or(1, |tasks| tasks.count() as u64))
        .sum()
}
