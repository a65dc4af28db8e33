//! The empty directories that stand at the root for a missing `.git`,
//! `.iota` or `HEAD` while sandboxes may run there, so that none can be
//! created from inside (a read-only mount needs something to mount on).
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
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use std::fs::File;
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

    /// `names` (at the root) made to exist: a missing one gets an empty
    /// directory, recorded as a placeholder. Returns those that exist.
    pub fn ensure(&self, names: &[&'static str]) -> Vec<&'static str> {
        let root = self.project.fd();
        names
            .iter()
            .copied()
            .filter(|name| {
                if rustix::fs::statat(root, *name, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
                    return true;
                }
                let made = rustix::fs::mkdirat(root, *name, Mode::from_raw_mode(0o755)).is_ok();
                if made {
                    self.record(|names| {
                        if !names.iter().any(|n| n == name) {
                            names.push(name.to_string());
                        }
                    });
                }
                made
            })
            .collect()
    }

    /// Changes the record of placeholders under its own lock.
    fn record(&self, change: impl FnOnce(&mut Vec<String>)) {
        let Some(state) = &self.state else {
            return;
        };
        let _guard = lock(
            state,
            &format!("{}.record.lock", self.key),
            FlockOperation::LockExclusive,
        );
        let mut names: Vec<String> = state
            .read(&self.key)
            .map(|bytes| String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect())
            .unwrap_or_default();
        change(&mut names);
        let _ = state.write(&self.key, names.join("\n").as_bytes());
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
        let root = self.project.fd();
        self.record(|names| {
            for name in names.drain(..) {
                let _ = rustix::fs::unlinkat(root, name.as_str(), AtFlags::REMOVEDIR);
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
