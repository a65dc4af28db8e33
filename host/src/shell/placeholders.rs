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
//! a shared `flock` on its root's lock file in the host's state for as long
//! as it lives, and a placeholder is removed only by one that can take every
//! lock of the directories above it exclusively: no session whose root
//! holds it is left, in any process. Which directories are placeholders, and
//! not the user's, is one sealed record for all projects, changed under its
//! own lock, so what a session could not remove (or a killed one left) is
//! removed by a later one. Without a host state nothing is ever removed: an
//! empty directory left is harmless, a mount detached under a running
//! sandbox is not.

use crate::host_state::StateDir;
use crate::project::ProjectRoot;
use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// One session's hold on its project's placeholders.
#[derive(Debug)]
pub struct Placeholders {
    project: Arc<ProjectRoot>,
    state: Option<StateDir>,
    /// The shared lock on the root's lock file, held while the session lives.
    held: Option<File>,
}

/// The record of every placeholder made (absolute paths).
const RECORD: &str = "placeholders";

/// The lock file of the directory `dir`: held shared by each session whose
/// root it is.
fn lock_name(dir: &Path) -> String {
    let key = crate::engine::sha256_hex(dir.as_os_str().as_encoded_bytes());
    format!("placeholders-{}.lock", &key[..32])
}

impl Placeholders {
    /// A hold on `project`'s placeholders, taking the shared lock (waiting
    /// while a session ending removes placeholders below it).
    pub fn hold(project: &Arc<ProjectRoot>) -> Placeholders {
        let state = StateDir::open_default().ok();
        let held = state
            .as_ref()
            .and_then(|state| lock(state, &lock_name(project.path()), FlockOperation::LockShared));
        Placeholders {
            project: project.clone(),
            state,
            held,
        }
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
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
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
        let (Some(state), Some(held)) = (&self.state, self.held.take()) else {
            return;
        };
        drop(held);
        self.record(|paths| {
            // The deepest first: a submodule's `.git`, then its directory.
            paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
            paths.retain(|path| {
                if std::fs::symlink_metadata(path).is_err() {
                    return false;
                }
                // Every directory above it, its lock taken exclusively: no
                // session whose root holds it lives (and none starts until
                // these are let go).
                let mut taken = Vec::new();
                for dir in path.ancestors().skip(1) {
                    match lock(state, &lock_name(dir), FlockOperation::NonBlockingLockExclusive) {
                        Some(file) => taken.push(file),
                        None => return true,
                    }
                }
                // Kept in the record only while it may still be removed
                // later (a mount on it still): one no longer empty is the
                // user's now, one no longer a directory not ours.
                matches!(remove_empty(path), Err(rustix::io::Errno::BUSY))
            });
        });
    }
}

/// Removes the empty directory `path`, reached from `/` without following
/// a link.
fn remove_empty(path: &Path) -> rustix::io::Result<()> {
    use rustix::io::Errno;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Errno::NOENT);
    };
    let mut dir = rustix::fs::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    for component in parent.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        dir = rustix::fs::openat(&dir, name, flags, Mode::empty())?;
    }
    rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR)
}

/// The lock file `name` in `state`, locked `how` (waiting for it).
fn lock(state: &StateDir, name: &str, how: FlockOperation) -> Option<File> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(state.dir().join(name), flags, Mode::from_raw_mode(0o600)).ok()?;
    rustix::fs::flock(&fd, how).ok()?;
    Some(File::from(fd))
}
