//! The session-warm tree: `list-dir` answers a session has already given,
//! kept true by inotify, so an agent's repeated grep and glob over the same
//! tree skip the directory walk's system calls.
//!
//! A directory is watched and kept from its second listing in the session:
//! a session's first search pays nothing for the tree (watching costs a few
//! system calls per directory), a search that repeats one builds it. A
//! walk that starts below the root (grep or glob with a `path`, list_dir of
//! a subdirectory: the first listing of a call's own instance) lists the
//! directories above its start as well, when the start is listed again and
//! they are not kept: a directory is kept only under kept parents, so
//! without them its repeated searches would never be.
//!
//! Only what a fresh `list-dir` would answer is ever served. A listing is
//! kept only
//! - for a *real path*: the root of a preopen, or a directory whose parent's
//!   kept listing names it as a directory (not a symlink), so no symlink lies
//!   on a kept path and every ancestor is watched: a rename, a delete or a
//!   symlink swapped in anywhere above it reaches a watch and drops it. Its
//!   name must be exact: a name that only reads as one after lossy UTF-8
//!   decoding (U+FFFD) could be another entry, so it is never kept;
//! - with a watch on the very directory it was read from (the watch is added
//!   on the opened directory through `/proc/self/fd` before it is read, the
//!   directory must be the one an earlier watch of that path saw, device
//!   and inode, and the listing is kept only if that very watch record,
//!   stamped from a counter that never restarts, saw no event meanwhile);
//! - under a root that is still the same directory: each lookup compares the
//!   call's root (opened afresh by path each call) with the one the kept
//!   listings were read under, since nothing above a root is watched;
//! - within a budget of entries ([`MAX_ENTRIES`]); past it, directories are
//!   simply listed again;
//! - on a local filesystem ([`reports_every_change`]): a network or FUSE
//!   filesystem changes under other machines' or a daemon's hands without an
//!   event here, so its directories are always listed afresh.
//!
//! Every lookup first reads the pending events: the kernel queues an event
//! before the system call that caused it returns, so nothing that changed
//! before a lookup can be answered stale. A mount or unmount (which changes
//! listings without an inotify event; only possible outside the sandbox,
//! whose seccomp filter refuses mounts) is seen on `/proc/self/mountinfo`,
//! which shares one epoll set with the inotify queue (both are marked ready
//! before the system call that changed them returns), and drops
//! everything, as does an overflowed queue.
//! A watch that cannot be added only means that directory is listed again
//! each time; the tree takes at most a quarter of the user's inotify watches
//! ([`watch_budget`]), leaving the rest to editors and file watchers.
//! Overlay filesystems are trusted for changes made through the overlay;
//! a change written straight into a layer beneath it (from outside a
//! container) is not seen, as no tool that watches files sees it. The host
//! also drops the whole tree after every call that may have written (a shell
//! command, an approved write), so correctness never rests on inotify alone.
//!
//! Memory: about 40 bytes per kept entry plus its name, and one inotify watch
//! (about 1 KiB of kernel memory) per watched directory; each directory
//! counts as one entry against [`MAX_ENTRIES`], and its path twice against
//! [`MAX_KEPT_PATH_BYTES`]. Beside them, the path of each directory listed once
//! (the second-listing rule), at most [`MAX_ENTRIES`] paths and
//! [`MAX_KEPT_PATH_BYTES`] of them.
//!
//! This file is the tree itself: its face to `caps/fs.rs` and each lookup,
//! from the lock to the keep. Beside it: `warm/queues.rs` (what tells of
//! changes: inotify and the mount table in one epoll set), `warm/watches.rs`
//! (the watch index: records, kept listings, what events drop),
//! `warm/policy.rs` (what may be kept, and the budgets), `warm/probes.rs`
//! (what is asked of an opened directory: identity, filesystem). Where no
//! kernel watches directories, `warm/unwatched.rs` stands in for all of it.
//!
//! [`reports_every_change`]: probes::reports_every_change
//! [`watch_budget`]: policy::watch_budget
//! [`MAX_KEPT_PATH_BYTES`]: policy::MAX_KEPT_PATH_BYTES

use super::contents::KnownContents;
use super::{Entry, FilesRoot, WarmStats};
use policy::{MayKeep, Seen, real_parent};
use probes::Opened;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use watches::{WatchStep, Watched};

mod policy;
mod probes;
mod queues;
mod watches;

pub use policy::MAX_ENTRIES;
pub(super) use probes::{Identity, identity};

/// One session's kept listings (shared by its calls and their workers).
#[derive(Default)]
pub struct WarmTree {
    inner: Mutex<State>,
    hits: AtomicU64,
    /// Stamps for watch records: never restarts, not even at [`clear`], so
    /// a read begun under one record is never kept under a later one.
    ///
    /// [`clear`]: WarmTree::clear
    stamps: Arc<AtomicU64>,
    /// What the session's searches learned of file contents; checked
    /// against each file's `stat` at every use, so kept through [`clear`].
    ///
    /// [`clear`]: WarmTree::clear
    contents: KnownContents,
}

impl std::fmt::Debug for WarmTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WarmTree({:?})", self.stats())
    }
}

/// A tree's state behind its lock.
#[derive(Default)]
struct State {
    /// The watches and kept listings; dropped by [`WarmTree::clear`].
    watched: Option<Watched>,
    /// Directories listed once this session (the second-listing rule):
    /// outlives `clear`.
    seen: Seen,
    /// inotify or the mount table could not be had: the session walks, and
    /// does not ask the kernel again at every lookup (a full instance table
    /// stays full).
    unwatchable: bool,
}

/// Opens a directory of the root a listing is asked in, for the
/// directories above a walk's start ([`WarmTree::list`]).
pub(super) type OpenAbove<'a> = dyn Fn(&Path) -> Result<std::fs::File, String> + 'a;

/// What a lookup found for a directory.
enum Lookup {
    /// Its kept listing.
    Kept(Arc<Vec<Entry>>),
    /// Nothing to keep: read it.
    Read,
    /// Not listed before in this session: read it, and remember it once it
    /// opens.
    FirstSight,
    /// It may be kept: watch it, read it, keep it if its parent's record
    /// still has this stamp.
    Watch { parent_stamp: Option<u64> },
    /// It may be kept once its parent is: listed again, but its parent's
    /// listing is not kept.
    ParentUnkept,
}

impl WarmTree {
    /// The listing of `dir` (absolute, inside `root`): from the tree when it
    /// is kept there, else `open`ed beneath the root, `read`, and kept when
    /// it may be. Shared, not copied: each form of `list-dir` copies it
    /// into its own answer.
    ///
    /// With `open_above` (where a walk starts: the first listing of a
    /// call's own instance), a directory listed again whose parent's
    /// listing is not kept has the directories above it listed first, from
    /// the highest one not kept down, so that it and they are kept
    /// ([`WarmTree::keep_above`]).
    pub fn list(
        &self,
        root: &FilesRoot,
        dir: &Path,
        open: impl FnOnce() -> Result<std::fs::File, String>,
        read: impl FnOnce(std::fs::File) -> Result<Vec<Entry>, String>,
        open_above: Option<&OpenAbove>,
    ) -> Result<Arc<Vec<Entry>>, String> {
        let Some(parent) = real_parent(root, dir) else {
            return read(open()?).map(Arc::new);
        };
        let mut lookup = self.look_up(root, dir, parent.as_deref());
        if let (Lookup::ParentUnkept, Some(open_above), Some(parent)) = (&lookup, open_above, &parent) {
            self.keep_above(root, parent, open_above);
            lookup = self.look_up(root, dir, Some(parent.as_path()));
        }
        let parent_stamp = match lookup {
            Lookup::Kept(listing) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(listing);
            }
            Lookup::Read | Lookup::ParentUnkept => return read(open()?).map(Arc::new),
            Lookup::FirstSight => {
                let opened = open()?;
                self.saw(dir);
                return read(opened).map(Arc::new);
            }
            Lookup::Watch { parent_stamp } => parent_stamp,
        };
        // Opened and examined outside the lock; watched before it is read,
        // through the very directory read. A change between the open and
        // the watch is in the read (it comes after); a swap of the path
        // reaches the parent's watch and restamps the parent's record, which
        // the keep below checks.
        let opened = open()?;
        let Some(facts) = Opened::examine(&opened) else {
            return read(opened).map(Arc::new);
        };
        let step = {
            let state = self.drained();
            state
                .watched
                .as_ref()
                .map_or(WatchStep::Not, |watched| watched.watch_step(dir, facts))
        };
        let stamp = match step {
            WatchStep::Known(stamp) => Some(stamp),
            WatchStep::Not => None,
            // Added outside the lock: the kernel visits every entry of the
            // directory, and the other worker needs the lock meanwhile.
            WatchStep::Add(queues, removals) => {
                match queues.watch(&opened) {
                    Ok(wd) => {
                        let mut state = self.drained();
                        match state.watched.as_mut() {
                            Some(watched) if Arc::ptr_eq(&watched.queues, &queues) => {
                                watched.record(dir, wd, facts.identity, removals)
                            }
                            // Cleared meanwhile: the watch went with its queue.
                            _ => None,
                        }
                    }
                    Err(_) => None,
                }
            }
        };
        let listing = Arc::new(read(opened)?);
        if let Some(stamp) = stamp {
            let mut state = self.drained();
            if let Some(watched) = state.watched.as_mut()
                && watched.stamp_of(parent.as_deref()) == parent_stamp
            {
                watched.keep(dir, parent.as_deref(), stamp, Arc::clone(&listing));
            }
        }
        Ok(listing)
    }

    /// Lists `parent`, the parent of a directory listed again, and the
    /// directories above it that are not kept, from the highest down, each
    /// as a directory seen before (a search below it repeats), so that they
    /// are kept ([`Watched::climb`]). It stops at the first that may not be
    /// kept once those above it are, or was not: a tree that cannot be kept
    /// costs a call at most one listing more.
    fn keep_above(&self, root: &FilesRoot, parent: &Path, open_above: &OpenAbove) {
        let climb = match self.drained().watched.as_ref() {
            Some(watched) => watched.climb(root, parent),
            None => return,
        };
        for dir in climb {
            {
                let state = self.inner.lock().unwrap();
                let Some(watched) = state.watched.as_ref() else { return };
                if watched.is_kept(&dir) {
                    continue;
                }
                // What the listing above says of it now: a directory
                // swapped for a symlink is not listed through it.
                let Some(above) = real_parent(root, &dir) else { return };
                if !matches!(watched.may_keep(&dir, above.as_deref()), MayKeep::Yes) {
                    return;
                }
            }
            let new = self.saw(&dir);
            if self
                .list(root, &dir, || open_above(&dir), super::list_opened, None)
                .is_err()
                && new
            {
                // Remembered only if it could be listed.
                self.unsee(&dir);
            }
            let state = self.inner.lock().unwrap();
            if !state.watched.as_ref().is_some_and(|watched| watched.is_kept(&dir)) {
                return;
            }
        }
    }

    /// The tree's state, locked, every event pending before this call read.
    /// The queues are polled outside the lock, so the lock is held for no
    /// system call when nothing is pending: the workers of a warm walk look
    /// up a directory each at a time, and a lock held across a `poll` had
    /// them waiting on each other.
    fn drained(&self) -> std::sync::MutexGuard<'_, State> {
        let queues = {
            let mut state = self.inner.lock().unwrap();
            let state = &mut *state;
            if state.watched.is_none() && !state.unwatchable {
                state.watched = Watched::start(&self.stamps);
                state.unwatchable = state.watched.is_none();
            }
            state
                .watched
                .as_ref()
                .filter(|w| !w.dirs.is_empty())
                .map(|w| w.queues.clone())
        };
        if let Some(queues) = &queues {
            queues.poll();
        }
        let mut state = self.inner.lock().unwrap();
        if let Some(watched) = state.watched.as_mut() {
            match queues {
                // The queues polled are still this tree's (no `clear` since).
                Some(queues) if Arc::ptr_eq(&queues, &watched.queues) => watched.apply(),
                _ => watched.drain(),
            }
        }
        state
    }

    /// What the tree says of `dir` now, under its lock, after draining.
    fn look_up(&self, root: &FilesRoot, dir: &Path, parent: Option<&Path>) -> Lookup {
        let Some(root_identity) = root.identity else {
            return Lookup::Read;
        };
        let mut state = self.drained();
        let State { watched, seen, .. } = &mut *state;
        let Some(watched) = watched.as_mut() else {
            return Lookup::Read;
        };
        watched.same_root(&root.at, root_identity);
        if let Some(listing) = watched.dirs.get(dir.as_os_str()).and_then(|d| d.listing.clone()) {
            return Lookup::Kept(listing);
        }
        if !seen.contains(dir) {
            return Lookup::FirstSight;
        }
        match watched.may_keep(dir, parent) {
            MayKeep::Yes => {}
            MayKeep::No => return Lookup::Read,
            MayKeep::OnceParentIs => return Lookup::ParentUnkept,
        }
        // The parent's record as it is now, when this directory is found
        // listed in it: any event in the parent from now on (a swap of this
        // path before it is even watched) restamps or removes it, and the
        // listing is not kept.
        Lookup::Watch {
            parent_stamp: watched.stamp_of(parent),
        }
    }

    /// Remembers that `dir` was listed, within the bounds; whether it was
    /// not remembered before.
    fn saw(&self, dir: &Path) -> bool {
        self.inner.lock().unwrap().seen.insert(dir)
    }

    /// Forgets that `dir` was listed: it was remembered before it was
    /// listed, and could not be.
    fn unsee(&self, dir: &Path) {
        self.inner.lock().unwrap().seen.remove(dir);
    }

    /// Which of `dirs` (each absolute, inside its root) have a kept
    /// listing now, the pending events read first: directories with no
    /// symlink on their path, watched up to the root.
    pub fn kept(&self, dirs: &[Option<(&FilesRoot, &Path)>]) -> Vec<bool> {
        let mut kept = vec![false; dirs.len()];
        if dirs.is_empty() {
            return kept;
        }
        let mut state = self.drained();
        let Some(watched) = state.watched.as_mut() else {
            return kept;
        };
        let mut roots_checked: Vec<&Path> = Vec::new();
        for (kept, dir) in kept.iter_mut().zip(dirs) {
            let Some((root, dir)) = dir else { continue };
            let Some(root_identity) = root.identity else { continue };
            if !roots_checked.contains(&root.at.as_path()) {
                watched.same_root(&root.at, root_identity);
                roots_checked.push(&root.at);
            }
            *kept = watched.dirs.get(dir.as_os_str()).is_some_and(|d| d.listing.is_some());
        }
        kept
    }

    /// What the session knows of its files' contents.
    pub fn contents(&self) -> &KnownContents {
        &self.contents
    }

    /// What the tree holds and has served.
    pub fn stats(&self) -> WarmStats {
        let state = self.inner.lock().unwrap();
        let (known_files, unread_files) = self.contents.stats();
        WarmStats {
            kept_dirs: state
                .watched
                .as_ref()
                .map_or(0, |w| w.dirs.values().filter(|d| d.listing.is_some()).count()),
            hits: self.hits.load(Ordering::Relaxed),
            known_files,
            unread_files,
        }
    }

    /// Forgets every listing (after a call that may have written); what it
    /// knows of contents stays, checked at each use.
    pub fn clear(&self) {
        // Closing the inotify descriptor removes every watch.
        self.inner.lock().unwrap().watched = None;
    }
}

#[cfg(test)]
mod tests {
    use super::policy::MAX_KEPT_PATH_BYTES;
    use super::*;
    use std::path::PathBuf;
    use std::sync::mpsc;

    /// The root opened at `at`, as a call sees it.
    pub(super) fn root_at(at: &Path) -> FilesRoot {
        FilesRoot::new(at, std::fs::File::open(at).unwrap())
    }

    /// `dir`'s listing through the tree, opened and read for real; `during`
    /// runs between the read and the keep.
    fn list(tree: &WarmTree, root: &FilesRoot, dir: &Path, during: impl FnOnce()) -> Vec<String> {
        let open = || std::fs::File::open(dir).map_err(|e| e.to_string());
        let read = |opened: std::fs::File| {
            let listing = super::super::list_opened(opened);
            during();
            listing
        };
        let mut names: Vec<String> = tree
            .list(root, dir, open, read, None)
            .unwrap()
            .iter()
            .map(|e| e.name.clone())
            .collect();
        names.sort();
        names
    }

    /// A root holding `d/old`, its tree with the root kept (listed twice)
    /// and `d` listed once, so that its next listing watches and keeps it.
    fn kept_root_and_seen_d() -> (tempfile::TempDir, PathBuf, PathBuf, WarmTree, FilesRoot) {
        let tmp = tempfile::tempdir().unwrap();
        let at = std::fs::canonicalize(tmp.path()).unwrap();
        let d = at.join("d");
        std::fs::create_dir_all(d.join("old")).unwrap();
        let tree = WarmTree::default();
        let root = root_at(&at);
        assert_eq!(list(&tree, &root, &at, || {}), ["d"]);
        assert_eq!(list(&tree, &root, &at, || {}), ["d"]);
        assert_eq!(list(&tree, &root, &d, || {}), ["old"]);
        assert_eq!(tree.stats().kept_dirs, 1);
        (tmp, at, d, tree, root)
    }

    #[test]
    fn only_directories_that_open_are_remembered_within_the_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let at = std::fs::canonicalize(tmp.path()).unwrap();
        let tree = WarmTree::default();
        let root = root_at(&at);
        let missing = at.join("missing");
        let open = || std::fs::File::open(&missing).map_err(|e| e.to_string());
        assert!(tree.list(&root, &missing, open, |_| Ok(Vec::new()), None).is_err());
        assert!(
            tree.inner.lock().unwrap().seen.paths.is_empty(),
            "a path that did not open"
        );
        list(&tree, &root, &at, || {});
        assert_eq!(tree.inner.lock().unwrap().seen.bytes, at.as_os_str().len());
        // Past the bytes, nothing more is remembered (and so nothing kept).
        tree.inner.lock().unwrap().seen.bytes = MAX_KEPT_PATH_BYTES;
        std::fs::create_dir(at.join("d")).unwrap();
        list(&tree, &root, &at.join("d"), || {});
        list(&tree, &root, &at, || {});
        list(&tree, &root, &at.join("d"), || {});
        assert_eq!(tree.inner.lock().unwrap().seen.paths.len(), 1);
        assert_eq!(tree.stats().kept_dirs, 1, "the root only");
    }

    /// A read of `d` that began before `d` was replaced (`replace`) ends
    /// while a read of the new `d` is under way: the old listing must not
    /// be kept under the new directory's watch.
    fn an_old_read_is_never_kept_for_a_new_directory(replace: impl FnOnce(&WarmTree, &Path)) {
        let (_tmp, at, d, tree, root) = kept_root_and_seen_d();

        let (read_done, wait_read) = mpsc::channel();
        let (new_watched, wait_new) = mpsc::channel();
        let (old_kept, wait_kept) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let (tree, first_root, d, at) = (&tree, &root, &d, &at);
            let old = scope.spawn(move || {
                list(tree, first_root, d, || {
                    read_done.send(()).unwrap();
                    wait_new.recv().unwrap();
                })
            });
            wait_read.recv().unwrap();
            replace(tree, at);
            assert_eq!(list(tree, &root_at(at), at, || {}), ["d", "d-aside"]);
            let new = scope.spawn(move || {
                list(tree, &root_at(at), d, || {
                    new_watched.send(()).unwrap();
                    let _ = wait_kept.recv();
                })
            });
            assert_eq!(old.join().unwrap(), ["old"]);
            old_kept.send(()).unwrap();
            assert_eq!(new.join().unwrap(), ["new"]);
        });
        assert_eq!(
            list(&tree, &root, &d, || {}),
            ["new"],
            "the warm answer is the new directory's"
        );
    }

    /// A root holding `a/b/c`, its tree, and a lister of `a/b` as a walk's
    /// start that records the directories it opens above it; `during`
    /// runs as each opens.
    struct Climb {
        _tmp: tempfile::TempDir,
        at: PathBuf,
        b: PathBuf,
        tree: WarmTree,
        root: FilesRoot,
        opened: std::cell::RefCell<Vec<PathBuf>>,
    }

    impl Climb {
        fn new() -> Climb {
            let tmp = tempfile::tempdir().unwrap();
            let at = std::fs::canonicalize(tmp.path()).unwrap();
            let b = at.join("a/b");
            std::fs::create_dir_all(b.join("c")).unwrap();
            let root = root_at(&at);
            Climb {
                _tmp: tmp,
                at,
                b,
                tree: WarmTree::default(),
                root,
                opened: Default::default(),
            }
        }

        fn start(&self, during: &dyn Fn(&Path)) -> Vec<String> {
            let open_above = |dir: &Path| {
                self.opened.borrow_mut().push(dir.to_path_buf());
                during(dir);
                std::fs::File::open(dir).map_err(|e| e.to_string())
            };
            let open = || std::fs::File::open(&self.b).map_err(|e| e.to_string());
            let listing = self
                .tree
                .list(&self.root, &self.b, open, super::super::list_opened, Some(&open_above));
            listing.unwrap().iter().map(|e| e.name.clone()).collect()
        }
    }

    /// A walk that starts at `a/b` and never at the root: its second start
    /// lists the root and `a` first, once each, and all three are kept; a
    /// listing that is not a start lists nothing above.
    #[test]
    fn a_start_listed_again_has_the_directories_above_it_kept() {
        let climb = Climb::new();
        assert_eq!(climb.start(&|_| {}), ["c"]);
        assert!(climb.opened.borrow().is_empty(), "a first sight lists nothing above");
        assert_eq!(climb.tree.stats().kept_dirs, 0);
        assert_eq!(climb.start(&|_| {}), ["c"]);
        assert_eq!(*climb.opened.borrow(), [climb.at.clone(), climb.at.join("a")]);
        assert_eq!(climb.tree.stats().kept_dirs, 3, "the root, a and a/b");
        let hits = climb.tree.stats().hits;
        assert_eq!(climb.start(&|_| {}), ["c"]);
        assert_eq!(climb.tree.stats().hits, hits + 1);
        assert_eq!(climb.opened.borrow().len(), 2, "nothing above is listed once kept");

        // Without `open_above` (not a walk's start), nothing above is listed
        // and the directory is not kept.
        let other = WarmTree::default();
        assert_eq!(list(&other, &climb.root, &climb.b, || {}), ["c"]);
        assert_eq!(list(&other, &climb.root, &climb.b, || {}), ["c"]);
        assert_eq!(other.stats().kept_dirs, 0);
    }

    /// Where there is no room to watch every directory above a start and
    /// the start itself, a start lists nothing above it.
    #[test]
    fn a_tree_without_room_for_the_climb_lists_nothing_above() {
        let climb = Climb::new();
        climb.start(&|_| {});
        // Room for one watch: the root's, not a's nor a/b's.
        climb.tree.inner.lock().unwrap().watched.as_mut().unwrap().max_watches = 1;
        for _ in 0..3 {
            assert_eq!(climb.start(&|_| {}), ["c"]);
        }
        assert!(climb.opened.borrow().is_empty());
        assert_eq!(climb.tree.stats().kept_dirs, 0);
    }

    /// A directory above a start swapped for a symlink (inside the root)
    /// is not listed through it by a climb, and nothing below it is kept.
    #[test]
    fn a_climb_stops_at_a_symlink() {
        let climb = Climb::new();
        climb.start(&|_| {});
        climb.start(&|_| {});
        assert_eq!(climb.tree.stats().kept_dirs, 3);
        std::fs::rename(climb.at.join("a"), climb.at.join("a-real")).unwrap();
        std::os::unix::fs::symlink("a-real", climb.at.join("a")).unwrap();
        for _ in 0..2 {
            assert_eq!(climb.start(&|_| {}), ["c"]);
        }
        assert_eq!(
            *climb.opened.borrow(),
            [climb.at.clone(), climb.at.join("a"), climb.at.clone()],
            "after the swap, the root only, once: its listing is kept"
        );
        assert_eq!(climb.tree.stats().kept_dirs, 1, "the root");
    }

    /// A climb whose directory is swapped as it opens keeps neither it nor
    /// the start: the start's answer, and the next, are the new one's.
    #[test]
    fn a_directory_swapped_as_a_climb_opens_it_is_not_kept() {
        let climb = Climb::new();
        climb.start(&|_| {});
        let swap = |dir: &Path| {
            if dir == climb.at.join("a") {
                std::fs::rename(climb.at.join("a"), climb.at.join("a-old")).unwrap();
                std::fs::create_dir_all(climb.b.join("new")).unwrap();
            }
        };
        assert_eq!(climb.start(&swap), ["new"]);
        assert_eq!(climb.tree.stats().kept_dirs, 0, "the rename dropped the root's listing");
        assert_eq!(climb.start(&|_| {}), ["new"]);
        std::fs::remove_dir_all(climb.at.join("a")).unwrap();
        std::fs::rename(climb.at.join("a-old"), climb.at.join("a")).unwrap();
        assert_eq!(climb.start(&|_| {}), ["c"]);
        assert_eq!(climb.start(&|_| {}), ["c"]);
        assert_eq!(climb.tree.stats().kept_dirs, 3, "kept again once the tree holds still");
    }

    #[test]
    fn a_directory_swapped_between_its_open_and_its_watch_is_not_kept() {
        let (_tmp, at, d, tree, root) = kept_root_and_seen_d();
        // Opened, then swapped and its parent listed (and kept) again by
        // another call, all before the watch: the swap's events are gone.
        let open = || {
            let opened = std::fs::File::open(&d).map_err(|e| e.to_string());
            swap(&at);
            assert_eq!(list(&tree, &root, &at, || {}), ["d", "d-aside"]);
            opened
        };
        let listing = tree.list(&root, &d, open, super::super::list_opened, None).unwrap();
        assert_eq!(listing.len(), 1);
        assert_eq!(listing[0].name, "old", "the read was of the old directory");
        assert_eq!(list(&tree, &root, &d, || {}), ["new"], "but that is not what is kept");
    }

    fn swap(at: &Path) {
        std::fs::rename(at.join("d"), at.join("d-aside")).unwrap();
        std::fs::create_dir_all(at.join("d/new")).unwrap();
    }

    #[test]
    fn a_read_across_a_swap_is_not_kept_under_the_new_watch() {
        an_old_read_is_never_kept_for_a_new_directory(|_, at| swap(at));
    }

    #[test]
    fn a_read_across_a_clear_is_not_kept_in_the_new_tree() {
        // The swap's events go with the dropped instance: only the stamps
        // tell the two records apart.
        an_old_read_is_never_kept_for_a_new_directory(|tree, at| {
            swap(at);
            tree.clear();
        });
    }
}
