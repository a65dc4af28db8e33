//! The empty directories that stand where a sandboxed command must not
//! create anything while sandboxes may run there — a missing `.git`, `.iota`
//! or `HEAD` at the root, a submodule's missing `.git` (and the submodule's
//! directory, where even that is missing: `gitlinks.rs`) — so that none can
//! be created from inside (a read-only mount needs something to mount on).
//!
//! Why a lock: removing a directory that is a mount point in another mount
//! namespace detaches that mount there. A session that removed its
//! placeholders when it ended left every other session's sandboxes on the
//! same project (and an iota child's parent's) free to create `.git` with a
//! `core.fsmonitor` in it. So every session that binds placeholders holds a
//! shared `flock` on one lock file per project in the host's state for as
//! long as it lives; only a session that can take it exclusively when it
//! ends (no other session of any process is left) removes them. Which
//! directories are placeholders, and not the user's, is kept in a sealed
//! record beside the lock, changed under a second lock. Without a host state
//! nothing is ever removed: an empty directory left is harmless, a mount
//! detached under a running sandbox is not.

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
    /// The shared lock, held while the session lives.
    held: Option<File>,
    /// The lock file's and record's names in the state directory.
    key: String,
}

impl Placeholders {
    /// A hold on `project`'s placeholders, taking the shared lock (waiting
    /// while a last session removes them).
    pub fn hold(project: &Arc<ProjectRoot>) -> Placeholders {
        let key = crate::engine::sha256_hex(project.path().as_os_str().as_encoded_bytes());
        let key = format!("placeholders-{}", &key[..32]);
        let state = StateDir::open_default().ok();
        let held = state
            .as_ref()
            .and_then(|state| lock(state, &format!("{key}.lock"), FlockOperation::LockShared));
        Placeholders {
            project: project.clone(),
            state,
            held,
            key,
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
            self.record(|paths| {
                for path in made {
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
        let _guard = lock(
            state,
            &format!("{}.record.lock", self.key),
            FlockOperation::LockExclusive,
        );
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let bytes = state.read(&self.key).unwrap_or_default();
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
        let _ = state.write(&self.key, &text);
    }
}

impl Drop for Placeholders {
    /// The last session on the project removes the placeholders (each only
    /// while still empty: a repository made there since is the user's).
    fn drop(&mut self) {
        let Some(held) = &self.held else {
            return;
        };
        if rustix::fs::flock(held, FlockOperation::NonBlockingLockExclusive).is_err() {
            return;
        }
        self.record(|paths| {
            // The deepest first: a submodule's `.git`, then its directory.
            paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
            for path in paths.drain(..) {
                let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                    continue;
                };
                let flags = OFlags::PATH | OFlags::DIRECTORY;
                if let Ok(parent) = self.project.open_beneath(parent, flags) {
                    let _ = rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR);
                }
            }
        });
    }
}

/// The lock file `name` in `state`, locked `how` (waiting for it).
fn lock(state: &StateDir, name: &str, how: FlockOperation) -> Option<File> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(state.dir().join(name), flags, Mode::from_raw_mode(0o600)).ok()?;
    rustix::fs::flock(&fd, how).ok()?;
    Some(File::from(fd))
}
