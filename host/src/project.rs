//! The project root, opened once when the host starts and used through that
//! handle from then on.
//!
//! Why: everything the host grants is "the project", and sandboxed commands
//! (of this session, another one on an enclosing project, an iota child's
//! parent) can rename directories inside what they may write and put a link
//! in their place. A root reopened by its path at every call follows such a
//! swap: the child of an iota line checked its `--root` once, then its
//! sandbox bound and its writes resolved whatever the path had become
//! (`.git`, a directory outside the project). So the root is pinned: an
//! `O_PATH` descriptor of the directory, reached as `/proc/self/fd/N` by
//! every open (wasmtime's preopens, the bulk reads, the write capability,
//! the repository walk) and handed to bubblewrap as an inherited descriptor
//! to bind. The path is kept for what is shown (messages, the components'
//! absolute paths, the sandbox's mount point), never to reach the directory.

//!
//! On Windows the root is a directory handle held without sharing delete
//! access: nobody can rename or remove it while the host runs, so its path
//! stays the way to it (`platform::windows::HeldDir`).

#[cfg(unix)]
use rustix::fs::{Mode, OFlags};
#[cfg(unix)]
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// The project root, pinned.
#[derive(Debug)]
pub struct ProjectRoot {
    path: PathBuf,
    #[cfg(unix)]
    dir: OwnedFd,
    #[cfg(windows)]
    _held: crate::platform::windows::HeldDir,
}

impl ProjectRoot {
    /// Opens `path` (absolute and canonical: no link on it) and holds it.
    pub fn open(path: &Path) -> std::io::Result<ProjectRoot> {
        #[cfg(unix)]
        let pinned = {
            let flags = crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            rustix::fs::open(path, flags, Mode::empty())?
        };
        #[cfg(windows)]
        let pinned = crate::platform::windows::HeldDir::open(path)?;
        Ok(ProjectRoot {
            path: path.to_path_buf(),
            #[cfg(unix)]
            dir: pinned,
            #[cfg(windows)]
            _held: pinned,
        })
    }

    /// The path it had when it was opened: what is shown, and where the
    /// sandbox mounts it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path that reaches the pinned directory itself, whatever its path
    /// has become: `/proc/self/fd/N`. Where /proc is not mounted, its path.
    pub fn handle(&self) -> PathBuf {
        #[cfg(unix)]
        return fd_path(self.dir.as_raw_fd()).unwrap_or_else(|| self.path.clone());
        #[cfg(windows)]
        self.path.clone()
    }

    /// The pinned directory's descriptor (`O_PATH`).
    #[cfg(unix)]
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// A new descriptor of the pinned directory, for a child to inherit
    /// (close-on-exec cleared by the spawn that hands it over).
    #[cfg(unix)]
    pub fn duplicate(&self) -> std::io::Result<OwnedFd> {
        Ok(rustix::io::fcntl_dupfd_cloexec(&self.dir, 3)?)
    }

    /// Opens `rel` below the pinned root without following a link on the
    /// way (each component opened `O_NOFOLLOW`, `..` and absolute paths
    /// refused), with `flags` for the last: what a sandboxed command swapped
    /// for a link is not reached through it.
    #[cfg(unix)]
    pub fn open_beneath(&self, rel: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
        use std::path::Component;
        let names: Vec<&std::ffi::OsStr> = rel
            .components()
            .map(|c| match c {
                Component::Normal(name) => Ok(name),
                _ => Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
            })
            .collect::<Result<_, _>>()?;
        let Some((last, parents)) = names.split_last() else {
            return self.duplicate();
        };
        let mut dir = self.duplicate()?;
        for name in parents {
            dir = rustix::fs::openat(
                &dir,
                *name,
                crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
        }
        Ok(rustix::fs::openat(
            &dir,
            *last,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    /// Where the pinned directory is now, by the kernel's account.
    pub fn current_path(&self) -> Option<PathBuf> {
        #[cfg(unix)]
        return std::fs::read_link(fd_path(self.dir.as_raw_fd())?).ok();
        #[cfg(windows)]
        Some(self.path.clone())
    }
}

/// `given` relative to `root`, `.` and `..` folded by the text: `None` when
/// it climbs above the root or is absolute elsewhere.
pub fn fold_beneath(root: &Path, given: &Path) -> Option<PathBuf> {
    let relative = if given.is_absolute() {
        given.strip_prefix(root).ok()?
    } else {
        given
    };
    let mut folded = PathBuf::new();
    for part in relative.components() {
        match part {
            Component::Normal(name) => folded.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !folded.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(folded)
}

/// `/proc/self/fd/N`, where this process's descriptors are reachable so.
#[cfg(unix)]
pub fn fd_path(fd: i32) -> Option<PathBuf> {
    static MOUNTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    MOUNTED
        .get_or_init(|| Path::new("/proc/self/fd").is_dir())
        .then(|| PathBuf::from(format!("/proc/self/fd/{fd}")))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_root_is_the_directory_it_was_whatever_its_path_becomes() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("sub")).unwrap();
        std::fs::write(base.join("sub/mine"), "here").unwrap();
        let root = ProjectRoot::open(&base.join("sub")).unwrap();
        std::fs::rename(base.join("sub"), base.join("moved")).unwrap();
        std::fs::create_dir(base.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("elsewhere", base.join("sub")).unwrap();
        assert_eq!(std::fs::read(root.handle().join("mine")).unwrap(), b"here");
        assert_eq!(root.current_path(), Some(base.join("moved")));
        assert_eq!(root.path(), base.join("sub"));
    }

    #[test]
    fn what_is_opened_beneath_the_root_is_never_reached_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("root/a/b")).unwrap();
        std::fs::create_dir_all(base.join("outside/b")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("root/link")).unwrap();
        let root = ProjectRoot::open(&base.join("root")).unwrap();
        let flags = crate::platform::O_PATH | OFlags::DIRECTORY;
        assert!(root.open_beneath(Path::new("a/b"), flags).is_ok());
        assert!(
            root.open_beneath(Path::new("link/b"), flags).is_err(),
            "a link on the way"
        );
        assert!(
            root.open_beneath(Path::new("link"), flags).is_err(),
            "a link at the end"
        );
        assert!(root.open_beneath(Path::new("a/../a"), flags).is_err());
        assert!(root.open_beneath(Path::new("/etc"), flags).is_err());
    }
}
