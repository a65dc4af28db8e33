//! The session-warm tree: `list-dir` answers a session has already given,
//! kept true by inotify, so an agent's repeated grep and glob over the same
//! tree skip the directory walk's system calls.
//!
//! Only what a fresh `list-dir` would answer is ever served. A listing is
//! kept only
//! - for a *real path*: the root of a preopen, or a directory whose parent's
//!   kept listing names it as a directory (not a symlink), so no symlink lies
//!   on a kept path and every ancestor is watched: a rename, a delete or a
//!   symlink swapped in anywhere above it reaches a watch and drops it;
//! - with a watch on the very directory it was read from (the watch is added
//!   on the opened directory through `/proc/self/fd` before it is read, and
//!   the listing is kept only if no event for it or its parent arrived
//!   meanwhile);
//! - within a budget of entries ([`MAX_ENTRIES`]); past it, directories are
//!   simply listed again;
//! - on a local filesystem ([`reports_every_change`]): a network or FUSE
//!   filesystem changes under other machines' or a daemon's hands without an
//!   event here, so its directories are always listed afresh.
//!
//! Every lookup first reads the pending events: the kernel queues an event
//! before the system call that caused it returns, so nothing that changed
//! before a lookup can be answered stale. An overflowed queue drops
//! everything; a watch that cannot be added (the user's watch limit) only
//! means that directory is listed again each time. The host also drops the
//! whole tree after every call that may have written (a shell command, an
//! approved write), so correctness never rests on inotify alone.
//!
//! Memory: about 40 bytes per kept entry plus its name, and one inotify watch
//! (about 1 KiB of kernel memory) per kept directory.

use super::{Entry, FilesRoot, Kind};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use nix::sys::statfs::{self, FsType};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Entries the warm tree keeps at most, over all its directories (about
/// 16 MiB of names for typical source trees); past it, `list-dir` reads the
/// directory each time.
pub const MAX_ENTRIES: usize = 250_000;

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
    inner: Mutex<Option<Watched>>,
    hits: AtomicU64,
}

impl std::fmt::Debug for WarmTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WarmTree({:?})", self.stats())
    }
}

/// What a warm tree holds and has served, for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmStats {
    /// Directories whose listing is kept.
    pub kept_dirs: usize,
    /// `list-dir` answers given from the tree so far.
    pub hits: u64,
}

/// The kept directories and the inotify instance watching them.
struct Watched {
    inotify: Inotify,
    /// Every watched directory by its absolute path; [`BTreeMap`] so a
    /// subtree is one range.
    dirs: BTreeMap<PathBuf, Dir>,
    paths: HashMap<WatchDescriptor, PathBuf>,
    entries: usize,
}

/// A watched directory: its watch, its listing if kept, and a count of the
/// events it has had (a listing read across an event is not kept).
struct Dir {
    wd: WatchDescriptor,
    listing: Option<Arc<Vec<Entry>>>,
    events: u64,
}

impl WarmTree {
    /// The listing of `dir` (absolute, inside `root`): from the tree when it
    /// is kept there, else `open`ed beneath the root, `read`, and kept when
    /// it may be.
    pub fn list(
        &self,
        root: &FilesRoot,
        dir: &Path,
        open: impl FnOnce() -> Result<std::fs::File, String>,
        read: impl FnOnce(&std::fs::File) -> Result<Vec<Entry>, String>,
    ) -> Result<Vec<Entry>, String> {
        let Some(parent) = real_parent(root, dir) else {
            return read(&open()?);
        };
        let mut inner = self.inner.lock().unwrap();
        let Some(watched) = Watched::get(&mut inner) else {
            drop(inner);
            return read(&open()?);
        };
        watched.drain();
        if let Some(listing) = watched.dirs.get(dir).and_then(|d| d.listing.clone()) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(listing.as_ref().clone());
        }
        if !watched.may_keep(dir, parent.as_deref()) {
            drop(inner);
            return read(&open()?);
        }
        // Watched before it is read, through the very directory read; the
        // lock is held meanwhile so that no other call races the watch.
        let opened = open()?;
        let before = watched.watch(dir, &opened);
        drop(inner);
        let listing = read(&opened)?;
        if let Some(before) = before {
            let mut inner = self.inner.lock().unwrap();
            if let Some(watched) = inner.as_mut() {
                watched.drain();
                watched.keep(dir, parent.as_deref(), before, &listing);
            }
        }
        Ok(listing)
    }

    /// What the tree holds and has served.
    pub fn stats(&self) -> WarmStats {
        let inner = self.inner.lock().unwrap();
        WarmStats {
            kept_dirs: inner
                .as_ref()
                .map_or(0, |w| w.dirs.values().filter(|d| d.listing.is_some()).count()),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }

    /// Forgets everything (after a call that may have written).
    pub fn clear(&self) {
        // Closing the inotify descriptor removes every watch.
        *self.inner.lock().unwrap() = None;
    }
}

impl Watched {
    /// The tree, started on first use; `None` where inotify is unavailable.
    fn get(slot: &mut Option<Watched>) -> Option<&mut Watched> {
        if slot.is_none() {
            let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
            *slot = Some(Watched {
                inotify,
                dirs: BTreeMap::new(),
                paths: HashMap::new(),
                entries: 0,
            });
        }
        slot.as_mut()
    }

    /// Whether `dir`'s listing may be kept: it is a real path (see the
    /// module's documentation) and there is room.
    fn may_keep(&self, dir: &Path, parent: Option<&Path>) -> bool {
        if self.entries >= MAX_ENTRIES {
            return false;
        }
        let Some(parent) = parent else { return true };
        let name = dir.file_name().map(|n| n.to_string_lossy());
        self.dirs
            .get(parent)
            .and_then(|p| p.listing.as_ref())
            .is_some_and(|listing| {
                listing
                    .iter()
                    .any(|e| Some(e.name.as_str()) == name.as_deref() && matches!(e.kind, Kind::Directory))
            })
    }

    /// Watches `dir` through the opened directory; the count of events it
    /// has had so far, or `None` when it cannot be watched.
    fn watch(&mut self, dir: &Path, opened: &std::fs::File) -> Option<u64> {
        if let Some(known) = self.dirs.get(dir) {
            return Some(known.events);
        }
        if !reports_every_change(opened) {
            return None;
        }
        let through = format!("/proc/self/fd/{}", opened.as_raw_fd());
        let wd = self.inotify.add_watch(through.as_str(), watch_mask()).ok()?;
        if self.paths.contains_key(&wd) {
            // The same directory under another path (a bind mount): one
            // watch cannot stand for two paths, so neither is kept.
            return None;
        }
        self.paths.insert(wd, dir.to_path_buf());
        self.dirs.insert(
            dir.to_path_buf(),
            Dir {
                wd,
                listing: None,
                events: 0,
            },
        );
        Some(0)
    }

    /// Keeps `listing` for `dir` if neither it nor its parent has changed
    /// since it was watched (`before` events) and there is still room.
    fn keep(&mut self, dir: &Path, parent: Option<&Path>, before: u64, listing: &[Entry]) {
        if !self.may_keep(dir, parent) || self.entries + listing.len() > MAX_ENTRIES {
            return;
        }
        let Some(kept) = self.dirs.get_mut(dir) else { return };
        if kept.events != before || kept.listing.is_some() {
            return;
        }
        kept.listing = Some(Arc::new(listing.to_vec()));
        self.entries += listing.len();
    }

    /// Reads every pending event and drops what it makes untrue.
    fn drain(&mut self) {
        loop {
            let events = match self.inotify.read_events() {
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

    /// Drops `dir`'s listing, keeping its watch (its subdirectories stay).
    fn unlist(&mut self, dir: &Path) {
        if let Some(kept) = self.dirs.get_mut(dir) {
            kept.events += 1;
            if let Some(listing) = kept.listing.take() {
                self.entries -= listing.len();
            }
        }
    }

    /// Drops `top` and everything watched below it, watches too.
    fn forget_below(&mut self, top: &Path) {
        let below: Vec<PathBuf> = self
            .dirs
            .range::<Path, _>((Bound::Included(top), Bound::Unbounded))
            .take_while(|(path, _)| path.starts_with(top))
            .map(|(path, _)| path.clone())
            .collect();
        for path in below {
            if let Some(gone) = self.dirs.remove(&path) {
                self.paths.remove(&gone.wd);
                // A watch the kernel already removed answers an error; either way it is gone.
                let _ = self.inotify.rm_watch(gone.wd);
                if let Some(listing) = gone.listing {
                    self.entries -= listing.len();
                }
            }
        }
    }

    /// Drops everything.
    fn forget_all(&mut self) {
        for (_, gone) in std::mem::take(&mut self.dirs) {
            // A watch the kernel already removed answers an error; either way it is gone.
            let _ = self.inotify.rm_watch(gone.wd);
        }
        self.paths.clear();
        self.entries = 0;
    }
}

/// For a directory that may be kept: `Some(None)` for the root itself,
/// `Some(Some(parent))` for a path below it made only of plain names;
/// `None` for anything else (`.`, `..`, a trailing slash's oddities), which
/// is always listed afresh.
fn real_parent(root: &FilesRoot, dir: &Path) -> Option<Option<PathBuf>> {
    let relative = dir.strip_prefix(&root.at).ok()?;
    if relative.as_os_str().is_empty() {
        return (dir == root.at.as_path()).then_some(None);
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
