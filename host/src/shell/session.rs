//! What the shell keeps in one session ([`crate::session::Part`]): its
//! background jobs, its foreground commands (for the session's cancel), the
//! budget its command logs share, and what its sandboxes bind — the hold on
//! the root's placeholders and the index of the repositories below the root.

use super::jobs::Jobs;
use super::run::{Ending, Running};
use crate::session::{Cancellable, Part, Session};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The shell's state in one session. Ending it kills the session's jobs,
/// then lets the placeholders go.
pub struct ShellSession {
    jobs: Arc<Jobs>,
    foreground: Mutex<Vec<Weak<Running>>>,
    /// Bytes the session's command logs may still take on the host.
    log_budget: OnceLock<Arc<AtomicU64>>,
    /// The hold on the project's placeholders, once a sandbox bound them.
    #[cfg(unix)]
    placeholders: Mutex<Option<super::placeholders::Placeholders>>,
    /// The repositories below the root, kept up to date between sandbox starts.
    #[cfg(unix)]
    repositories: Mutex<crate::protected::RepositoryIndex>,
}

impl Default for ShellSession {
    fn default() -> Self {
        ShellSession {
            jobs: Jobs::new(),
            foreground: Mutex::default(),
            log_budget: OnceLock::new(),
            #[cfg(unix)]
            placeholders: Mutex::default(),
            #[cfg(unix)]
            repositories: Mutex::default(),
        }
    }
}

impl ShellSession {
    /// The shell's state in `session`.
    pub fn of(session: &Session) -> Arc<ShellSession> {
        session.part()
    }

    /// The session's background jobs and their notices.
    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }

    /// Remembers a foreground command, so that cancelling the session's
    /// calls stops it.
    pub fn track_foreground(&self, running: &Arc<Running>) {
        let mut foreground = self.foreground.lock().unwrap_or_else(|e| e.into_inner());
        foreground.retain(|r| r.strong_count() > 0);
        foreground.push(Arc::downgrade(running));
    }

    /// What the session's command logs may still take on the host,
    /// together: [`super::run::SESSION_LOGS`] times `own`, one command's
    /// cap, from the first command on.
    pub fn log_budget(&self, own: u64) -> Arc<AtomicU64> {
        self.log_budget
            .get_or_init(|| Arc::new(AtomicU64::new(own.saturating_mul(super::run::SESSION_LOGS))))
            .clone()
    }

    /// `paths` (relative to `project`'s root) made to exist for the
    /// sandbox to bind read-only: a missing one gets an empty directory,
    /// removed when the last session on the project ends if still empty
    /// (`placeholders.rs`), so a sandboxed command cannot create it (`git
    /// init` at a root without a repository, then a hook in it; a
    /// submodule's `.git`). Returns those that exist; `Err` where the
    /// session cannot hold its root's lock, without which none is made.
    #[cfg(unix)]
    pub fn protect(
        &self,
        project: &Arc<crate::project::ProjectRoot>,
        paths: &[std::path::PathBuf],
    ) -> std::io::Result<Vec<std::path::PathBuf>> {
        let mut held = self.placeholders.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(super::placeholders::Placeholders::hold(project)?);
        }
        Ok(held.as_ref().map_or_else(Vec::new, |held| held.ensure(paths)))
    }

    /// Every repository's own directory below `root` now (a `.git` anywhere,
    /// a bare layout) and the submodules their indexes record, for the
    /// sandbox to keep read-only: walked once in the session, then only
    /// what changed (`protected::RepositoryIndex`).
    #[cfg(unix)]
    pub fn repositories(&self, root: &std::path::Path) -> Result<crate::protected::Repositories, String> {
        self.repositories
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .refresh(root)
    }
}

impl Part for ShellSession {
    fn cancel(&self) {
        let foreground = std::mem::take(&mut *self.foreground.lock().unwrap_or_else(|e| e.into_inner()));
        for running in foreground.iter().filter_map(Weak::upgrade) {
            running.cancel();
        }
    }

    fn end(&self) {
        // Killed, and gone: an iota child among them lets go of its
        // scratch directory only when it has exited.
        self.jobs.kill_all_and_wait(std::time::Duration::from_secs(2));
        // After the jobs: the last session on the project removes them.
        #[cfg(unix)]
        drop(self.placeholders.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

impl Cancellable for Running {
    fn cancel(&self) {
        if self.ending().is_none() {
            self.stop(Ending::Cancelled);
        }
    }
}
