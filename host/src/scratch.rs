//! The host's own directories under the system temp directory: one per
//! session, `iota-<random>`, holding the session's private `/tmp` (what its
//! sandboxed commands see as `/tmp`) and its job logs. Removed when the
//! session ends, and, when the process that made one was killed before it
//! could (`kill -9`, an iota child stopped by its parent's timeout, the
//! machine's OOM killer), by the next host that looks.
//!
//! How a host knows a directory is abandoned: its maker holds an exclusive
//! `flock` on the `.owner` file in it for as long as it lives, and the
//! kernel lets go of the lock when the process dies, however it dies. A
//! directory whose `.owner` can be locked belongs to nobody alive. The
//! directory comes into place (a rename) only once its lock is held, so no
//! sweep sees one half made.

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The prefix of every scratch directory's name.
const PREFIX: &str = "iota-";

/// The file whose lock says the directory's maker lives.
const OWNER: &str = ".owner";

/// One session's scratch directory, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    base: PathBuf,
    /// Holds the lock; closed (released) after the directory is gone.
    _owner: File,
}

impl Scratch {
    /// A new scratch directory in the system temp directory (0700, a fresh
    /// unguessable name, never an existing directory), after sweeping the
    /// abandoned ones.
    pub fn create() -> std::io::Result<Scratch> {
        let temp = std::env::temp_dir();
        sweep_soon(&temp);
        let token = crate::secret::token();
        let staging = temp.join(format!(".{PREFIX}staging-{token}"));
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&staging)?;
        let made = (|| {
            let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let owner = rustix::fs::open(staging.join(OWNER), flags, Mode::from_raw_mode(0o600))?;
            rustix::fs::flock(&owner, FlockOperation::NonBlockingLockExclusive)?;
            let base = temp.join(format!("{PREFIX}{token}"));
            std::fs::rename(&staging, &base)?;
            Ok(Scratch {
                base,
                _owner: File::from(owner),
            })
        })();
        if made.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        made
    }

    /// The directory.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.base
    }

    /// Its subdirectory `name` (0700), made if missing.
    pub fn subdir(&self, name: &str) -> std::io::Result<PathBuf> {
        let dir = self.base.join(name);
        use std::os::unix::fs::DirBuilderExt;
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(dir),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_tree(&self.base);
    }
}

/// Removes `dir` and everything in it, even what a sandboxed command made
/// unwritable (`chmod 555` on a directory of its /tmp stops `rm -r` for
/// anyone but root): where the first try fails, every directory in it is
/// made the owner's to change again (opened without following a link) and
/// the removal tried once more. Whether it is gone.
pub fn remove_tree(dir: &Path) -> bool {
    if std::fs::remove_dir_all(dir).is_ok() {
        return true;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) {
        make_owner_writable(fd, 0);
    }
    std::fs::remove_dir_all(dir).is_ok()
}

/// `chmod 700` on the directory `fd` and every directory below it (to a
/// depth no path reaches).
fn make_owner_writable(fd: std::os::fd::OwnedFd, depth: usize) {
    if depth > 2048 || rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700)).is_err() {
        return;
    }
    let Ok(listing) = rustix::fs::Dir::read_from(&fd) else {
        return;
    };
    for entry in listing.flatten() {
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." || entry.file_type() != rustix::fs::FileType::Directory {
            continue;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Ok(sub) = rustix::fs::openat(&fd, name, flags, Mode::empty()) {
            make_owner_writable(sub, depth + 1);
        }
    }
}

/// How often one process sweeps at most.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Sweeps `temp` unless this process did in the last [`SWEEP_EVERY`].
pub fn sweep_soon(temp: &Path) {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < SWEEP_EVERY) {
            return;
        }
        *last = Some(Instant::now());
    }
    sweep(temp);
}

/// Removes every scratch directory in `temp` that is this user's and whose
/// maker is gone (its `.owner` can be locked). Nothing is followed: a link
/// named like one, or a directory of another user, is left alone.
pub fn sweep(temp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return 0;
    };
    let uid = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.as_encoded_bytes().starts_with(PREFIX.as_bytes()) {
            continue;
        }
        let path = entry.path();
        let Ok(st) = rustix::fs::statat(rustix::fs::CWD, &path, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory || st.st_uid != uid {
            continue;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let Ok(owner) = rustix::fs::open(path.join(OWNER), flags, Mode::empty()) else {
            continue;
        };
        if rustix::fs::flock(&owner, FlockOperation::NonBlockingLockExclusive).is_ok()
            && std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_swept_only_once_its_maker_is_gone() {
        let temp = tempfile::tempdir().unwrap();
        let temp = temp.path();
        // Alive: its lock held (here, by an open description of this test's).
        let alive = temp.join("iota-alive");
        std::fs::create_dir(&alive).unwrap();
        let held = File::create(alive.join(OWNER)).unwrap();
        rustix::fs::flock(&held, FlockOperation::LockExclusive).unwrap();
        // Gone: its lock free.
        let gone = temp.join("iota-gone");
        std::fs::create_dir_all(gone.join("tmp")).unwrap();
        std::fs::write(gone.join(OWNER), "").unwrap();
        std::fs::write(gone.join("tmp/big"), vec![0u8; 4096]).unwrap();
        // Not ours to judge: no owner file, a link, another name.
        let legacy = temp.join("iota-legacy");
        std::fs::create_dir(&legacy).unwrap();
        let target = temp.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join(OWNER), "").unwrap();
        std::os::unix::fs::symlink(&target, temp.join("iota-link")).unwrap();
        let other = temp.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(OWNER), "").unwrap();
        assert_eq!(sweep(temp), 1);
        assert!(!gone.exists());
        assert!(alive.exists() && legacy.exists() && target.join(OWNER).exists() && other.exists());
        drop(held);
        assert_eq!(sweep(temp), 1, "its maker gone now");
        assert!(!alive.exists());
    }

    #[test]
    fn what_was_made_unwritable_is_removed_all_the_same() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("iota-x");
        std::fs::create_dir_all(dir.join("tmp/keep/deeper")).unwrap();
        std::fs::write(dir.join("tmp/keep/deeper/blob"), "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        for d in ["tmp/keep/deeper", "tmp/keep"] {
            std::fs::set_permissions(dir.join(d), std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        // A link out of it is not followed: what it points at keeps its mode.
        let outside = temp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o555)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("tmp/link")).unwrap();
        // (Root removes it at the first try; what the second needs is
        // checked on its own, whoever runs the test.)
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        make_owner_writable(rustix::fs::open(&dir, flags, Mode::empty()).unwrap(), 0);
        for d in ["tmp/keep/deeper", "tmp/keep"] {
            assert_eq!(
                std::fs::metadata(dir.join(d)).unwrap().permissions().mode() & 0o777,
                0o700,
                "{d}"
            );
        }
        std::fs::set_permissions(dir.join("tmp/keep"), std::fs::Permissions::from_mode(0o555)).unwrap();
        assert!(remove_tree(&dir));
        assert!(!dir.exists());
        assert_eq!(std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777, 0o555);
    }

    #[test]
    fn a_scratch_directory_is_removed_when_dropped_and_not_swept_while_held() {
        let scratch = Scratch::create().unwrap();
        let base = scratch.path().to_path_buf();
        let tmp = scratch.subdir("tmp").unwrap();
        std::fs::write(tmp.join("x"), "x").unwrap();
        assert_eq!(scratch.subdir("tmp").unwrap(), tmp);
        let Some(parent) = base.parent() else { unreachable!() };
        sweep(parent);
        assert!(tmp.join("x").exists(), "held: not swept");
        drop(scratch);
        assert!(!base.exists());
    }
}
