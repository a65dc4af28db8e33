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

use super::contents::KnownContents;
use super::{Entry, FilesRoot, Kind, WarmStats};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use nix::sys::statfs::{self, FsType};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::ops::Bound;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Directories above a walk's start listed at most to keep it
/// ([`WarmTree::keep_above`]); a start deeper below unkept ones is listed
/// afresh each time.
const MAX_CLIMB: usize = 64;

/// Entries the warm tree keeps at most, over all its directories (about
/// 16 MiB of names for typical source trees); past it, `list-dir` reads the
/// directory each time.
pub const MAX_ENTRIES: usize = 250_000;

/// Bytes of directory paths the tree keeps at most: those of watched
/// directories (each held twice, by path and by watch), and apart from
/// them those of directories listed once. A component chooses the paths it
/// lists, up to `PATH_MAX` each, so a count alone would not bound them.
pub const MAX_KEPT_PATH_BYTES: usize = 16 << 20;

/// What the watches report: a name in a directory appearing, disappearing
/// or changing kind, and the directory itself going or changing mode.
fn watch_mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_ONLYDIR
}

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
    /// Directories listed once this session. Only a directory listed again
    /// is watched and kept: a session's first search pays nothing for the
    /// tree, a search that repeats one builds it. A hint, not a fact about
    /// the files, so it outlives `clear` (a shell command between two
    /// searches does not make the next one a first again). Only
    /// directories that could be opened are remembered.
    seen: HashSet<OsString>,
    /// Bytes of the paths in `seen`, against [`MAX_KEPT_PATH_BYTES`].
    seen_bytes: usize,
    /// inotify or the mount table could not be had: the session walks, and
    /// does not ask the kernel again at every lookup (a full instance table
    /// stays full).
    unwatchable: bool,
}

/// The kept directories and the inotify instance watching them.
struct Watched {
    /// What tells of changes; shared so a lookup polls it outside the lock.
    queues: Arc<Queues>,
    /// Every watched directory by its absolute path, compared as bytes
    /// (`Path`'s own order parses both paths into components at every
    /// comparison, which was a tenth of a warm glob); [`BTreeMap`] so a
    /// subtree is one range ([`Watched::forget_below`]).
    dirs: BTreeMap<OsString, Dir>,
    paths: HashMap<WatchDescriptor, PathBuf>,
    /// The directory each root path was when its listings were read.
    roots: HashMap<OsString, Identity>,
    /// Kept entries plus watched directories, against [`MAX_ENTRIES`].
    entries: usize,
    /// Bytes of the watched directories' paths in `dirs` and `paths`,
    /// against [`MAX_KEPT_PATH_BYTES`].
    path_bytes: usize,
    /// Watches this tree may hold ([`watch_budget`]).
    max_watches: usize,
    /// The tree's stamp counter ([`WarmTree`]'s, which outlives this).
    stamps: Arc<AtomicU64>,
    /// Watches removed so far. The kernel answers every `add_watch` of one
    /// directory with the same descriptor, so a watch another worker added
    /// outside the lock may be one removed meanwhile (its `IN_IGNORED`
    /// read and dropped before it is recorded): it is recorded only if no
    /// watch was removed since its step was decided.
    removals: u64,
}

/// What reports changes: the inotify instance, and the mount table.
struct Queues {
    inotify: Inotify,
    /// `/proc/self/mountinfo`, for mounts and unmounts: only held open here
    /// (epoll forgets a file when its last descriptor closes) and asked
    /// through `ready`.
    _mounts: std::fs::File,
    /// Both of them in one epoll set. A `poll` of the two asked each file
    /// afresh at every lookup (a warm walk makes one per directory: a
    /// twelfth of its time); the set is told of a change when it is queued,
    /// during the system call that makes it, so waiting on it with no
    /// timeout reads a ready list, and an empty one costs next to nothing.
    ready: Epoll,
    /// What polls saw and no lock holder has applied yet: [`SEEN_MOUNTS`],
    /// [`SEEN_EVENTS`]. Readiness may reach one waiter only: the mount
    /// table tells a change to the first look at it, and some kernels let
    /// an `epoll_wait` with no timeout answer nothing while another thread
    /// scans the same set (a race fixed upstream in 2025). So every poll
    /// leaves what it saw here, and the lock holder takes what every poll
    /// finished or under way saw.
    seen: AtomicU8,
    /// Polls under way: one may have seen something it has not yet left
    /// in `seen`.
    polling: AtomicUsize,
}

/// The mount table changed; also its tag in [`Queues::ready`].
const SEEN_MOUNTS: u8 = 1;
/// Inotify events are queued; also the queue's tag in [`Queues::ready`].
const SEEN_EVENTS: u8 = 2;

impl Queues {
    /// The queues, or `None` when epoll refuses them. A mount change between
    /// opening the table and adding it is not told; nothing is kept yet.
    fn new(inotify: Inotify, mounts: std::fs::File) -> Option<Queues> {
        let ready = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).ok()?;
        let tagged = |flags, seen: u8| EpollEvent::new(flags, u64::from(seen));
        ready.add(&mounts, tagged(EpollFlags::EPOLLPRI, SEEN_MOUNTS)).ok()?;
        ready.add(&inotify, tagged(EpollFlags::EPOLLIN, SEEN_EVENTS)).ok()?;
        Some(Queues {
            inotify,
            _mounts: mounts,
            ready,
            seen: AtomicU8::new(0),
            polling: AtomicUsize::new(0),
        })
    }

    /// Looks at what is pending, in one system call, and leaves it in
    /// `seen`: a lookup that finds nothing pending (the common case, once
    /// per directory of a warm walk) makes no other.
    fn poll(&self) {
        self.polling.fetch_add(1, Ordering::SeqCst);
        let seen = self.poll_once();
        if seen != 0 {
            self.seen.fetch_or(seen, Ordering::SeqCst);
        }
        self.polling.fetch_sub(1, Ordering::SeqCst);
    }

    /// What every poll finished or under way saw since the last lock holder
    /// asked: asked under the tree's lock, after this worker's own poll.
    /// A poll under way is one system call long, and then waits for the
    /// lock, so the wait ends.
    fn take_seen(&self) -> u8 {
        while self.polling.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        self.seen.swap(0, Ordering::SeqCst)
    }

    /// One look at the ready list: [`SEEN_MOUNTS`] and [`SEEN_EVENTS`] for
    /// what it holds. The table is ready only with a change (it was added
    /// for `EPOLLPRI`, and `EPOLLERR` comes with it).
    fn poll_once(&self) -> u8 {
        let mut ready = [EpollEvent::empty(); 2];
        match self.ready.wait(&mut ready, EpollTimeout::ZERO) {
            Ok(count) => ready[..count.min(ready.len())].iter().fold(0, |seen, event| {
                seen | (event.data() as u8 & (SEEN_MOUNTS | SEEN_EVENTS))
            }),
            // No answer: trust nothing, and read whatever is queued.
            Err(_) => SEEN_MOUNTS | SEEN_EVENTS,
        }
    }
}

/// A directory's device and inode.
pub(super) type Identity = (u64, u64);

/// What watching a directory takes.
enum WatchStep {
    /// It is watched already; its record's stamp.
    Known(u64),
    /// A watch added through this queue, then recorded if no watch was
    /// removed since ([`Watched::removals`] was this).
    Add(Arc<Queues>, u64),
    /// It cannot be watched.
    Not,
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

/// Whether a directory's listing may be kept ([`Watched::may_keep`]).
enum MayKeep {
    Yes,
    No,
    /// Not while its parent's listing is not kept.
    OnceParentIs,
}

/// A watched directory: its watch, the directory it watches, its listing if
/// kept, and the stamp of this record's state (taken afresh whenever an
/// event makes the listing untrue, so a read across an event is not kept).
struct Dir {
    wd: WatchDescriptor,
    identity: Identity,
    listing: Option<Arc<Vec<Entry>>>,
    stamp: u64,
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
                let through = format!("/proc/self/fd/{}", opened.as_raw_fd());
                match queues.inotify.add_watch(through.as_str(), watch_mask()) {
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
        if !seen.contains(dir.as_os_str()) {
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
        let mut state = self.inner.lock().unwrap();
        let bytes = dir.as_os_str().len();
        let new = state.seen.len() < MAX_ENTRIES
            && state.seen_bytes + bytes <= MAX_KEPT_PATH_BYTES
            && state.seen.insert(dir.as_os_str().to_owned());
        if new {
            state.seen_bytes += bytes;
        }
        new
    }

    /// Forgets that `dir` was listed: it was remembered before it was
    /// listed, and could not be.
    fn unsee(&self, dir: &Path) {
        let mut state = self.inner.lock().unwrap();
        if state.seen.remove(dir.as_os_str()) {
            state.seen_bytes -= dir.as_os_str().len();
        }
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

impl Watched {
    /// An empty tree; `None` where inotify or the mount table is
    /// unavailable.
    fn start(stamps: &Arc<AtomicU64>) -> Option<Watched> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mounts = std::fs::File::open("/proc/self/mountinfo").ok()?;
        Some(Watched {
            queues: Arc::new(Queues::new(inotify, mounts)?),
            dirs: BTreeMap::new(),
            paths: HashMap::new(),
            roots: HashMap::new(),
            entries: 0,
            path_bytes: 0,
            max_watches: watch_budget(),
            stamps: stamps.clone(),
            removals: 0,
        })
    }

    /// Forgets what was read under `at` if the root there is now another
    /// directory (a parent of it renamed and another put in its place: no
    /// watch of ours sees that).
    fn same_root(&mut self, at: &Path, now: Identity) {
        let before = self.roots.get(at.as_os_str()).copied();
        if before == Some(now) {
            return;
        }
        if before.is_some() {
            self.forget_below(at);
        }
        self.roots.insert(at.as_os_str().to_owned(), now);
    }

    /// The directories to list, from the highest down, so that the
    /// directory below `parent` may be kept: `parent` and each directory
    /// above it whose listing is not kept, up to the root or one whose
    /// parent's kept listing names it. Empty when, as far as the tree
    /// knows, one of them may not be kept (not a real path, or no room for
    /// them all) or they are more than [`MAX_CLIMB`].
    fn climb(&self, root: &FilesRoot, parent: &Path) -> Vec<PathBuf> {
        let mut climb = Vec::new();
        let mut at = parent.to_path_buf();
        loop {
            if climb.len() == MAX_CLIMB {
                return Vec::new();
            }
            let Some(above) = real_parent(root, &at) else {
                return Vec::new();
            };
            match self.may_keep(&at, above.as_deref()) {
                MayKeep::No => return Vec::new(),
                MayKeep::Yes => {
                    climb.push(at);
                    break;
                }
                // Its parent is not kept either: climb on.
                MayKeep::OnceParentIs => {
                    climb.push(at);
                    let Some(above) = above else { return Vec::new() };
                    at = above;
                }
            }
        }
        // Room for a watch of each not watched yet, the start's too.
        let unwatched: Vec<&PathBuf> = climb
            .iter()
            .filter(|dir| !self.dirs.contains_key(dir.as_os_str()))
            .collect();
        let bytes: usize = unwatched.iter().map(|dir| 2 * dir.as_os_str().len()).sum();
        if !self.has_room_for_watches(unwatched.len() + 1, bytes) {
            return Vec::new();
        }
        climb.reverse();
        climb
    }

    /// Whether `dir`'s listing is kept.
    fn is_kept(&self, dir: &Path) -> bool {
        self.dirs.get(dir.as_os_str()).is_some_and(|d| d.listing.is_some())
    }

    /// Whether `dir`'s listing may be kept: it is a real path (see the
    /// module's documentation) and there is room.
    fn may_keep(&self, dir: &Path, parent: Option<&Path>) -> MayKeep {
        if self.entries >= MAX_ENTRIES {
            return MayKeep::No;
        }
        let Some(parent) = parent else { return MayKeep::Yes };
        // Names are compared as the listing holds them, decoded; a name
        // with U+FFFD may stand for another (undecodable) one.
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            return MayKeep::No;
        };
        if name.contains(char::REPLACEMENT_CHARACTER) {
            return MayKeep::No;
        }
        let Some(listing) = self.dirs.get(parent.as_os_str()).and_then(|p| p.listing.as_ref()) else {
            return MayKeep::OnceParentIs;
        };
        // Listings are sorted by name (`list_opened`).
        match listing.binary_search_by(|e| e.name.as_str().cmp(name)) {
            Ok(at) if matches!(listing[at].kind, Kind::Directory) => MayKeep::Yes,
            _ => MayKeep::No,
        }
    }

    /// What watching `dir` (opened, with `facts`) takes.
    fn watch_step(&self, dir: &Path, facts: Opened) -> WatchStep {
        if let Some(known) = self.dirs.get(dir.as_os_str()) {
            return match known.identity == facts.identity {
                true => WatchStep::Known(known.stamp),
                false => WatchStep::Not,
            };
        }
        match self.has_room_for(dir) && facts.local {
            true => WatchStep::Add(self.queues.clone(), self.removals),
            false => WatchStep::Not,
        }
    }

    /// Whether one more directory may be watched at `dir`.
    fn has_room_for(&self, dir: &Path) -> bool {
        self.has_room_for_watches(1, 2 * dir.as_os_str().len())
    }

    /// Whether `watches` more directories may be watched, their paths
    /// taking `path_bytes` more.
    fn has_room_for_watches(&self, watches: usize, path_bytes: usize) -> bool {
        self.dirs.len() + watches <= self.max_watches
            && self.entries + watches <= MAX_ENTRIES
            && self.path_bytes + path_bytes <= MAX_KEPT_PATH_BYTES
    }

    /// Records the watch `wd`, just added through the opened directory
    /// `identity` at `dir` by a step taken when [`Watched::removals`] was
    /// `removals`; the stamp of the record `dir` has now, or `None` when it
    /// cannot be watched (or the record is of another directory that was
    /// at this path). Events the watch queued before this were dropped by
    /// `apply` as of no record; they are of changes before the read, which
    /// begins after this.
    fn record(&mut self, dir: &Path, wd: WatchDescriptor, identity: Identity, removals: u64) -> Option<u64> {
        if let Some(known) = self.dirs.get(dir.as_os_str()) {
            // Another worker's record of the same directory (the same
            // inode's watch is the same descriptor).
            return (known.identity == identity).then_some(known.stamp);
        }
        if self.removals != removals {
            // `wd` may be a watch removed since it was added: not recorded,
            // so nothing is kept that it would have to keep true.
            return None;
        }
        if self.paths.contains_key(&wd) {
            // The same directory under another path (a bind mount): one
            // watch cannot stand for two paths, so neither is kept.
            return None;
        }
        if !self.has_room_for(dir) {
            self.remove_watch(wd);
            return None;
        }
        let path_bytes = 2 * dir.as_os_str().len();
        let opened_identity = identity;
        let stamp = self.next_stamp();
        self.paths.insert(wd, dir.to_path_buf());
        self.dirs.insert(
            dir.as_os_str().to_owned(),
            Dir {
                wd,
                identity: opened_identity,
                listing: None,
                stamp,
            },
        );
        self.entries += 1;
        self.path_bytes += path_bytes;
        Some(stamp)
    }

    /// The stamp of `dir`'s record (`None` for no directory or no record).
    fn stamp_of(&self, dir: Option<&Path>) -> Option<u64> {
        self.dirs.get(dir?.as_os_str()).map(|d| d.stamp)
    }

    /// Keeps `listing` for `dir` if the watch record it was read under
    /// (`stamp`) is still there unchanged, the parent still names it, and
    /// there is room.
    fn keep(&mut self, dir: &Path, parent: Option<&Path>, stamp: u64, listing: Arc<Vec<Entry>>) {
        // Names are looked up in a kept listing by binary search.
        let sorted = listing.is_sorted_by(|a, b| a.name < b.name);
        let may = matches!(self.may_keep(dir, parent), MayKeep::Yes);
        if !sorted || !may || self.entries + listing.len() > MAX_ENTRIES {
            return;
        }
        let Some(kept) = self.dirs.get_mut(dir.as_os_str()) else {
            return;
        };
        if kept.stamp != stamp || kept.listing.is_some() {
            return;
        }
        self.entries += listing.len();
        kept.listing = Some(listing);
    }

    /// Reads every pending event and drops what it makes untrue.
    fn drain(&mut self) {
        if self.dirs.is_empty() {
            // Nothing to make untrue (a mount seen later still drops all).
            return;
        }
        self.queues.poll();
        self.apply();
    }

    /// Drops what the polls saw makes untrue, reading the events.
    fn apply(&mut self) {
        let seen = self.queues.take_seen();
        if seen & SEEN_MOUNTS != 0 {
            self.forget_all();
        }
        if seen & SEEN_EVENTS == 0 {
            return;
        }
        loop {
            let events = match self.queues.inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                Ok(_) | Err(nix::errno::Errno::EAGAIN) => return,
                Err(_) => {
                    self.forget_all();
                    return;
                }
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    // Events were lost: nothing kept can be trusted.
                    self.forget_all();
                    continue;
                }
                let Some(dir) = self.paths.get(&event.wd).cloned() else {
                    continue;
                };
                let gone_or_came = AddWatchFlags::IN_CREATE
                    | AddWatchFlags::IN_DELETE
                    | AddWatchFlags::IN_MOVED_FROM
                    | AddWatchFlags::IN_MOVED_TO;
                match event.name {
                    // A name in the directory appeared, went or changed kind:
                    // the listing is untrue, and so is anything kept below
                    // the name. (A child's mode or times changing leaves the
                    // listing true; a child directory's own watch reports
                    // its mode.)
                    Some(name) if event.mask.intersects(gone_or_came) => {
                        self.unlist(&dir);
                        self.forget_below(&dir.join(name));
                    }
                    Some(_) => {}
                    // The directory itself went, moved or changed mode (then
                    // it, or what is below it, may no longer be listable), or
                    // its watch went.
                    None => self.forget_below(&dir),
                }
            }
        }
    }

    /// A stamp no record has had.
    fn next_stamp(&self) -> u64 {
        self.stamps.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Drops `dir`'s listing, keeping its watch (its subdirectories stay);
    /// a read of it under way is not kept either.
    fn unlist(&mut self, dir: &Path) {
        let stamp = self.next_stamp();
        if let Some(kept) = self.dirs.get_mut(dir.as_os_str()) {
            kept.stamp = stamp;
            if let Some(listing) = kept.listing.take() {
                self.entries -= listing.len();
            }
        }
    }

    /// Drops `top` and everything watched below it, watches too.
    fn forget_below(&mut self, top: &Path) {
        // In byte order the paths below `top` are exactly those that start
        // with `top/`, and they are contiguous (`top-x` may sort between
        // `top` and them, so the range starts at `top/`, not at `top`).
        let mut prefix = top.as_os_str().as_bytes().to_vec();
        if prefix.last() != Some(&b'/') {
            prefix.push(b'/');
        }
        let prefix = OsString::from_vec(prefix);
        let below: Vec<OsString> = std::iter::once(top.as_os_str().to_owned())
            .chain(
                self.dirs
                    .range::<OsStr, _>((Bound::Included(prefix.as_os_str()), Bound::Unbounded))
                    .take_while(|(path, _)| path.as_bytes().starts_with(prefix.as_bytes()))
                    .map(|(path, _)| path.clone()),
            )
            .collect();
        for path in below {
            if let Some(gone) = self.dirs.remove(&path) {
                self.paths.remove(&gone.wd);
                self.remove_watch(gone.wd);
                self.entries -= 1 + gone.listing.map_or(0, |listing| listing.len());
                self.path_bytes -= 2 * path.len();
            }
        }
    }

    /// Removes the watch `wd`, counted in [`Watched::removals`].
    fn remove_watch(&mut self, wd: WatchDescriptor) {
        self.removals += 1;
        // A watch the kernel already removed answers an error; either way it is gone.
        let _ = self.queues.inotify.rm_watch(wd);
    }

    /// Drops everything.
    fn forget_all(&mut self) {
        for (_, gone) in std::mem::take(&mut self.dirs) {
            self.remove_watch(gone.wd);
        }
        self.paths.clear();
        self.roots.clear();
        self.entries = 0;
        self.path_bytes = 0;
    }
}

/// What watching an opened directory needs to know of it, found before the
/// lock is taken.
#[derive(Clone, Copy)]
struct Opened {
    identity: Identity,
    /// On a filesystem whose every change reaches a watch.
    local: bool,
}

impl Opened {
    fn examine(dir: &std::fs::File) -> Option<Opened> {
        Some(Opened {
            identity: identity(dir)?,
            local: reports_every_change(dir),
        })
    }
}

/// `file`'s device and inode.
pub(super) fn identity(file: &std::fs::File) -> Option<Identity> {
    file.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// The watches one tree may hold: a quarter of the user's inotify limit
/// (`fs.inotify.max_user_watches`, 8,192 on older kernels), so editors and
/// file watchers keep the rest.
fn watch_budget() -> usize {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|limit| limit.trim().parse::<usize>().ok())
        .unwrap_or(8192)
        / 4
}

/// For a directory that may be kept: `Some(None)` for the root itself,
/// `Some(Some(parent))` for a path below it made only of plain names;
/// `None` for anything else (`.`, `..`, a trailing slash's oddities), which
/// is always listed afresh.
fn real_parent(root: &FilesRoot, dir: &Path) -> Option<Option<PathBuf>> {
    // What a walk asks with, found without parsing components (which
    // took a twentieth of a warm glob).
    if root.holds_plainly(dir) {
        return Some(dir.parent().map(Path::to_path_buf));
    }
    real_parent_by_components(root, dir)
}

/// [`real_parent`] the long way, for any spelling of a path.
fn real_parent_by_components(root: &FilesRoot, dir: &Path) -> Option<Option<PathBuf>> {
    let relative = dir.strip_prefix(&root.at).ok()?;
    if relative.as_os_str().is_empty() {
        // As bytes: `//root` and `/./root` are the root to `Path`'s `==`,
        // but their keys would be other bytes, which `forget_below` of the
        // root (a renamed parent, `same_root`) would not reach.
        return (dir.as_os_str() == root.at.as_os_str()).then_some(None);
    }
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    // `Path::components` quietly drops `.` and repeated slashes; a key must
    // be the path exactly as it will be compared.
    let rebuilt: PathBuf = root.at.join(relative.components().collect::<PathBuf>());
    if rebuilt.as_os_str() != dir.as_os_str() {
        return None;
    }
    Some(dir.parent().map(Path::to_path_buf))
}

/// Whether every change to `dir` reaches its inotify watch: true only for
/// local filesystems, whose changes all pass through this kernel. On NFS,
/// SMB, FUSE and the like another machine or a daemon changes the tree
/// without an event, so a kept listing could go stale silently.
fn reports_every_change(dir: &std::fs::File) -> bool {
    /// ZFS, ramfs and bcachefs, which nix names no constant for.
    const ZFS: FsType = FsType(0x2fc1_2fc1);
    const RAMFS: FsType = FsType(0x8584_58f6);
    const BCACHEFS: FsType = FsType(0xca45_1a4e);
    let Ok(found) = statfs::fstatfs(dir) else {
        return false;
    };
    [
        statfs::EXT4_SUPER_MAGIC, // ext2, ext3 and ext4 share it
        statfs::BTRFS_SUPER_MAGIC,
        statfs::XFS_SUPER_MAGIC,
        statfs::F2FS_SUPER_MAGIC,
        statfs::TMPFS_MAGIC,
        statfs::OVERLAYFS_SUPER_MAGIC,
        ZFS,
        RAMFS,
        BCACHEFS,
    ]
    .contains(&found.filesystem_type())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Paths compare as bytes, where `b-x` and `b.y` sort between `b` and
    /// `b/c`: forgetting `b` drops `b` and everything below it, nothing else.
    #[test]
    fn forgetting_a_directory_drops_exactly_its_subtree() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let stamps = Arc::new(AtomicU64::new(0));
        let watched = &mut Watched::start(&stamps).unwrap();
        for name in ["b", "b-x", "b.y", "b/c", "b/c/d", "bc"] {
            let dir = base.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let opened = std::fs::File::open(&dir).unwrap();
            let facts = Opened::examine(&opened).unwrap();
            assert!(watch(watched, &dir, &opened, facts).is_some(), "{name} is watched");
        }
        watched.forget_below(&base.join("b"));
        let left: Vec<String> = watched
            .dirs
            .keys()
            .map(|k| Path::new(k).strip_prefix(&base).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["b-x", "b.y", "bc"]);
        assert_eq!(watched.paths.len(), 3);
        assert_eq!(watched.entries, 3);
        let path_bytes: usize = watched.dirs.keys().map(|k| 2 * k.len()).sum();
        assert_eq!(watched.path_bytes, path_bytes);
        // Past the bytes of paths, no further directory is watched.
        watched.path_bytes = MAX_KEPT_PATH_BYTES - 2 * base.join("b").as_os_str().len() + 1;
        let opened = std::fs::File::open(base.join("b")).unwrap();
        let facts = Opened::examine(&opened).unwrap();
        assert!(watch(watched, &base.join("b"), &opened, facts).is_none());
        watched.forget_all();
        assert_eq!(watched.path_bytes, 0);
    }

    /// Watches `dir` as [`WarmTree::list`] does, in one borrow.
    fn watch(watched: &mut Watched, dir: &Path, opened: &std::fs::File, facts: Opened) -> Option<u64> {
        match watched.watch_step(dir, facts) {
            WatchStep::Known(stamp) => Some(stamp),
            WatchStep::Not => None,
            WatchStep::Add(queues, removals) => {
                let through = format!("/proc/self/fd/{}", opened.as_raw_fd());
                let wd = queues.inotify.add_watch(through.as_str(), watch_mask()).ok()?;
                watched.record(dir, wd, facts.identity, removals)
            }
        }
    }

    /// Two workers add the same directory's watch (one descriptor); one
    /// records it, and an event removes it before the other records: that
    /// one's record would be a dead watch keeping a listing no event
    /// reaches any more.
    #[test]
    fn a_watch_removed_before_it_is_recorded_is_not_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        let stamps = Arc::new(AtomicU64::new(0));
        let watched = &mut Watched::start(&stamps).unwrap();
        let opened = std::fs::File::open(&dir).unwrap();
        let facts = Opened::examine(&opened).unwrap();
        let add = |watched: &Watched| match watched.watch_step(&dir, facts) {
            WatchStep::Add(queues, removals) => {
                let through = format!("/proc/self/fd/{}", opened.as_raw_fd());
                (
                    queues.inotify.add_watch(through.as_str(), watch_mask()).unwrap(),
                    removals,
                )
            }
            _ => panic!("not watched yet"),
        };
        let (late, late_removals) = add(watched);
        let (first, first_removals) = add(watched);
        assert_eq!(late, first, "one directory, one watch");
        assert!(watched.record(&dir, first, facts.identity, first_removals).is_some());
        watched.forget_below(&dir);
        assert_eq!(watched.record(&dir, late, facts.identity, late_removals), None);
        assert!(watched.dirs.is_empty() && watched.paths.is_empty());
        let (again, removals) = add(watched);
        assert_ne!(again, late, "a new watch, recorded");
        assert!(watched.record(&dir, again, facts.identity, removals).is_some());
    }

    /// What a poll saw reaches the lock holder, even when its own poll saw
    /// nothing: the mount table tells a change to one look, and epoll may
    /// answer nothing to one waiter while another scans the set.
    #[test]
    fn what_another_workers_poll_saw_reaches_the_lock_holder() {
        for seen in [SEEN_MOUNTS, SEEN_EVENTS] {
            let inotify = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
            let queues = Queues::new(inotify, std::fs::File::open("/proc/self/mountinfo").unwrap());
            let queues = Arc::new(queues.unwrap());
            assert_eq!(queues.take_seen(), 0);
            // Another worker inside its poll, which saw something.
            queues.polling.fetch_add(1, Ordering::SeqCst);
            let other = queues.clone();
            let polling = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                other.seen.fetch_or(seen, Ordering::SeqCst);
                other.polling.fetch_sub(1, Ordering::SeqCst);
            });
            queues.poll();
            assert_eq!(queues.take_seen(), seen, "waited for the poll under way");
            polling.join().unwrap();
            assert_eq!(queues.take_seen(), 0, "told once");
        }
    }

    /// A queued inotify event is seen by a poll and read by the holder.
    #[test]
    fn a_queued_event_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
        inotify.add_watch(tmp.path(), watch_mask()).unwrap();
        let queues = Queues::new(inotify, std::fs::File::open("/proc/self/mountinfo").unwrap()).unwrap();
        queues.poll();
        assert_eq!(queues.take_seen(), 0);
        std::fs::write(tmp.path().join("new"), "").unwrap();
        queues.poll();
        assert_eq!(queues.take_seen(), SEEN_EVENTS);
    }

    /// Only the root's own spelling is the root: another spelling of it
    /// would be kept under other bytes, out of reach of the root's checks.
    #[test]
    fn only_the_roots_exact_path_is_a_real_path() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = root_at(&base);
        let at = base.to_string_lossy().into_owned();
        assert_eq!(real_parent(&root, &base), Some(None));
        assert_eq!(real_parent(&root, &base.join("a")), Some(Some(base.clone())));
        for other in [
            format!("/{at}"),
            format!("/.{at}"),
            format!("{at}/"),
            format!("{at}/."),
            format!("{at}//a"),
        ] {
            assert_eq!(real_parent(&root, Path::new(&other)), None, "{other}");
        }
        // The byte fast path answers as the components do, for every
        // spelling, and under the filesystem's root too.
        for (root, at) in [(root, at.as_str()), (root_at(Path::new("/")), "")] {
            for rest in [
                "/a", "/a/b", "/a/", "/a/.", "/a/./b", "/a/../b", "//a", "/a//b", "/..", "/a\\b", "/...", "/.a",
                "/a/..",
            ] {
                let dir = format!("{at}{rest}");
                let dir = Path::new(&dir);
                assert_eq!(
                    real_parent(&root, dir),
                    real_parent_by_components(&root, dir),
                    "{dir:?}"
                );
            }
        }
    }

    fn root_at(at: &Path) -> FilesRoot {
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
        assert!(tree.inner.lock().unwrap().seen.is_empty(), "a path that did not open");
        list(&tree, &root, &at, || {});
        assert_eq!(tree.inner.lock().unwrap().seen_bytes, at.as_os_str().len());
        // Past the bytes, nothing more is remembered (and so nothing kept).
        tree.inner.lock().unwrap().seen_bytes = MAX_KEPT_PATH_BYTES;
        std::fs::create_dir(at.join("d")).unwrap();
        list(&tree, &root, &at.join("d"), || {});
        list(&tree, &root, &at, || {});
        list(&tree, &root, &at.join("d"), || {});
        assert_eq!(tree.inner.lock().unwrap().seen.len(), 1);
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
