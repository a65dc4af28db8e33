//! One session: what lasts across the calls of one `call` invocation or one
//! MCP connection — toolset state (the read ledger), "allow for this
//! session" approvals, the session's scratch directory, cancellation — and
//! the [`Part`]s the layers above keep for themselves in it (the shell's
//! commands, the filesystem's warm tree), which this module never names.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Per-session state a capability or a set keeps for itself: made on first
/// use ([`Session::part`]), told when the session's calls are cancelled and
/// when the session ends.
pub trait Part: Any + Send + Sync {
    /// Stops what the session's running calls started (the embedder's
    /// `cancel`, Esc).
    fn cancel(&self) {}
    /// Ends the part's life on the machine (its processes killed, what it
    /// holds let go), before the scratch directory goes.
    fn end(&self) {}
}

/// Something a call started that its cancellation stops (a command's
/// process tree).
pub trait Cancellable: Send + Sync {
    /// Stops it, unless it has ended already.
    fn cancel(&self);
}

/// A part made: its type, and the part as `Any` (to hand out typed) and as
/// a [`Part`] (to cancel and end).
type Made = (TypeId, Arc<dyn Any + Send + Sync>, Arc<dyn Part>);

/// Per-session state, shared by every call of the session. Dropping it ends
/// its parts (the shell's jobs are killed) and removes its private /tmp.
pub struct Session {
    /// Unique in the process: whose turn it is for an instance slot.
    id: u64,
    state: Mutex<HashMap<String, ToolsetState>>,
    approved: Mutex<HashSet<(String, String)>>,
    /// The session's directory under the system temp directory: its
    /// private /tmp and its job logs (`scratch.rs`).
    scratch: Mutex<Option<crate::scratch::Scratch>>,
    /// Set by [`Session::end`]: no scratch directory is made after it.
    ended: std::sync::atomic::AtomicBool,
    cancellations: AtomicU64,
    /// Worker tasks the session's calls have submitted (`caps/workers.rs`).
    tasks: AtomicU64,
    /// The parts made so far, in the order they were made.
    parts: Mutex<Vec<Made>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish_non_exhaustive()
    }
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
            scratch: Mutex::default(),
            ended: Default::default(),
            cancellations: AtomicU64::new(0),
            tasks: AtomicU64::new(0),
            parts: Mutex::default(),
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
    /// server told to stop by a signal): its parts ended (the shell's
    /// commands killed, its placeholders let go), then its scratch directory
    /// (private /tmp, job logs) removed. Done again, it does nothing more.
    pub fn end(&self) {
        for part in self.made_parts() {
            part.end();
        }
        {
            // Under the lock: no call still running makes a new one after this.
            let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
            self.ended.store(true, Ordering::SeqCst);
            drop(scratch.take());
        }
        // What the killed children left.
        crate::scratch::sweep(&std::env::temp_dir());
    }

    /// The session's part of type `P`, made now if it is the first use.
    pub fn part<P: Part + Default>(&self) -> Arc<P> {
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        let found = parts.iter().find(|(id, ..)| *id == TypeId::of::<P>());
        if let Some(part) = found.and_then(|(_, any, _)| any.clone().downcast::<P>().ok()) {
            return part;
        }
        let made = Arc::new(P::default());
        parts.push((TypeId::of::<P>(), made.clone(), made.clone()));
        made
    }

    /// The session's part of type `P`, if one was made.
    pub fn existing_part<P: Part>(&self) -> Option<Arc<P>> {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        let (_, any, _) = parts.iter().find(|(id, ..)| *id == TypeId::of::<P>())?;
        any.clone().downcast::<P>().ok()
    }

    fn made_parts(&self) -> Vec<Arc<dyn Part>> {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        parts.iter().map(|(.., part)| part.clone()).collect()
    }

    /// Cancels every call of the session running now (the embedder's
    /// `cancel`, Esc): their commands' results say `[command cancelled]`.
    pub fn cancel_foreground(&self) {
        // Components in flight see the count move at their next epoch tick.
        self.cancellations.fetch_add(1, Ordering::SeqCst);
        for part in self.made_parts() {
            part.cancel();
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
    commands: Mutex<Vec<Weak<dyn Cancellable>>>,
}

impl CallCancel {
    /// Cancels the call: its commands stop now, its component at its next tick.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let commands = std::mem::take(&mut *self.commands.lock().unwrap_or_else(|e| e.into_inner()));
        for command in commands.iter().filter_map(Weak::upgrade) {
            command.cancel();
        }
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Remembers a command the call runs, so that cancelling the call stops
    /// it; one started after the cancel stops at once.
    pub fn track<C: Cancellable + 'static>(&self, command: &Arc<C>) {
        let weak: Weak<C> = Arc::downgrade(command);
        let weak: Weak<dyn Cancellable> = weak;
        self.commands.lock().unwrap_or_else(|e| e.into_inner()).push(weak);
        if self.is_cancelled() {
            command.cancel();
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
