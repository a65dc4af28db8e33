//! The empty directories that stand where a sandboxed command must not
//! create anything while sandboxes may run there — a missing `.git`, `.iota`
//! or `HEAD` at the root, a submodule's missing `.git` (and the submodule's
//! directory, where even that is missing: `gitlinks.rs`) — so that none can
//! be created from inside (a read-only mount needs something to mount on).
//!
//! Why locks: removing a directory that is a mount point in another mount
//! namespace detaches that mount there. A placeholder is mounted by every
//! sandbox whose root holds it: its own session's, another session's on the
//! same project, and one on any enclosing directory (an iota child with a
//! narrower `--root` made `sub/.git`, its parent's sandbox on the project
//! bound it, the child's end removed it, and the parent's sandbox could
//! make `sub/.git` with a `core.fsmonitor` in it). So every session holds
//! a shared `flock` on its root directory itself for as long as it lives,
//! and a placeholder is removed only by one that can take every directory
//! above it exclusively, through the descriptors it then removes it with:
//! no session whose root holds it is left, in any process. The lock is the
//! directory's, not a name's: a session that reaches the project by another
//! path (a bind mount, a link) or keeps its state elsewhere (another
//! `HOME`) holds the same lock. Which directories are placeholders, and not
//! the user's, is one sealed record for all projects in the host's state,
//! changed under its own lock, so what a session could not remove (or a
//! killed one left) is removed by a later one. Without a host state nothing
//! is recorded, so nothing is ever removed: an empty directory left is
//! harmless, a mount detached under a running sandbox is not.

use crate::host_state::StateDir;
use crate::project::ProjectRoot;
use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One session's hold on its project's placeholders.
#[derive(Debug)]
pub struct Placeholders {
    project: Arc<ProjectRoot>,
    state: Option<StateDir>,
    /// The root opened for reading (`flock` needs that), locked shared
    /// while the session lives.
    held: Option<OwnedFd>,
}

/// The record of every placeholder made (absolute paths).
const RECORD: &str = "placeholders";

/// How long a session waits for its root's lock: a session ending holds it
/// exclusively only while it removes what is below it. Past this, whoever
/// holds it is not one (a sandboxed command can lock a directory it sees),
/// and the session's sandbox does not start.
const HOLD_WAIT: Duration = Duration::from_secs(10);

impl Placeholders {
    /// A hold on `project`'s placeholders: the shared lock on its root,
    /// waiting (up to [`HOLD_WAIT`]) while a session ending removes
    /// placeholders below it.
    pub fn hold(project: &Arc<ProjectRoot>) -> std::io::Result<Placeholders> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root = rustix::fs::openat(project.duplicate()?, ".", flags, Mode::empty())?;
        let started = Instant::now();
        loop {
            match rustix::fs::flock(&root, FlockOperation::NonBlockingLockShared) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) if started.elapsed() < HOLD_WAIT => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(std::io::Error::other(format!(
                        "{} stayed locked by another process for {} s (flock: {e}); the sandbox needs a shared lock on it",
                        project.path().display(),
                        HOLD_WAIT.as_secs()
                    )));
                }
            }
        }
        Ok(Placeholders {
            project: project.clone(),
            state: StateDir::open_default().ok(),
            held: Some(root),
        })
    }

    /// `paths` (relative to the root) made to exist: each missing directory
    /// on the way and at the end gets an empty one, recorded as a
    /// placeholder. Nothing is made through a link, or below something that
    /// is not a directory. Returns those that exist.
    pub fn ensure(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let mut made = Vec::new();
        let exist = paths
            .iter()
            .filter(|rel| self.ensure_one(rel, &mut made))
            .cloned()
            .collect();
        // One change of the record for them all.
        if !made.is_empty() {
            let root = self.project.path();
            self.record(|paths| {
                for path in made {
                    let path = root.join(path);
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
            });
        }
        exist
    }

    /// Makes `rel` exist, adding each directory it made to `made`.
    fn ensure_one(&self, rel: &Path, made_here: &mut Vec<PathBuf>) -> bool {
        let names: Vec<&OsStr> = rel
            .components()
            .map_while(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        if names.is_empty() || names.len() != rel.components().count() {
            return false;
        }
        let Ok(mut dir) = self.project.duplicate() else {
            return false;
        };
        let mut made = PathBuf::new();
        for (i, name) in names.iter().enumerate() {
            made.push(name);
            let last = i + 1 == names.len();
            match rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {}
                // A file where the last is: it exists (a `.git` file).
                Ok(_) => return last,
                Err(rustix::io::Errno::NOENT) => {
                    if rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o755)).is_err() {
                        return false;
                    }
                    made_here.push(made.clone());
                }
                Err(_) => return false,
            }
            if !last {
                let flags = crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                match rustix::fs::openat(&dir, *name, flags, Mode::empty()) {
                    Ok(next) => dir = next,
                    Err(_) => return false,
                }
            }
        }
        true
    }

    /// Changes the record of placeholders under its own lock.
    /// The record holds paths separated by NUL, which no path contains.
    fn record(&self, change: impl FnOnce(&mut Vec<PathBuf>)) {
        let Some(state) = &self.state else {
            return;
        };
        let _guard = lock(state, &format!("{RECORD}.lock"), FlockOperation::LockExclusive);
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let bytes = state.read(RECORD).unwrap_or_default();
        // Records of older builds held names a line each.
        let separator = if bytes.contains(&0) { 0 } else { b'\n' };
        let mut paths: Vec<PathBuf> = bytes
            .split(|&b| b == separator)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(std::ffi::OsString::from_vec(p.to_vec())))
            .collect();
        change(&mut paths);
        let joined: Vec<&[u8]> = paths.iter().map(|p| p.as_os_str().as_bytes()).collect();
        let mut text = joined.join(&0u8);
        text.push(0);
        let _ = state.write(RECORD, &text);
    }
}

impl Drop for Placeholders {
    /// Removes every placeholder no session's root holds any longer (each
    /// only while still empty: a repository made there since is the
    /// user's), this session's and those others could not.
    fn drop(&mut self) {
        // Let go first: this session's own lock would keep them all.
        drop(self.held.take());
        self.record(|paths| {
            // The deepest first: a submodule's `.git`, then its directory.
            paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
            // Kept in the record only while it may still be removed later
            // (a session still holds it, a mount on it still): one gone,
            // no longer empty (the user's now) or no longer a directory is
            // not ours.
            let mut held = std::collections::HashSet::new();
            paths.retain(|path| match remove_unheld(path, &mut held) {
                Ok(()) => false,
                Err(e) => matches!(
                    e,
                    rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::BUSY | rustix::io::Errno::ACCESS
                ),
            });
        });
    }
}

/// Removes the empty directory `path` if no session's root holds it: each
/// directory from `/` down to its parent opened without following a link
/// and locked exclusively (no session whose root it is lives, and none
/// starts until these are let go), the last one the directory it is
/// removed from. `WOULDBLOCK` where one is held, `ACCESS` where one cannot
/// be opened to tell. Another session ending holds a lock above too, for
/// moments: each is tried for [`REMOVER_WAIT`], and one held past that is
/// remembered in `held` (by device and inode) and not waited for again.
fn remove_unheld(path: &Path, held: &mut std::collections::HashSet<(u64, u64)>) -> rustix::io::Result<()> {
    use rustix::io::Errno;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Errno::NOENT);
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open("/", flags, Mode::empty())?;
    let mut taken = Vec::new();
    for component in parent.components() {
        if let Component::Normal(name) = component {
            let next = rustix::fs::openat(&dir, name, flags, Mode::empty())?;
            taken.push(std::mem::replace(&mut dir, next));
        }
    }
    taken.push(dir);
    for dir in &taken {
        let st = rustix::fs::fstat(dir)?;
        let id = crate::platform::dev_ino(&st);
        if held.contains(&id) {
            return Err(Errno::WOULDBLOCK);
        }
        let started = Instant::now();
        loop {
            match rustix::fs::flock(dir, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(Errno::WOULDBLOCK | Errno::INTR) if started.elapsed() < REMOVER_WAIT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(Errno::WOULDBLOCK) => {
                    held.insert(id);
                    return Err(Errno::WOULDBLOCK);
                }
                Err(e) => return Err(e),
            }
        }
    }
    let parent = taken.last().ok_or(Errno::NOENT)?;
    rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)
}

/// How long a session ending waits for a directory's lock that another
/// session ending may hold while it removes its own placeholders.
const REMOVER_WAIT: Duration = Duration::from_millis(500);

/// The lock file `name` in `state`, locked `how` (waiting for it).
fn lock(state: &StateDir, name: &str, how: FlockOperation) -> Option<File> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(state.dir().join(name), flags, Mode::from_raw_mode(0o600)).ok()?;
    rustix::fs::flock(&fd, how).ok()?;
    Some(File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locked(dir: &Path, how: FlockOperation) -> OwnedFd {
        let fd = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        rustix::fs::flock(&fd, how).unwrap();
        fd
    }

    /// A directory any session's root holds — by whatever path that
    /// session reached it — is not removed; one no longer empty is the
    /// user's; a link on the way is not followed.
    #[test]
    fn a_placeholder_is_removed_only_where_no_root_above_it_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("project");
        let placeholder = root.join("sub/.git");
        std::fs::create_dir_all(&placeholder).unwrap();
        let held = locked(&root.join("sub"), FlockOperation::LockShared);
        assert_eq!(
            remove_unheld(&placeholder, &mut Default::default()),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        drop(held);
        // Held through a link to it: the same directory, the same lock.
        std::os::unix::fs::symlink(&root, dir.path().join("elsewhere")).unwrap();
        let held = locked(&dir.path().join("elsewhere"), FlockOperation::LockShared);
        assert_eq!(
            remove_unheld(&placeholder, &mut Default::default()),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        drop(held);
        assert!(placeholder.is_dir());
        // Reached through a link on its path: not followed.
        let linked = dir.path().join("elsewhere/sub/.git");
        assert!(remove_unheld(&linked, &mut Default::default()).is_err());
        assert!(placeholder.is_dir());
        std::fs::write(placeholder.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(
            remove_unheld(&placeholder, &mut Default::default()),
            Err(rustix::io::Errno::NOTEMPTY)
        );
        std::fs::remove_file(placeholder.join("HEAD")).unwrap();
        assert_eq!(remove_unheld(&placeholder, &mut Default::default()), Ok(()));
        assert!(!placeholder.exists());
    }

    /// A root some process keeps locked exclusively (a sandboxed command
    /// can lock a directory it sees) is refused, said, after a while.
    #[test]
    fn a_root_locked_by_another_process_is_refused_after_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let _held = locked(&root, FlockOperation::LockExclusive);
        let project = Arc::new(ProjectRoot::open(&root).unwrap());
        let started = Instant::now();
        let error = Placeholders::hold(&project).unwrap_err().to_string();
        assert!(error.contains("stayed locked by another process"), "{error}");
        assert!(started.elapsed() >= HOLD_WAIT);
    }
}
