//! One session: what lasts across the calls of one `call` invocation or one
//! MCP connection — toolset state (the read ledger) and "allow for this
//! session" approvals.

use crate::shell::jobs::Jobs;
use crate::shell::run::Running;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Per-session state, shared by every call of the session. Dropping it kills
/// the session's background jobs and removes its private /tmp.
#[derive(Debug)]
pub struct Session {
    /// Unique in the process: whose turn it is for an instance slot.
    id: u64,
    state: Mutex<HashMap<String, ToolsetState>>,
    approved: Mutex<HashSet<(String, String)>>,
    jobs: Arc<Jobs>,
    /// The session's directory under the system temp directory: its
    /// private /tmp and its job logs (`scratch.rs`).
    scratch: Mutex<Option<crate::scratch::Scratch>>,
    /// Set by [`Session::end`]: no scratch directory is made after it.
    ended: std::sync::atomic::AtomicBool,
    /// The hold on the project's placeholders, once a sandbox bound them.
    #[cfg(unix)]
    placeholders: Mutex<Option<crate::shell::placeholders::Placeholders>>,
    /// Bytes the session's command logs may still take on the host.
    log_budget: OnceLock<Arc<AtomicU64>>,
    /// The repositories below the root, kept up to date between sandbox starts.
    #[cfg(unix)]
    repositories: Mutex<crate::protected::RepositoryIndex>,
    foreground: Mutex<Vec<std::sync::Weak<Running>>>,
    cancellations: AtomicU64,
    /// Worker tasks the session's calls have submitted (`caps/workers.rs`).
    tasks: AtomicU64,
    warm_tree: crate::caps::fs::WarmTree,
}

/// What one toolset keeps in one session (`iota:toolset/session`).
#[derive(Debug, Default)]
struct ToolsetState {
    values: HashMap<String, Vec<u8>>,
    /// What `values` costs, against [`STATE_CAP`].
    bytes: usize,
}

/// Bytes of keys and values one toolset may keep in one session, each entry
/// counting [`ENTRY_COST`] more. Each `set` copies at most one crossing's
/// worth, but a set may call it without end (new keys, or one value aliased
/// in its memory), so the host bounds the sum rather than trusting the
/// component's memory limit to.
pub const STATE_CAP: usize = 64 << 20;

/// What one entry costs besides its key and value: the map's slot and the
/// two allocations' bookkeeping, so a set of empty values is bounded too.
pub const ENTRY_COST: usize = 128;

/// A `set` that would take a toolset's session state past [`STATE_CAP`].
#[derive(Debug)]
pub struct StateFull;

impl std::fmt::Display for StateFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session state over {} MiB", STATE_CAP >> 20)
    }
}

impl std::error::Error for StateFull {}

impl Default for Session {
    fn default() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Session {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: Mutex::default(),
            approved: Mutex::default(),
            jobs: Jobs::new(),
            scratch: Mutex::default(),
            ended: Default::default(),
            #[cfg(unix)]
            placeholders: Mutex::default(),
            #[cfg(unix)]
            repositories: Mutex::default(),
            log_budget: OnceLock::new(),
            foreground: Mutex::default(),
            cancellations: AtomicU64::new(0),
            tasks: AtomicU64::new(0),
            warm_tree: crate::caps::fs::WarmTree::default(),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.end();
    }
}

impl Session {
    /// A new, empty session.
    pub fn new() -> Session {
        Session::default()
    }

    /// The session's number, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Ends the session's life on the machine, whoever still holds it (a
    /// server told to stop by a signal): its commands killed, then its
    /// placeholders and its scratch directory (private /tmp, job logs)
    /// removed. Done again, it does nothing more.
    pub fn end(&self) {
        // Killed, and gone: an iota child among them lets go of its
        // scratch directory only when it has exited.
        self.jobs.kill_all_and_wait(std::time::Duration::from_secs(2));
        // After the jobs: the last session on the project removes them.
        #[cfg(unix)]
        drop(self.placeholders.lock().unwrap_or_else(|e| e.into_inner()).take());
        {
            // Under the lock: no call still running makes a new one after this.
            let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
            self.ended.store(true, Ordering::SeqCst);
            drop(scratch.take());
        }
        // What the killed children left.
        crate::scratch::sweep(&std::env::temp_dir());
    }

    /// The directory listings this session's searches have read, kept true
    /// while it lasts (`caps/fs/warm.rs`).
    pub fn warm_tree(&self) -> &crate::caps::fs::WarmTree {
        &self.warm_tree
    }

    /// The session's background jobs and their notices.
    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }

    /// Remembers a foreground command, so that cancelling the call stops it.
    pub fn track_foreground(&self, running: &Arc<Running>) {
        let mut foreground = self.foreground.lock().unwrap();
        foreground.retain(|r| r.strong_count() > 0);
        foreground.push(Arc::downgrade(running));
    }

    /// Cancels every call of the session running now (the embedder's
    /// `cancel`, Esc): their commands' results say `[command cancelled]`.
    pub fn cancel_foreground(&self) {
        // Components in flight see the count move at their next epoch tick.
        self.cancellations.fetch_add(1, Ordering::SeqCst);
        for running in self.foreground.lock().unwrap().drain(..).filter_map(|r| r.upgrade()) {
            if running.ending().is_none() {
                running.stop(crate::shell::run::Ending::Cancelled);
            }
        }
    }

    /// How many times the session's calls were cancelled: a call that sees
    /// this move while it runs was cancelled.
    pub fn cancellations(&self) -> u64 {
        self.cancellations.load(Ordering::SeqCst)
    }

    /// Counts a worker task one of the session's calls submitted.
    pub fn count_task(&self) {
        self.tasks.fetch_add(1, Ordering::Relaxed);
    }

    /// Worker tasks the session's calls have submitted so far.
    pub fn tasks(&self) -> u64 {
        self.tasks.load(Ordering::Relaxed)
    }

    /// The session's private directory, mounted as /tmp inside the sandbox
    /// (created on first use, private to its owner, removed with the
    /// session or, if its process is killed, by the next host: `scratch.rs`).
    pub fn private_tmp(&self) -> std::io::Result<PathBuf> {
        self.scratch_subdir("tmp")
    }

    /// Where the session's command logs are (the same), shown read-only
    /// inside the sandbox for the model to `tail`.
    pub fn jobs_dir(&self) -> std::io::Result<PathBuf> {
        self.scratch_subdir("jobs")
    }

    fn scratch_subdir(&self, name: &str) -> std::io::Result<PathBuf> {
        self.with_scratch(|scratch| scratch.subdir(name))
    }

    /// `f` on the session's scratch directory, made on first use.
    fn with_scratch<T>(&self, f: impl FnOnce(&crate::scratch::Scratch) -> std::io::Result<T>) -> std::io::Result<T> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if self.ended.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the session has ended"));
        }
        if scratch.is_none() {
            *scratch = Some(crate::scratch::Scratch::create()?);
        }
        scratch.as_ref().map_or_else(|| unreachable!(), f)
    }

    /// Notes in the session's journal (`scratch.rs`) that a write is about
    /// to make `temporary` in `dir`: should the host be killed before the
    /// name is gone, the next host removes it. A journal that cannot be
    /// kept does not stop the write (the name is still hidden from every
    /// listing, and swept by the next write of the file).
    #[cfg(unix)]
    pub fn note_temporary(&self, dir: std::os::fd::BorrowedFd<'_>, temporary: &std::ffi::OsStr) {
        use std::os::fd::AsRawFd;
        let Ok(dir) = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
            return;
        };
        let _ = self.with_scratch(|scratch| scratch.note_temporary(&dir.join(temporary)));
    }

    /// Notes in the session's journal that a write is about to make
    /// `temporary` in the held directory `dir` (its path is its own).
    #[cfg(windows)]
    pub fn note_temporary(&self, dir: &std::path::Path, temporary: &std::ffi::OsStr) {
        let _ = self.with_scratch(|scratch| scratch.note_temporary(&dir.join(temporary)));
    }

    /// `paths` (relative to `project`'s root) made to exist for the
    /// sandbox to bind read-only: a missing one gets an empty directory,
    /// removed when the last session on the project ends if still empty
    /// (`shell/placeholders.rs`), so a sandboxed command cannot create it
    /// (`git init` at a root without a repository, then a hook in it; a
    /// submodule's `.git`). Returns those that exist; `Err` where the
    /// session cannot hold its root's lock, without which none is made.
    #[cfg(unix)]
    pub fn protect(
        &self,
        project: &Arc<crate::project::ProjectRoot>,
        paths: &[PathBuf],
    ) -> std::io::Result<Vec<PathBuf>> {
        let mut held = self.placeholders.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(crate::shell::placeholders::Placeholders::hold(project)?);
        }
        Ok(held.as_ref().map_or_else(Vec::new, |held| held.ensure(paths)))
    }

    /// What the session's command logs may still take on the host,
    /// together: [`crate::shell::run::SESSION_LOGS`] times `own`, one
    /// command's cap, from the first command on.
    pub fn log_budget(&self, own: u64) -> Arc<AtomicU64> {
        self.log_budget
            .get_or_init(|| Arc::new(AtomicU64::new(own.saturating_mul(crate::shell::run::SESSION_LOGS))))
            .clone()
    }

    /// Every repository's own directory below `root` now (a `.git` anywhere,
    /// a bare layout) and the submodules their indexes record, for the
    /// sandbox to keep read-only: walked once in the session, then only
    /// what changed (`protected::RepositoryIndex`).
    #[cfg(unix)]
    pub fn repositories(&self, root: &std::path::Path) -> Result<crate::protected::Repositories, String> {
        self.repositories.lock().unwrap().refresh(root)
    }

    /// The value `set` stored under `key`. Each toolset sees only its own keys.
    pub fn get(&self, set: &str, key: &str) -> Option<Vec<u8>> {
        self.state.lock().unwrap().get(set)?.values.get(key).cloned()
    }

    /// Stores `value` under `key` for `set`, unless the set's entries would
    /// then cost more than [`STATE_CAP`] bytes: then nothing changes.
    pub fn set(&self, set: &str, key: &str, value: Vec<u8>) -> Result<(), StateFull> {
        let cost = |value: &[u8]| ENTRY_COST + key.len() + value.len();
        let mut state = self.state.lock().unwrap();
        let kept = state
            .get(set)
            .map_or(0, |kept| kept.bytes - kept.values.get(key).map_or(0, |old| cost(old)));
        let total = kept.saturating_add(cost(&value));
        if total > STATE_CAP {
            return Err(StateFull);
        }
        let kept = state.entry(set.to_string()).or_default();
        kept.bytes = total;
        kept.values.insert(key.to_string(), value);
        Ok(())
    }

    /// Whether the user allowed `tool` of `set` for the rest of the session.
    pub fn is_approved(&self, set: &str, tool: &str) -> bool {
        self.approved
            .lock()
            .unwrap()
            .contains(&(set.to_string(), tool.to_string()))
    }

    /// Records "allow for this session" for `tool` of `set`.
    pub fn approve(&self, set: &str, tool: &str) {
        self.approved
            .lock()
            .unwrap()
            .insert((set.to_string(), tool.to_string()));
    }
}

/// One call's own cancellation (an MCP client's `notifications/cancelled`
/// names one request): it stops that call's component at its next epoch
/// tick and its command's whole tree, and no other call of the session.
#[derive(Debug, Default)]
pub struct CallCancel {
    cancelled: std::sync::atomic::AtomicBool,
    commands: Mutex<Vec<std::sync::Weak<Running>>>,
}

impl CallCancel {
    /// Cancels the call: its commands stop now, its component at its next tick.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let commands = std::mem::take(&mut *self.commands.lock().unwrap_or_else(|e| e.into_inner()));
        for running in commands.iter().filter_map(std::sync::Weak::upgrade) {
            if running.ending().is_none() {
                running.stop(crate::shell::run::Ending::Cancelled);
            }
        }
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Remembers a command the call runs, so that cancelling the call stops
    /// it; one started after the cancel stops at once.
    pub fn track(&self, running: &Arc<Running>) {
        self.commands
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(running));
        if self.is_cancelled() && running.ending().is_none() {
            running.stop(crate::shell::run::Ending::Cancelled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolset_state_is_capped_per_set() {
        let session = Session::new();
        let mib = vec![0u8; 1 << 20];
        for i in 0..63 {
            session.set("a", &format!("k{i}"), mib.clone()).unwrap();
        }
        // Keys and entries count too: a 64th MiB value no longer fits.
        assert!(session.set("a", "k63", mib.clone()).is_err());
        assert_eq!(session.get("a", "k63"), None, "a refused set changes nothing");
        // Replacing a value counts only the difference.
        session.set("a", "k0", vec![1u8; 1 << 20]).unwrap();
        session.set("a", "k1", Vec::new()).unwrap();
        session.set("a", "k63", mib.clone()).unwrap();
        // Another set has its own allowance.
        session.set("b", "k", mib).unwrap();
        assert_eq!(session.get("a", "k0").unwrap()[0], 1);
    }

    #[test]
    fn empty_values_under_new_keys_are_capped_too() {
        let session = Session::new();
        let fit = STATE_CAP / (ENTRY_COST + 8);
        for i in 0..fit {
            session.set("a", &format!("{i:08}"), Vec::new()).unwrap();
        }
        assert!(session.set("a", "x", Vec::new()).is_err());
    }
}
