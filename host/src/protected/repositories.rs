//! Every repository below a project root, for the sandbox to keep
//! read-only (`shell/sandbox.rs`): walked once, then kept up to date.

use super::{GIT_DIR, PROTECTED_AT_ROOT};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, statat};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Directories one walk of a project for repositories looks at, at most; a
/// tree larger than this is walked as far as this, and what it did not
/// reach is kept read-only whole (it may hold a repository).
pub const MAX_WALKED_DIRS: usize = 500_000;

/// How recent a directory's modification may be, against the moment it was
/// listed, for its listing to be trusted next time: the kernel's file clock
/// is coarse, and an entry added in the same tick as the listing leaves the
/// time unmoved.
const RACY: Duration = Duration::from_secs(2);

/// Every repository below a project root, kept up to date from one walk to
/// the next: what the sandbox binds read-only at each start (a `.git`
/// directory or file anywhere below the root, a directory laid out as a
/// repository's own). The root's own `.git`, `.iota` and `HEAD` are not in
/// it: they are [`PROTECTED_AT_ROOT`], bound with placeholders.
///
/// A directory's entries change only when its change time moves (which no
/// process can set back, where `touch` sets a modification time), so a
/// later walk `stat`s each directory it knows and lists again only those
/// that moved (or were listed too close to a change to tell): a project of
/// 10,000 directories costs 10,000 `statx` per sandbox start, not a walk.
#[derive(Debug, Default)]
pub struct RepositoryIndex {
    root: PathBuf,
    dirs: HashMap<PathBuf, Listed>,
    /// Directories found below the ones listed, not listed yet.
    pending: Vec<PathBuf>,
    /// The gitlinks of each index read, with the stamps it had then.
    indexes: HashMap<PathBuf, ReadIndex>,
    /// The repositories there when the session first looked, before any
    /// command of it ran: kept read-only before any that came later.
    first_seen: Option<BTreeSet<PathBuf>>,
    /// Directories that exist but could not be listed.
    closed: BTreeSet<PathBuf>,
    /// Another bound than [`MAX_WALKED_DIRS`] (tests).
    max_dirs: Option<usize>,
}

/// What one walk found below the root.
struct Walked {
    /// Every repository's own directory or `.git` entry, sorted.
    repositories: Vec<PathBuf>,
    /// Directories whose contents are unknown: ones the host may not list,
    /// and ones past the walk's bound. A repository may be in them, so they
    /// are kept read-only whole, and then no command can change their mode
    /// to hide one from the walk and open it again.
    unknown: Vec<PathBuf>,
}

/// One index as read: its stamp and its shared part's then (a split
/// index's shared part can change on its own), and its gitlinks.
#[derive(Debug, Clone)]
struct ReadIndex {
    stamp: Stamp,
    shared: Option<(PathBuf, Option<Stamp>)>,
    links: Vec<PathBuf>,
}

/// A file's device, inode, change time (ns) and size.
type Stamp = (u64, u64, i128, i64);

/// What the sandbox keeps read-only below a root besides the root's own
/// [`PROTECTED_AT_ROOT`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Repositories {
    /// Every repository's own directory or `.git` file kept read-only,
    /// sorted.
    pub own: Vec<PathBuf>,
    /// The submodules' directories below the root that the indexes of the
    /// repositories enclosing it, its own and those below it record
    /// (`gitlinks.rs`), sorted: git goes into a `.git` there on its own, so
    /// one must not be created.
    pub submodules: Vec<PathBuf>,
    /// Repositories below the root whose submodules' places are not kept:
    /// past [`MAX_READ_ONLY_MOUNTS`] or [`OTHER_INDEX_BYTES`].
    pub unprotected: Vec<PathBuf>,
    /// Repositories below the root left writable: past
    /// [`MAX_READ_ONLY_MOUNTS`], among those that came since the session
    /// first looked (a command can make thousands; those there before are
    /// all kept, or the sandbox does not start).
    pub writable: Vec<PathBuf>,
}

/// Read-only mounts the repositories below the root and the places of
/// submodules may take at one sandbox start: one for each, and one for
/// every directory on its way, each counted once ([`Mounts`]). A command can make as many
/// repositories as it likes, and write an index to record thousands of
/// submodules thousands of directories deep: the host's work, the
/// placeholders it makes and bubblewrap's command line (at most 9,000
/// arguments, three a mount) grow with them. Those git reads from the root
/// must all fit, or the sandbox does not start; then the other
/// repositories there when the session first looked (all, or the sandbox
/// does not start), then those that came since; then the submodules they
/// record.
pub const MAX_READ_ONLY_MOUNTS: usize = 2048;

/// Descriptors kept free for everything else the host holds open while
/// it starts a sandbox.
const SPARE_DESCRIPTORS: u64 = 256;

/// The read-only mounts one sandbox start may take here: each is a
/// descriptor held until bubblewrap has bound it, so fewer than
/// [`MAX_READ_ONLY_MOUNTS`] where the process may open fewer files.
pub fn mount_bound() -> usize {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
    hard.map_or(MAX_READ_ONLY_MOUNTS, |hard| {
        usize::try_from(hard.saturating_sub(SPARE_DESCRIPTORS))
            .unwrap_or(usize::MAX)
            .min(MAX_READ_ONLY_MOUNTS)
    })
}

/// Bytes of index one refresh reads at most for the repositories git does
/// not read from the root (those a command could have made, as many as it
/// likes): what they record past it is not protected, and said.
pub const OTHER_INDEX_BYTES: u64 = 64 << 20;

/// How deep below the root `path` is: what keeping it read-only costs at
/// most (itself and each directory on the way), for ordering.
fn mounts_for(path: &Path, root: &Path) -> usize {
    path.strip_prefix(root).map_or(1, |rel| rel.components().count())
}

/// The read-only mounts chosen at one sandbox start: each path kept and
/// each directory on the way to one from the root, counted once however
/// many paths share it ([`MAX_READ_ONLY_MOUNTS`]).
struct Mounts {
    counted: std::collections::HashSet<PathBuf>,
    /// [`mount_bound`], looked up once.
    bound: usize,
}

impl Mounts {
    fn new() -> Mounts {
        Mounts {
            counted: Default::default(),
            bound: mount_bound(),
        }
    }

    /// Counts `paths` and the directories on their way, if they fit in
    /// what is left; whether they did (else nothing is counted).
    fn add_if_fits(&mut self, paths: &[PathBuf], root: &Path) -> bool {
        let mut new = std::collections::HashSet::new();
        for path in paths {
            match path.strip_prefix(root) {
                Ok(rel) => new.extend(
                    rel.ancestors()
                        .filter(|a| !a.as_os_str().is_empty())
                        .map(|a| root.join(a))
                        .filter(|a| !self.counted.contains(a)),
                ),
                Err(_) => {
                    new.insert(path.clone());
                }
            }
        }
        if self.counted.len() + new.len() > self.bound {
            return false;
        }
        self.counted.extend(new);
        true
    }
}

/// `entry` as the user knows it: relative to the root below it, else as it is.
fn shown(entry: &Path, root: &Path) -> String {
    match entry.strip_prefix(root) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => entry.display().to_string(),
    }
}

/// Every repository enclosing `root` (the root being a directory of its
/// work tree): its `.git` entry and the root's path in its work tree,
/// nearest first. Found from where the root is now.
fn enclosing(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(real) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    real.ancestors()
        .skip(1)
        .filter_map(|dir| {
            let entry = dir.join(GIT_DIR);
            std::fs::symlink_metadata(&entry).ok()?;
            let prefix = real.strip_prefix(dir).ok()?.to_path_buf();
            Some((entry, prefix))
        })
        .collect()
}

/// What the index knows of one directory.
#[derive(Debug)]
struct Listed {
    /// Device, inode and change time (ns) when it was listed.
    stamp: (u64, u64, i128),
    /// Whether that listing cannot be trusted (see [`RACY`]).
    racy: bool,
    /// Its subdirectories (to walk), and what in it is a repository's.
    subdirs: Vec<PathBuf>,
    found: Vec<PathBuf>,
}

impl RepositoryIndex {
    /// The repositories below `root` now, and the submodules their indexes
    /// record, walking what changed since the last call (everything, the
    /// first time or for another root).
    ///
    /// Which indexes: first those git reads when the user asks for the
    /// status of the project — every repository enclosing the root (a root
    /// that is a subdirectory of a repository, or of a submodule), the
    /// root's own, and, from theirs, each checked-out submodule's — whose
    /// places must all be kept ([`MAX_READ_ONLY_MOUNTS`], or the sandbox
    /// does not start: `Err` says why). Then those of the other
    /// repositories below the root, nearest first, each while the bound
    /// allows; one past it is named in [`Repositories::unprotected`].
    pub fn refresh(&mut self, root: &Path) -> Result<Repositories, String> {
        let Walked {
            repositories: own,
            unknown,
        } = self.walk(root);
        // A gitfile is kept read-only, but git follows it: a link inside the
        // root on its way could be replaced by a repository of a command's
        // own, as a `.git` link could (`shell.rs` pin refuses those).
        let real_root = std::fs::canonicalize(root).ok();
        if let Some(real_root) = &real_root {
            let gitfiles = std::iter::once(root.join(GIT_DIR)).chain(
                own.iter()
                    .filter(|e| e.file_name() == Some(OsStr::new(GIT_DIR)))
                    .cloned(),
            );
            for gitfile in gitfiles {
                if let Some(link) = link_on_the_way(&gitfile, real_root) {
                    return Err(format!(
                        "{} names its repository through the symbolic link {}, which a command could replace with a repository of its own, so the sandbox does not start; make the gitdir: line name the repository itself",
                        shown(&gitfile, root),
                        shown(&link, real_root)
                    ));
                }
            }
        }
        let mut indexes = HashMap::new();
        let mut submodules = BTreeSet::new();
        let mut mounts = Mounts::new();
        let mut unprotected = Vec::new();
        // (the `.git` entry, where its gitlinks below `prefix` are, the
        // prefix: the root's path in its work tree)
        let mut chain: VecDeque<(PathBuf, PathBuf, PathBuf)> = enclosing(root)
            .into_iter()
            .map(|(entry, prefix)| (entry, root.to_path_buf(), prefix))
            .collect();
        chain.push_back((root.join(GIT_DIR), root.to_path_buf(), PathBuf::new()));
        let mut done = BTreeSet::new();
        // One budget for them all: a repository a command made below the
        // root becomes one of them when the user starts a session inside it.
        let mut chain_budget = crate::gitlinks::MAX_INDEX_BYTES;
        while let Some((entry, base, prefix)) = chain.pop_front() {
            if !done.insert(entry.clone()) {
                continue;
            }
            let links = match self.gitlinks(&entry, &mut indexes, &mut chain_budget) {
                Ok(links) => links,
                Err(crate::gitlinks::Unreadable::TooLarge) => {
                    return Err(format!(
                        "the indexes of {} and the repositories git reads with it take more than {} MiB together; the sandbox reads no more, so it does not start",
                        shown(&entry, root),
                        crate::gitlinks::MAX_INDEX_BYTES >> 20
                    ));
                }
                // Not an index git could read either.
                Err(_) => Vec::new(),
            };
            let below: Vec<PathBuf> = links
                .iter()
                .filter_map(|link| link.strip_prefix(&prefix).ok())
                .filter(|rel| !rel.as_os_str().is_empty())
                .map(|rel| base.join(rel))
                .collect();
            let places: Vec<PathBuf> = below.iter().map(|sub| sub.join(GIT_DIR)).collect();
            if !mounts.add_if_fits(&places, root) {
                return Err(format!(
                    "{} records submodules whose places need more than {} read-only mounts; the sandbox keeps no fewer, so it does not start",
                    shown(&entry, root),
                    mounts.bound
                ));
            }
            for sub in &below {
                let dot_git = sub.join(GIT_DIR);
                if std::fs::symlink_metadata(&dot_git).is_ok() {
                    chain.push_back((dot_git, sub.clone(), PathBuf::new()));
                }
            }
            submodules.extend(below);
        }
        // The other repositories, while their mounts fit: first those there
        // when the session first looked — all of them, or the sandbox does
        // not start (which of them a command made, a birth time cannot
        // tell: a hard link or a rename keeps an old one) — then those that
        // came since, nearest first, the rest left writable. So no command
        // can crowd out a repository the user had.
        // A directory of unknown contents counts as there at the first look
        // when it was, or when a repository seen then is in it.
        let first_seen = self
            .first_seen
            .get_or_insert_with(|| own.iter().chain(&unknown).cloned().collect());
        let seen_first = |entry: &PathBuf, is_unknown: bool| {
            first_seen.contains(entry) || (is_unknown && first_seen.iter().any(|seen| seen.starts_with(entry)))
        };
        let mut ordered: Vec<(bool, usize, PathBuf)> = own
            .into_iter()
            .map(|entry| (false, entry))
            .chain(unknown.into_iter().map(|dir| (true, dir)))
            .map(|(is_unknown, entry)| (!seen_first(&entry, is_unknown), mounts_for(&entry, root), entry))
            .collect();
        ordered.sort();
        let (mut own, mut writable) = (Vec::new(), Vec::new());
        let mut crowded: Vec<(usize, PathBuf)> = Vec::new();
        for (came_since, depth, entry) in ordered {
            if mounts.add_if_fits(std::slice::from_ref(&entry), root) {
                own.push(entry);
            } else if came_since {
                writable.push(entry);
            } else {
                crowded.push((depth, entry));
            }
        }
        if !crowded.is_empty() {
            crowded.sort_by(|a, b| b.cmp(a));
            let named: Vec<String> = crowded.iter().take(5).map(|(_, entry)| shown(entry, root)).collect();
            return Err(format!(
                "the repositories below the root need more than {} read-only mounts (one for each directory on the way to each{}), and the sandbox keeps every one that was there when the session started, so it does not start; remove those you do not need, or start in a narrower directory ({} past the bound, the deepest: {})",
                mounts.bound,
                if mounts.bound < MAX_READ_ONLY_MOUNTS {
                    "; fewer than 2048 because this process may open few files: raise its hard limit, ulimit -Hn"
                } else {
                    ""
                },
                crowded.len(),
                named.join(", ")
            ));
        }
        own.sort();
        writable.sort();
        let mut budget = OTHER_INDEX_BYTES;
        let mut others: Vec<&PathBuf> = own
            .iter()
            .filter(|found| found.file_name() == Some(OsStr::new(GIT_DIR)) && !done.contains(*found))
            .collect();
        others.sort_by_key(|p| p.components().count());
        for entry in others {
            let Some(tree) = entry.parent() else {
                continue;
            };
            // A `.git` file a command may have written names its repository:
            // only one inside the root is read (the host reads what the
            // sandbox may not, and the placeholders it makes would tell).
            let inside = git_dir_of(entry)
                .and_then(|dir| std::fs::canonicalize(dir).ok())
                .is_some_and(|dir| real_root.as_ref().is_some_and(|root| dir.starts_with(root)));
            if !inside {
                continue;
            }
            // The bytes read for them bounded too: a command can make as
            // many repositories as it likes, each with a large index.
            let Ok(links) = self.gitlinks(entry, &mut indexes, &mut budget) else {
                unprotected.push(entry.clone());
                continue;
            };
            let below: Vec<PathBuf> = links.iter().map(|link| tree.join(link)).collect();
            let places: Vec<PathBuf> = below.iter().map(|sub| sub.join(GIT_DIR)).collect();
            if !mounts.add_if_fits(&places, root) {
                unprotected.push(entry.clone());
                continue;
            }
            submodules.extend(below);
        }
        self.indexes = indexes;
        Ok(Repositories {
            own,
            submodules: submodules.into_iter().collect(),
            unprotected,
            writable,
        })
    }

    /// The gitlinks of the repository whose `.git` entry is `entry`, from
    /// its index as last read if neither it nor its shared part changed
    /// (kept in `indexes` for the next refresh), else read now, paid from
    /// `budget`; `TooLarge` where what is left of it is too little,
    /// `NotAFile` where the index is not a file. What is not an index has
    /// no gitlinks.
    fn gitlinks(
        &mut self,
        entry: &Path,
        indexes: &mut HashMap<PathBuf, ReadIndex>,
        budget: &mut u64,
    ) -> Result<Vec<PathBuf>, crate::gitlinks::Unreadable> {
        // No repository there, or no index: no gitlinks.
        let Some(git_dir) = git_dir_of(entry) else {
            return Ok(Vec::new());
        };
        let index = git_dir.join("index");
        let Some(stamp) = file_stamp(&index) else {
            return Ok(Vec::new());
        };
        let unchanged = |then: &ReadIndex| {
            then.stamp == stamp && then.shared.as_ref().is_none_or(|(path, was)| file_stamp(path) == *was)
        };
        let read = match self.indexes.remove(&index).or_else(|| indexes.remove(&index)) {
            Some(then) if unchanged(&then) => then,
            _ => {
                let (links, shared) = match crate::gitlinks::read(&git_dir, &index, budget) {
                    Ok(read) => (read.links, read.shared),
                    Err(crate::gitlinks::Unreadable::Malformed) => (Vec::new(), None),
                    Err(unreadable) => return Err(unreadable),
                };
                ReadIndex {
                    stamp,
                    shared: shared.map(|path| {
                        let stamp = file_stamp(&path);
                        (path, stamp)
                    }),
                    links,
                }
            }
        };
        let links = read.links.clone();
        indexes.insert(index, read);
        Ok(links)
    }

    /// The repositories below `root` now (sorted).
    fn walk(&mut self, root: &Path) -> Walked {
        if self.root != root {
            *self = RepositoryIndex {
                root: root.to_path_buf(),
                pending: vec![root.to_path_buf()],
                max_dirs: self.max_dirs,
                ..Default::default()
            };
        }
        // What moved since it was listed is listed again: its new
        // subdirectories are walked, the ones gone dropped with all below;
        // one that can no longer be listed is dropped with all below and
        // kept read-only whole (`closed`). A closed one is tried again.
        let changed: Vec<PathBuf> = self
            .dirs
            .iter()
            .filter(|(dir, listed)| {
                listed.racy || stamp_of(dir, **dir == self.root).is_none_or(|now| now != listed.stamp)
            })
            .map(|(dir, _)| dir.clone())
            .collect();
        // A closed one is tried again while its parent's listing still
        // holds it (else the parent's next listing finds it, or not).
        let closed = std::mem::take(&mut self.closed);
        let retried: Vec<PathBuf> = closed
            .into_iter()
            .filter(|dir| {
                dir.parent()
                    .and_then(|parent| self.dirs.get(parent))
                    .is_some_and(|listed| listed.subdirs.contains(dir))
            })
            .collect();
        for dir in changed.into_iter().chain(retried.iter().cloned()) {
            let old_subdirs = match self.dirs.remove(&dir) {
                Some(old) => old.subdirs,
                // Forgotten with a directory above it since.
                None if !retried.contains(&dir) => continue,
                None => Vec::new(),
            };
            match list(&dir, &self.root) {
                Ok(listed) => {
                    for gone in old_subdirs.iter().filter(|d| !listed.subdirs.contains(d)) {
                        self.forget(gone);
                    }
                    self.pending
                        .extend(listed.subdirs.iter().filter(|d| !self.dirs.contains_key(*d)).cloned());
                    self.dirs.insert(dir, listed);
                }
                Err(why) => {
                    old_subdirs.iter().for_each(|d| self.forget(d));
                    if why == Unlisted::Closed {
                        self.closed.insert(dir);
                    }
                }
            }
        }
        while let Some(dir) = self.pending.pop() {
            if self.dirs.len() >= self.max_dirs.unwrap_or(MAX_WALKED_DIRS) {
                self.pending.push(dir);
                break;
            }
            if self.dirs.contains_key(&dir) {
                continue;
            }
            match list(&dir, &self.root) {
                Ok(listed) => {
                    self.pending
                        .extend(listed.subdirs.iter().filter(|d| !self.dirs.contains_key(*d)).cloned());
                    self.dirs.insert(dir, listed);
                }
                Err(Unlisted::Closed) => {
                    self.closed.insert(dir);
                }
                Err(Unlisted::Gone) => {}
            }
        }
        let found: BTreeSet<&PathBuf> = self.dirs.values().flat_map(|l| &l.found).collect();
        // What the walk did not reach (past its bound) is as unknown as a
        // closed directory: kept read-only whole.
        let unreached: BTreeSet<PathBuf> = self
            .pending
            .iter()
            .filter(|d| !self.dirs.contains_key(*d))
            .cloned()
            .collect();
        Walked {
            repositories: found.into_iter().cloned().collect(),
            unknown: self.closed.iter().cloned().chain(unreached).collect(),
        }
    }

    /// Drops `dir` and what was found below it.
    fn forget(&mut self, dir: &Path) {
        self.closed.remove(dir);
        if let Some(listed) = self.dirs.remove(dir) {
            for sub in listed.subdirs {
                self.forget(&sub);
            }
        }
    }
}

/// The repository directory a `.git` entry stands for: itself, or where the
/// `.git` file's `gitdir:` line points (relative to its directory). Read
/// without blocking and within 4 KiB: a command may have made it.
fn git_dir_of(entry: &Path) -> Option<PathBuf> {
    let st = statat(rustix::fs::CWD, entry, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Some(entry.to_path_buf()),
        FileType::RegularFile => {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let fd = rustix::fs::open(entry, flags, Mode::empty()).ok()?;
            let mut text = Vec::new();
            use std::io::Read;
            std::fs::File::from(fd).take(4096).read_to_end(&mut text).ok()?;
            let line = text.split(|&b| b == b'\n').next()?;
            let target = line.strip_prefix(b"gitdir:")?.trim_ascii();
            Some(entry.parent()?.join(OsStr::from_bytes(target)))
        }
        _ => None,
    }
}

/// The first symbolic link inside `real_root` on the way to the repository
/// the gitfile `entry` names (links outside the root are followed: no
/// command can change them); `None` where there is none, or `entry` is not
/// a gitfile.
fn link_on_the_way(entry: &Path, real_root: &Path) -> Option<PathBuf> {
    let st = statat(rustix::fs::CWD, entry, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    let target = git_dir_of(entry)?;
    let mut prefix = PathBuf::new();
    for component in target.components() {
        prefix.push(component);
        if !matches!(component, std::path::Component::Normal(_)) {
            continue;
        }
        // What is missing has no link further on.
        let st = statat(rustix::fs::CWD, &prefix, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            let place = std::fs::canonicalize(prefix.parent()?).ok()?.join(prefix.file_name()?);
            if place.starts_with(real_root) {
                return Some(place);
            }
        }
    }
    None
}

/// A file's [`Stamp`], followed.
fn file_stamp(path: &Path) -> Option<Stamp> {
    let st = statat(rustix::fs::CWD, path, AtFlags::empty()).ok()?;
    let ctime = i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec);
    let (dev, ino) = crate::platform::dev_ino(&st);
    Some((dev, ino, ctime, st.st_size))
}

/// A directory's device, inode and change time, not followed (but
/// for the root, which may be reached through `/proc/self/fd`).
fn stamp_of(dir: &Path, is_root: bool) -> Option<(u64, u64, i128)> {
    let follow = if is_root {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let st = statat(rustix::fs::CWD, dir, follow).ok()?;
    (FileType::from_raw_mode(st.st_mode) == FileType::Directory).then(|| {
        let ctime = i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec);
        let (dev, ino) = crate::platform::dev_ino(&st);
        (dev, ino, ctime)
    })
}

/// Lists `dir` (opened without following a link): its subdirectories to
/// walk, and the repositories' own directories and `.git` files in it.
fn list(dir: &Path, root: &Path) -> Result<Listed, Unlisted> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let at_root = dir == root;
    // The root may be the pinned one, reached through `/proc/self/fd`.
    let opened = if at_root { flags - OFlags::NOFOLLOW } else { flags };
    let fd = rustix::fs::open(dir, opened, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP => Unlisted::Gone,
        _ => Unlisted::Closed,
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|_| Unlisted::Closed)?;
    let ctime = i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec);
    let listed_at = SystemTime::now();
    let racy = SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_nanos(u64::try_from(ctime).unwrap_or(0)))
        .is_none_or(|modified| listed_at.duration_since(modified).is_ok_and(|age| age < RACY) || modified > listed_at);
    let (dev, ino) = crate::platform::dev_ino(&st);
    let stamp = (dev, ino, ctime);
    let (mut subdirs, mut found) = (Vec::new(), Vec::new());
    // What of a repository's own layout this directory holds, known from
    // its own entries (a link to `objects/` or `refs/` is looked at only
    // where there is a `HEAD`).
    let (mut head, mut objects, mut refs, mut commondir) = (false, None, None, false);
    let mut buffer = Vec::with_capacity(32 << 10);
    let mut entries = crate::platform::listing(&fd, &mut buffer);
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(|_| Unlisted::Closed)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| FileType::from_raw_mode(st.st_mode))
                .unwrap_or(FileType::Unknown),
            known => known,
        };
        match name {
            b"HEAD" => head = true,
            b"objects" => objects = Some(kind),
            b"refs" => refs = Some(kind),
            // git reads it through a link as well.
            b"commondir" => commondir = matches!(kind, FileType::RegularFile | FileType::Symlink),
            _ => {}
        }
        let name = OsString::from(OsStr::from_bytes(name));
        let path = dir.join(&name);
        if name == GIT_DIR {
            // The root's is bound with the root's placeholders.
            // A link too: it cannot be kept from being replaced, and the
            // sandbox says so rather than start (`shell.rs` pin).
            if !at_root && matches!(kind, FileType::Directory | FileType::RegularFile | FileType::Symlink) {
                found.push(path);
            }
            continue;
        }
        if kind == FileType::Directory && !(at_root && PROTECTED_AT_ROOT.iter().any(|p| name == *p)) {
            subdirs.push(path);
        }
    }
    let is_dir = |kind: Option<FileType>, name: &str| match kind {
        Some(FileType::Directory) => true,
        Some(FileType::Symlink) => statat(&fd, name, AtFlags::empty())
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory),
        _ => false,
    };
    // A repository's own directory (not the root's: its HEAD is protected
    // at the root) is kept whole and not walked into.
    if !at_root && head && ((is_dir(objects, "objects") && is_dir(refs, "refs")) || commondir) {
        return Ok(Listed {
            stamp,
            racy,
            subdirs: Vec::new(),
            found: vec![dir.to_path_buf()],
        });
    }
    Ok(Listed {
        stamp,
        racy,
        subdirs,
        found,
    })
}

/// Why a directory was not listed.
#[derive(Debug, PartialEq, Eq)]
enum Unlisted {
    /// It is no longer a directory there.
    Gone,
    /// It is, but the host may not list it (its mode: a command can take
    /// the host's read permission away, and give it back).
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protected::{by_name, is_repository_dir};

    #[test]
    fn protected_by_name_at_the_root_and_git_anywhere() {
        for path in [
            ".git",
            ".git/hooks/x",
            ".iota/config.yaml",
            "HEAD",
            "sub/.git/config",
            "a/b/.git",
        ] {
            let parts: Vec<&str> = path.split('/').collect();
            assert!(by_name(&parts), "{path}");
        }
        for path in [
            "src/a.rs",
            ".gitignore",
            "sub/HEAD",
            "sub/.iota/x",
            "git/config",
            ".github/x",
        ] {
            let parts: Vec<&str> = path.split('/').collect();
            assert!(!by_name(&parts), "{path}");
        }
    }

    #[test]
    fn every_repository_below_the_root_is_found_and_kept_up_to_date() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mkdirs = |rel: &str| std::fs::create_dir_all(root.join(rel)).unwrap();
        mkdirs(".git/modules/x/objects");
        mkdirs("src/sub/.git");
        mkdirs("vendor/lib.git/objects");
        mkdirs("vendor/lib.git/refs");
        std::fs::write(root.join("vendor/lib.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        mkdirs("wt");
        std::fs::write(root.join("wt/.git"), "gitdir: ../.git/worktrees/wt\n").unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("linked")).unwrap();
        let mut index = RepositoryIndex::default();
        let rel = |found: Vec<PathBuf>| -> Vec<String> {
            found
                .iter()
                .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
                .collect()
        };
        let refresh = |index: &mut RepositoryIndex| index.refresh(&root).unwrap().own;
        assert_eq!(rel(refresh(&mut index)), ["src/sub/.git", "vendor/lib.git", "wt/.git"]);
        // A repository made later, deep down, is found by the next refresh.
        mkdirs("a/b/c/.git");
        assert_eq!(
            rel(refresh(&mut index)),
            ["a/b/c/.git", "src/sub/.git", "vendor/lib.git", "wt/.git"]
        );
        std::fs::remove_dir_all(root.join("src/sub")).unwrap();
        assert_eq!(rel(refresh(&mut index)), ["a/b/c/.git", "vendor/lib.git", "wt/.git"]);
        // A directory swapped for a link is no longer walked.
        std::fs::rename(root.join("a"), root.join("a-moved")).unwrap();
        std::os::unix::fs::symlink(root.join("a-moved"), root.join("a")).unwrap();
        assert_eq!(
            rel(refresh(&mut index)),
            ["a-moved/b/c/.git", "vendor/lib.git", "wt/.git"]
        );
    }

    /// A split index's shared part is paid for from the budget with it,
    /// and a change of the shared part alone is a change of the index.
    #[test]
    fn a_split_index_is_paid_for_whole_and_changes_with_its_shared_part() {
        use crate::gitlinks::tests::git;
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
        let split_repository = |at: &Path, gitlink: &str| -> PathBuf {
            std::fs::create_dir_all(at).unwrap();
            git(at, &["init", "-q"]);
            let oid = "1".repeat(40);
            git(
                at,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("160000,{oid},{gitlink}"),
                ],
            );
            git(at, &["update-index", "--split-index"]);
            std::fs::read_dir(at.join(".git"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("sharedindex."))
                .unwrap()
        };
        let r0 = root.join("r0");
        let shared = split_repository(&r0, "lib");
        let mut index = RepositoryIndex::default();
        let submodules = |index: &mut RepositoryIndex| index.refresh(&root).unwrap().submodules;
        assert_eq!(submodules(&mut index), [r0.join("lib")]);
        // Another shared part written in its place, the index untouched.
        let elsewhere = split_repository(&dir.path().join("other"), "elsewhere");
        std::fs::write(&shared, std::fs::read(&elsewhere).unwrap()).unwrap();
        assert_eq!(submodules(&mut index), [r0.join("elsewhere")]);
        // A 30 MiB shared part, hard-linked beside four copies of the split
        // index: two fit in the budget, the others are not read.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&shared)
            .unwrap()
            .set_len(30 << 20)
            .unwrap();
        for i in 1..=4 {
            let git_dir = root.join(format!("r{i}/.git"));
            std::fs::create_dir_all(&git_dir).unwrap();
            std::fs::copy(r0.join(".git/index"), git_dir.join("index")).unwrap();
            std::fs::hard_link(&shared, git_dir.join(shared.file_name().unwrap())).unwrap();
        }
        let unprotected = index.refresh(&root).unwrap().unprotected;
        let expected: Vec<PathBuf> = (2..=4).map(|i| root.join(format!("r{i}/.git"))).collect();
        assert_eq!(unprotected, expected);
    }

    /// The indexes git reads from the root — its own and its submodules'
    /// — share one budget: submodules a command planted, each with a
    /// large index, cannot make each start read 512 MiB apiece; past the
    /// budget the sandbox does not start (their places cannot all be kept).
    #[test]
    fn the_indexes_git_reads_from_the_root_share_one_budget() {
        use crate::gitlinks::tests::git;
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        git(&root, &["init", "-q"]);
        for i in 0..3 {
            let oid = "1".repeat(40);
            git(
                &root,
                &["update-index", "--add", "--cacheinfo", &format!("160000,{oid},s{i}")],
            );
            let git_dir = root.join(format!("s{i}/.git"));
            std::fs::create_dir_all(&git_dir).unwrap();
            let index = std::fs::File::create(git_dir.join("index")).unwrap();
            use std::io::Write;
            (&index).write_all(b"DIRC\0\0\0\x02\0\0\0\0").unwrap();
            index.set_len(200 << 20).unwrap();
        }
        let mut index = RepositoryIndex::default();
        let refused = index.refresh(&root).unwrap_err();
        assert!(refused.contains("take more than 512 MiB together"), "{refused}");
        // Two of them fit.
        std::fs::remove_dir_all(root.join("s2/.git")).unwrap();
        let found = index.refresh(&root).unwrap();
        assert_eq!(found.submodules.len(), 3);
    }

    /// What the walk cannot list, or does not reach, may hold a
    /// repository: it is kept read-only whole, so no command can change its
    /// mode (or fill the tree) to hide a repository and then open it.
    #[test]
    fn what_the_walk_cannot_list_or_reach_is_kept_whole() {
        if rustix::process::geteuid().is_root() {
            // Root lists a directory whatever its mode: run as nobody.
            let dir = tempfile::tempdir().unwrap();
            rustix::fs::chown(dir.path(), Some(rustix::process::Uid::from_raw(65534)), None).unwrap();
            let out = std::process::Command::new("setpriv")
                .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                .arg(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "protected::repositories::tests::what_the_walk_cannot_list_or_reach_is_kept_whole",
                ])
                .env("TMPDIR", dir.path())
                .output();
            let Ok(out) = out else { return };
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("1 passed"),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("tools/dep/.git")).unwrap();
        let mut index = RepositoryIndex::default();
        let own = |index: &mut RepositoryIndex| index.refresh(&root).unwrap().own;
        assert_eq!(own(&mut index), [root.join("tools/dep/.git")]);
        use std::os::unix::fs::PermissionsExt;
        let mode =
            |path: &Path, mode: u32| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        mode(&root.join("tools/dep"), 0o000);
        assert_eq!(own(&mut index), [root.join("tools/dep")], "closed: kept whole");
        mode(&root.join("tools/dep"), 0o755);
        assert_eq!(own(&mut index), [root.join("tools/dep/.git")], "open again: walked");
        // Closed before the first look: kept whole, as one seen then.
        mode(&root.join("tools"), 0o000);
        let mut fresh = RepositoryIndex::default();
        assert_eq!(own(&mut fresh), [root.join("tools")]);
        mode(&root.join("tools"), 0o755);
        // Past the walk's bound: what it did not reach, kept whole.
        for i in 0..20 {
            std::fs::create_dir_all(root.join(format!("many/{i}"))).unwrap();
        }
        let mut bounded = RepositoryIndex {
            max_dirs: Some(5),
            ..Default::default()
        };
        let kept = own(&mut bounded);
        assert!(
            kept.iter().any(|k| root.join("tools/dep/.git").starts_with(k)),
            "the repository or a directory holding it: {kept:?}"
        );
    }

    /// A mount is counted once however many repositories share it: a
    /// workspace of 900 clones side by side (1,800 mounts) is kept whole;
    /// twice that many are not, and the sandbox says so.
    #[test]
    fn shared_directories_are_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for i in 0..900 {
            std::fs::create_dir_all(root.join(format!("src/org/r{i}/.git"))).unwrap();
        }
        let mut index = RepositoryIndex::default();
        assert_eq!(index.refresh(&root).unwrap().own.len(), 900);
        for i in 900..1100 {
            std::fs::create_dir_all(root.join(format!("src/org/r{i}/.git"))).unwrap();
        }
        let mut index = RepositoryIndex::default();
        let refused = index.refresh(&root).unwrap_err();
        assert!(refused.contains("remove those you do not need"), "{refused}");
    }

    #[test]
    fn a_repository_dir_is_known_by_its_layout() {
        let dir = tempfile::tempdir().unwrap();
        let open = || std::fs::File::open(dir.path()).unwrap();
        assert!(!is_repository_dir(open()));
        std::fs::create_dir(dir.path().join("objects")).unwrap();
        std::fs::create_dir(dir.path().join("refs")).unwrap();
        assert!(!is_repository_dir(open()), "no HEAD yet");
        std::fs::write(dir.path().join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(is_repository_dir(open()));
        // Its objects elsewhere, through a link, as git allows.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::remove_dir(dir.path().join("objects")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("objects")).unwrap();
        assert!(is_repository_dir(open()));
        // A linked worktree's: HEAD and where the rest is.
        let worktree = tempfile::tempdir().unwrap();
        std::fs::write(worktree.path().join("HEAD"), "ref: refs/heads/w\n").unwrap();
        std::fs::write(worktree.path().join("commondir"), "../..\n").unwrap();
        assert!(is_repository_dir(std::fs::File::open(worktree.path()).unwrap()));
    }
}
