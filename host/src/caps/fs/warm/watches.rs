//! The watch index: every watched directory by its path and by its watch,
//! which directory it was when watched, its listing when kept, and a stamp
//! taken afresh at each change to it; the events read from the queues drop
//! what they make untrue, a listing or a whole subtree. What may be recorded
//! and kept, and how much, is `policy.rs`'s to say.

use super::policy::{MayKeep, watch_budget};
use super::probes::{Identity, Opened};
use super::queues::{Queues, SEEN_EVENTS, SEEN_MOUNTS};
use crate::caps::fs::Entry;
use nix::sys::inotify::{AddWatchFlags, WatchDescriptor};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::ops::Bound;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The kept directories and the inotify instance watching them.
pub(super) struct Watched {
    /// What tells of changes; shared so a lookup polls it outside the lock.
    pub(super) queues: Arc<Queues>,
    /// Every watched directory by its absolute path, compared as bytes
    /// (`Path`'s own order parses both paths into components at every
    /// comparison, which was a tenth of a warm glob); [`BTreeMap`] so a
    /// subtree is one range ([`Watched::forget_below`]).
    pub(super) dirs: BTreeMap<OsString, Dir>,
    /// Every watched directory's path by its watch, for the events.
    paths: HashMap<WatchDescriptor, PathBuf>,
    /// The directory each root path was when its listings were read.
    roots: HashMap<OsString, Identity>,
    /// Kept entries plus watched directories, against [`MAX_ENTRIES`].
    ///
    /// [`MAX_ENTRIES`]: super::policy::MAX_ENTRIES
    pub(super) entries: usize,
    /// Bytes of the watched directories' paths in `dirs` and `paths`,
    /// against [`MAX_KEPT_PATH_BYTES`].
    ///
    /// [`MAX_KEPT_PATH_BYTES`]: super::policy::MAX_KEPT_PATH_BYTES
    pub(super) path_bytes: usize,
    /// Watches this tree may hold ([`watch_budget`]).
    pub(super) max_watches: usize,
    /// The tree's stamp counter ([`WarmTree`]'s, which outlives this).
    ///
    /// [`WarmTree`]: super::WarmTree
    stamps: Arc<AtomicU64>,
    /// Watches removed so far. The kernel answers every `add_watch` of one
    /// directory with the same descriptor, so a watch another worker added
    /// outside the lock may be one removed meanwhile (its `IN_IGNORED`
    /// read and dropped before it is recorded): it is recorded only if no
    /// watch was removed since its step was decided.
    removals: u64,
}

/// A watched directory: its watch, the directory it watches, its listing if
/// kept, and the stamp of this record's state (taken afresh whenever an
/// event makes the listing untrue, so a read across an event is not kept).
pub(super) struct Dir {
    wd: WatchDescriptor,
    identity: Identity,
    /// Its listing, while kept.
    pub(super) listing: Option<Arc<Vec<Entry>>>,
    stamp: u64,
}

/// What watching a directory takes.
pub(super) enum WatchStep {
    /// It is watched already; its record's stamp.
    Known(u64),
    /// A watch added through this queue, then recorded if no watch was
    /// removed since ([`Watched::removals`] was this).
    Add(Arc<Queues>, u64),
    /// It cannot be watched.
    Not,
}

impl Watched {
    /// An empty tree; `None` where inotify or the mount table is
    /// unavailable.
    pub(super) fn start(stamps: &Arc<AtomicU64>) -> Option<Watched> {
        Some(Watched {
            queues: Arc::new(Queues::open()?),
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
    pub(super) fn same_root(&mut self, at: &Path, now: Identity) {
        let before = self.roots.get(at.as_os_str()).copied();
        if before == Some(now) {
            return;
        }
        if before.is_some() {
            self.forget_below(at);
        }
        self.roots.insert(at.as_os_str().to_owned(), now);
    }

    /// Whether `dir`'s listing is kept.
    pub(super) fn is_kept(&self, dir: &Path) -> bool {
        self.dirs.get(dir.as_os_str()).is_some_and(|d| d.listing.is_some())
    }

    /// What watching `dir` (opened, with `facts`) takes.
    pub(super) fn watch_step(&self, dir: &Path, facts: Opened) -> WatchStep {
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

    /// Records the watch `wd`, just added through the opened directory
    /// `identity` at `dir` by a step taken when [`Watched::removals`] was
    /// `removals`; the stamp of the record `dir` has now, or `None` when it
    /// cannot be watched (or the record is of another directory that was
    /// at this path). Events the watch queued before this were dropped by
    /// `apply` as of no record; they are of changes before the read, which
    /// begins after this.
    pub(super) fn record(&mut self, dir: &Path, wd: WatchDescriptor, identity: Identity, removals: u64) -> Option<u64> {
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
    pub(super) fn stamp_of(&self, dir: Option<&Path>) -> Option<u64> {
        self.dirs.get(dir?.as_os_str()).map(|d| d.stamp)
    }

    /// Keeps `listing` for `dir` if the watch record it was read under
    /// (`stamp`) is still there unchanged, the parent still names it, and
    /// there is room.
    pub(super) fn keep(&mut self, dir: &Path, parent: Option<&Path>, stamp: u64, listing: Arc<Vec<Entry>>) {
        // Names are looked up in a kept listing by binary search.
        let sorted = listing.is_sorted_by(|a, b| a.name < b.name);
        let may = matches!(self.may_keep(dir, parent), MayKeep::Yes);
        if !sorted || !may || !self.has_room_for_listing(listing.len()) {
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
    pub(super) fn drain(&mut self) {
        if self.dirs.is_empty() {
            // Nothing to make untrue (a mount seen later still drops all).
            return;
        }
        self.queues.poll();
        self.apply();
    }

    /// Drops what the polls saw makes untrue, reading the events.
    pub(super) fn apply(&mut self) {
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

#[cfg(test)]
mod tests {
    use super::super::policy::MAX_KEPT_PATH_BYTES;
    use super::*;

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
    ///
    /// [`WarmTree::list`]: super::super::WarmTree::list
    fn watch(watched: &mut Watched, dir: &Path, opened: &std::fs::File, facts: Opened) -> Option<u64> {
        match watched.watch_step(dir, facts) {
            WatchStep::Known(stamp) => Some(stamp),
            WatchStep::Not => None,
            WatchStep::Add(queues, removals) => {
                let wd = queues.watch(opened).ok()?;
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
            WatchStep::Add(queues, removals) => (queues.watch(&opened).unwrap(), removals),
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
}
