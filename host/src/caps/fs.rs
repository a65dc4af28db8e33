//! The filesystem capability: WASI preopens of the project root, and
//! `iota:toolset/files`, whole-file reads in bulk through the same jail.
//! Both are read-only for every call: the one file a writing call may change
//! is written through `writes.rs`.
//!
//! The root is preopened both at `.` and at its absolute path, so a guest can
//! use the absolute paths it reports to the model. wasmtime's preopen refuses
//! every path that leaves the root — `..`, absolute paths elsewhere, and any
//! symlink whose target is outside (even an absolute one pointing back in) —
//! which is stricter than the spec's lexical jail and is kept deliberately.

use super::CallState;
use crate::project::ProjectRoot;
use crate::wit::iota::toolset::files::{Content, Entry, EntryStat, FileHead, HeadError, Host, Kind, PackedListing};
use anyhow::{Context as _, Result};
#[cfg(unix)]
use cap_primitives::fs::OpenOptionsExt;
use cap_primitives::fs::{FollowSymlinks, OpenOptions};
use iota_toolset::files::{
    MAX_STAT_NAME_BYTES, MAX_STAT_NAMES, NAME_SEPARATOR, NeedleSearch, is_statable_name, modified_ns, ns_since_epoch,
};
#[cfg(unix)]
use iota_toolset::jail::plain_rest;
use iota_toolset::output::plain;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

mod contents;
#[cfg_attr(not(target_os = "linux"), path = "fs/warm/unwatched.rs")]
mod warm;
use contents::{NeedleTrigrams, Version};
pub use warm::{MAX_ENTRIES as MAX_WARM_ENTRIES, WarmTree};

/// The warm tree is the filesystem's part of a session: the directory
/// listings the session's searches have read, kept true while it lasts.
impl crate::session::Part for WarmTree {}

impl CallState {
    /// The session's warm tree, looked up at the instance's first use.
    fn warm_tree(&self) -> &WarmTree {
        self.warm.get_or_init(|| WarmTree::of(&self.session))
    }
}

impl WarmTree {
    /// `session`'s warm tree.
    pub fn of(session: &crate::session::Session) -> std::sync::Arc<WarmTree> {
        session.part()
    }

    /// Forgets what `session`'s warm tree holds (after a call that may have
    /// written), if it has one.
    pub fn clear_in(session: &crate::session::Session) {
        if let Some(tree) = session.existing_part::<WarmTree>() {
            tree.clear();
        }
    }
}

/// What a warm tree holds and has served, for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmStats {
    /// Directories whose listing is kept.
    pub kept_dirs: usize,
    /// `list-dir` answers given from the tree so far.
    pub hits: u64,
    /// Files whose content the session knows (`contents.rs`).
    pub known_files: usize,
    /// Files a search ruled out without reading them, so far.
    pub unread_files: u64,
}

/// Data one `read-files` answer carries at most (beyond its first file).
pub const BULK_BUDGET: u64 = 256 << 10;

/// Bytes one `read-files-containing` answer reads at most (beyond its first
/// file), kept or not: a host call is not interruptible, so one answer stays
/// a few milliseconds of reading.
pub const SCAN_BUDGET: u64 = 8 << 20;

/// Bytes of one file a call of `iota:toolset/files` brings into the host at
/// most, whatever size the component allows (and never more than the set's
/// memory limit): a host call cannot be interrupted, so a component holding
/// only the default grants must not be able to make it read gigabytes.
pub const MAX_FILE_BYTES: u64 = 20 << 20;

/// Entries one `list-dir` answer holds at most; a larger directory is
/// refused rather than listed in part.
pub const MAX_DIR_ENTRIES: usize = 1 << 20;

/// What one answer of `read-files` counts against [`BULK_BUDGET`] besides
/// its data or its reason: the host's and the guest's bookkeeping of it. So
/// an answer of empty files or of paths that are not there is bounded too
/// (it holds no data, but each opens and allocates).
pub const ANSWER_COST: u64 = 64;

/// Paths one answer of `read-files` or `read-files-containing` can hold:
/// each counts [`ANSWER_COST`] against [`BULK_BUDGET`]. The host looks at
/// no more of the list than that, so the work done for a list of millions of
/// (empty) paths is this many, whatever wasmtime copied in.
pub const MAX_ANSWERS: usize = (BULK_BUDGET / ANSWER_COST) as usize + 1;

/// Bytes of a directory path `list-dir` and `stat-names` look at, the
/// system's `PATH_MAX`: no longer path can be opened, and the warm tree
/// remembers the paths listed.
pub const MAX_PATH_BYTES: usize = 4096;

/// The most of one file the host reads for a component that allows
/// `asked` bytes and may use `memory` bytes.
fn file_cap(asked: u64, memory: usize) -> u64 {
    asked.min(MAX_FILE_BYTES).min(u64::try_from(memory).unwrap_or(u64::MAX))
}

/// What a call may see of the project root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// No filesystem at all.
    None,
    /// The root and the read directories, read-only.
    ReadOnly,
}

/// Needles `read-files-containing` looks for at most, and their bytes
/// together; beyond either, every file is kept.
pub const MAX_NEEDLES: usize = 16;
/// See [`MAX_NEEDLES`].
pub const MAX_NEEDLE_BYTES: usize = 64 << 10;

/// A preopened directory as `read-files` sees it: where the guest sees it,
/// and a handle every open is resolved beneath.
pub struct FilesRoot {
    at: PathBuf,
    dir: std::fs::File,
    /// `dir`'s device and inode, read once: an open descriptor's never
    /// change, and the warm tree compares them at every lookup.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    identity: Option<warm::Identity>,
}

impl FilesRoot {
    /// The directory opened at `at`, as `read-files` and the warm tree see it.
    fn new(at: &Path, dir: std::fs::File) -> FilesRoot {
        FilesRoot {
            at: at.to_path_buf(),
            identity: warm::identity(&dir),
            dir,
        }
    }

    /// Whether `path` is spelled as a walk asks: this root's bytes, `/`,
    /// plain names joined by single `/`s. Such a path is its own key and
    /// is cut by bytes, no component parsed. A root ending in `/` (the
    /// filesystem's root) never is: `//a` must take the long way, which
    /// refuses it.
    #[cfg(unix)]
    fn holds_plainly(&self, path: &Path) -> bool {
        !self.at.as_os_str().as_encoded_bytes().ends_with(b"/") && plain_rest(path, &self.at).is_some()
    }
}

/// What `iota:toolset/files` works with in one store: the preopens, and the
/// needles of the last `read-files-containing` (a search asks with the same
/// needles batch after batch).
#[derive(Default)]
pub struct Files {
    roots: Vec<FilesRoot>,
    needles: Option<Needles>,
    /// Whether the next listing is where a walk starts, whose parents the
    /// warm tree may list too ([`WarmTree::list`]): the first listing of a
    /// call's own instance (a worker's begin inside the caller's walk).
    walk_start: bool,
}

impl Files {
    /// Makes the next listing a walk's start: for a call's own instance.
    pub(crate) fn expect_walk_start(&mut self) {
        self.walk_start = true;
    }
}

/// The needles last asked for and their search ([`NeedleSearch`]: a
/// `memmem` pass per needle with case as it is, one Teddy pass over case
/// variants of each needle's rarest bytes with case folded; why, in its
/// module).
struct Needles {
    asked: (Vec<Vec<u8>>, bool),
    search: NeedleSearch,
    /// The same needles as the session's content filters are asked.
    trigrams: NeedleTrigrams,
}

impl Needles {
    /// The search for `needles`, kept in `last` for the next answer; `None`
    /// (every file kept) beyond [`MAX_NEEDLES`] or [`MAX_NEEDLE_BYTES`], so a
    /// component cannot make one host call search a file any number of times.
    fn cached(last: &mut Option<Needles>, needles: Vec<Vec<u8>>, fold_case: bool) -> Option<&mut Needles> {
        if needles.len() > MAX_NEEDLES || needles.iter().map(Vec::len).sum::<usize>() > MAX_NEEDLE_BYTES {
            return None;
        }
        let asked = (needles, fold_case);
        if last.as_ref().is_none_or(|last| last.asked != asked) {
            let search = NeedleSearch::new(&asked.0, fold_case);
            let trigrams = NeedleTrigrams::new(&asked.0);
            *last = Some(Needles {
                asked,
                search,
                trigrams,
            });
        }
        last.as_mut()
    }
}

/// Adds the preopens for `access` to `builder`: the root (the pinned
/// directory itself, reached through its handle, at `.` and at the path it
/// is shown at), and `read_dirs` read-only at their absolute paths. Returns
/// the same directories for `files` (none without access).
pub fn preopen(
    builder: &mut WasiCtxBuilder,
    project: &ProjectRoot,
    read_dirs: &[std::path::PathBuf],
    access: FsAccess,
) -> Result<Files> {
    let (root, handle) = (project.path(), project.handle());
    if access == FsAccess::None {
        return Ok(Files::default());
    }
    let perms = FsPerms::ReadOnly;
    let absolute = root.to_str().context("the project root is not valid UTF-8")?;
    builder
        .preopened_dir(&handle, ".", perms)
        .and_then(|b| b.preopened_dir(&handle, absolute, perms))
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot open the project root {}", root.display()))?;
    for dir in read_dirs {
        let guest = dir.to_str().context("a readable directory's path is not valid UTF-8")?;
        builder
            .preopened_dir(dir, guest, FsPerms::ReadOnly)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("cannot open {}", dir.display()))?;
    }
    let roots = std::iter::once((root, handle.as_path()))
        .chain(read_dirs.iter().map(|d| (d.as_path(), d.as_path())))
        .map(|(at, reached)| {
            let dir = cap_primitives::fs::open_ambient_dir(reached, cap_primitives::ambient_authority())
                .with_context(|| format!("cannot open {}", at.display()))?;
            Ok(FilesRoot::new(at, dir))
        })
        .collect::<Result<_>>()?;
    Ok(Files {
        roots,
        needles: None,
        walk_start: false,
    })
}

impl Host for CallState {
    fn read_files(&mut self, paths: Vec<String>, max_size: u64) -> Vec<Content> {
        // Without needles every answer is `Some`.
        let cap = file_cap(max_size, self.limiter.max);
        read_answer(&self.files.roots, paths, cap, None, self.warm_tree())
            .into_iter()
            .flatten()
            .collect()
    }

    fn read_files_containing(
        &mut self,
        paths: Vec<String>,
        max_size: u64,
        needles: Vec<Vec<u8>>,
        fold_case: bool,
    ) -> Vec<Option<Content>> {
        let cap = file_cap(max_size, self.limiter.max);
        let warm = self.warm.get_or_init(|| WarmTree::of(&self.session));
        let Files {
            roots, needles: last, ..
        } = &mut self.files;
        read_answer(roots, paths, cap, Needles::cached(last, needles, fold_case), warm)
    }

    fn read_head(&mut self, path: String, max_size: u64) -> Result<FileHead, HeadError> {
        let (file, meta) = open_regular(&self.files.roots, Path::new(&path))?;
        let cap = file_cap(max_size, self.limiter.max);
        let mut data = Vec::with_capacity(meta.len().min(cap) as usize);
        file.take(cap)
            .read_to_end(&mut data)
            .map_err(|e| HeadError::Other(plain(&e)))?;
        Ok(FileHead {
            data,
            size: meta.len(),
            modified_ns: modified_ns(&meta),
        })
    }

    fn list_dir(&mut self, path: String) -> Result<Vec<Entry>, String> {
        self.listing(&path).map(std::sync::Arc::unwrap_or_clone)
    }

    fn list_dir_packed(&mut self, path: String) -> Result<PackedListing, String> {
        Ok(packed(&self.listing(&path)?))
    }

    fn stat_names(&mut self, path: String, names: String) -> Result<Vec<Option<EntryStat>>, String> {
        let names = split_names(&names)?;
        let (root, relative) = dir_beneath(&self.files.roots, Path::new(&path))?;
        let dir = cap_primitives::fs::open_dir(&root.dir, relative).map_err(|e| e.to_string())?;
        Ok(names.into_iter().map(|name| stat_name(&dir, name)).collect())
    }
}

impl CallState {
    /// The entries of the directory at `path`, sorted by name: through the
    /// session's warm tree, shared with it when kept there. A walk's start
    /// may have the tree list the directories above it.
    fn listing(&mut self, path: &str) -> Result<std::sync::Arc<Vec<Entry>>, String> {
        let dir = Path::new(path);
        let (root, relative) = dir_beneath(&self.files.roots, dir)?;
        let start = std::mem::take(&mut self.files.walk_start);
        let open_above = |above: &Path| {
            let (_, relative) = dir_beneath(std::slice::from_ref(root), above)?;
            open_listable(root, relative)
        };
        let above: Option<&warm::OpenAbove> = if start { Some(&open_above) } else { None };
        self.warm_tree()
            .list(root, dir, || open_listable(root, relative), list_opened, above)
    }
}

/// `listing` as `list-dir-packed` answers it: the names one after the
/// other, their lengths, and the kinds in the same order.
fn packed(listing: &[Entry]) -> PackedListing {
    let mut names = String::with_capacity(listing.iter().map(|e| e.name.len()).sum());
    for entry in listing {
        names.push_str(&entry.name);
    }
    PackedListing {
        names,
        // A name is at most a few KiB (`d_reclen` is 16 bits).
        lengths: listing.iter().map(|e| e.name.len() as u32).collect(),
        kinds: listing.iter().map(|e| e.kind).collect(),
    }
}

/// The names of one `stat-names` call, within its bounds.
fn split_names(names: &str) -> Result<Vec<&str>, String> {
    if names.len() > MAX_STAT_NAME_BYTES {
        return Err(format!("more than {MAX_STAT_NAME_BYTES} bytes of names"));
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = names.split(NAME_SEPARATOR).take(MAX_STAT_NAMES + 1).collect();
    if names.len() > MAX_STAT_NAMES {
        return Err(format!("more than {MAX_STAT_NAMES} names"));
    }
    Ok(names)
}

/// The preopen the directory `dir` lies in, and its path relative to it
/// (`.` for the preopen itself).
fn dir_beneath<'a>(roots: &'a [FilesRoot], dir: &'a Path) -> Result<(&'a FilesRoot, &'a Path), String> {
    if dir.as_os_str().len() > MAX_PATH_BYTES {
        return Err(format!("a path longer than {MAX_PATH_BYTES} bytes"));
    }
    let (root, relative) = beneath(roots, dir).ok_or("outside the project root")?;
    if relative.as_os_str().is_empty() {
        return Ok((root, Path::new(".")));
    }
    Ok((root, relative))
}

/// `stat` of one entry of an opened directory, a symlink not followed; only
/// a name that is exactly one plain path component is looked at, so the
/// lookup never leaves `dir` (cap-std's single-component `fstatat`).
fn stat_name(dir: &std::fs::File, name: &str) -> Option<EntryStat> {
    if !is_statable_name(name) {
        return None;
    }
    let meta = cap_primitives::fs::stat(dir, Path::new(name), FollowSymlinks::No).ok()?;
    Some(EntryStat {
        kind: kind_of(meta.file_type()),
        size: meta.len(),
        modified_ns: ns_since_epoch(meta.modified().map(|t| t.into_std())),
    })
}

/// Holds the directory `relative` beneath `root` and every directory on the
/// way, none a reparse point (stricter than cap-std, which follows a link
/// that stays inside).
#[cfg(windows)]
fn open_listable(root: &FilesRoot, relative: &Path) -> Result<Listable, String> {
    use crate::platform::windows::{HeldDir, hold_beneath};
    let top = HeldDir::open(&root.at).map_err(|e| plain(&e))?;
    let mut held = hold_beneath(&top, relative).map_err(|e| plain(&e))?;
    held.insert(0, top);
    Ok(held)
}

/// A directory opened for listing: on Windows the held directories from
/// the preopen down to it, so that its path stays its own while it is read.
#[cfg(windows)]
type Listable = Vec<crate::platform::windows::HeldDir>;
/// A directory opened for listing.
#[cfg(unix)]
type Listable = std::fs::File;

/// Opens the directory `relative` beneath `root` for reading its entries
/// (cap-std's `open_dir` opens `O_PATH`, which cannot be read).
#[cfg(unix)]
fn open_listable(root: &FilesRoot, relative: &Path) -> Result<Listable, String> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_NOCTTY);
    match cap_primitives::fs::open(&root.dir, relative, &options) {
        Ok(dir) => Ok(dir),
        // Without openat2, cap-std opens the last component `O_NOFOLLOW` and
        // follows a symlink to a directory (inside the root) only for its
        // own `open_dir`: open it that way, then itself readable.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            let dir = cap_primitives::fs::open_dir(&root.dir, relative).map_err(|e| e.to_string())?;
            cap_primitives::fs::open(&dir, Path::new("."), &options).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Bytes of directory entries one `getdents64` fills: glibc's `opendir`
/// buffer, and room for any name a filesystem returns (FUSE's go past 255
/// bytes, where glibc's `readdir_r` drops them).
#[cfg(unix)]
const GETDENTS_BUFFER: usize = 32 * 1024;

/// The entries of an opened directory, as `list-dir` answers them: sorted
/// by name, which the warm tree looks names up by and a walk wants anyway.
/// `dir` is freshly open for reading ([`open_listable`]), so its offset
/// starts at the beginning; taken whole, so nothing reads it again from
/// where this left it (the end). Read with `getdents64` itself:
/// a read error is an error, not the end of the listing (glibc's
/// `readdir_r` ends there, giving a short listing), and there is no `DIR`
/// to set up (`fdopendir`'s `fcntl` and `fstat`) or rewind.
#[cfg(unix)]
fn list_opened(dir: Listable) -> Result<Vec<Entry>, String> {
    let io_error = |e: rustix::io::Errno| plain(&std::io::Error::from(e));
    let mut buffer = Vec::with_capacity(GETDENTS_BUFFER);
    let mut entries = crate::platform::listing(&dir, &mut buffer);
    let mut listed: Vec<Entry> = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(io_error)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if listed.len() == MAX_DIR_ENTRIES {
            return Err(format!("more than {MAX_DIR_ENTRIES} entries"));
        }
        let kind = match entry.file_type() {
            // No type in the entry (some filesystems): `stat` it, neither
            // followed nor mounted (an automount point stays a directory).
            rustix::fs::FileType::Unknown => {
                let flags = rustix::fs::AtFlags::SYMLINK_NOFOLLOW | crate::platform::AT_NO_AUTOMOUNT;
                let stat = rustix::fs::statat(&dir, entry.file_name(), flags);
                stat.map_or(Kind::Other, |st| {
                    kind_of_type(rustix::fs::FileType::from_raw_mode(st.st_mode))
                })
            }
            known => kind_of_type(known),
        };
        // A write's temporary file is the host's own, for microseconds (or
        // until the next start sweeps what a killed host left).
        if kind == Kind::File && crate::scratch::is_write_temporary(name) {
            continue;
        }
        listed.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            kind,
        });
    }
    listed.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(listed)
}

/// The entries of an opened directory, as `list-dir` answers them: sorted
/// by name; a read error is an error, not the end of the listing.
#[cfg(windows)]
fn list_opened(held: Listable) -> Result<Vec<Entry>, String> {
    let dir = held.last().ok_or("nothing held")?;
    let mut listed: Vec<Entry> = Vec::new();
    for entry in std::fs::read_dir(dir.path()).map_err(|e| plain(&e))? {
        let entry = entry.map_err(|e| plain(&e))?;
        let name = entry.file_name();
        if listed.len() == MAX_DIR_ENTRIES {
            return Err(format!("more than {MAX_DIR_ENTRIES} entries"));
        }
        let kind = match entry.metadata() {
            Ok(meta) if crate::platform::windows::is_reparse_point(&meta) => Kind::Symlink,
            Ok(meta) if meta.is_dir() => Kind::Directory,
            Ok(meta) if meta.is_file() => Kind::File,
            _ => Kind::Other,
        };
        if kind == Kind::File && crate::scratch::is_write_temporary(name.as_encoded_bytes()) {
            continue;
        }
        listed.push(Entry {
            name: name.to_string_lossy().into_owned(),
            kind,
        });
    }
    listed.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(listed)
}

/// What a directory entry's type says it is.
#[cfg(unix)]
fn kind_of_type(t: rustix::fs::FileType) -> Kind {
    match t {
        rustix::fs::FileType::Symlink => Kind::Symlink,
        rustix::fs::FileType::Directory => Kind::Directory,
        rustix::fs::FileType::RegularFile => Kind::File,
        _ => Kind::Other,
    }
}

/// What a directory entry of type `t` is; a symlink is not followed.
fn kind_of(t: cap_primitives::fs::FileType) -> Kind {
    if t.is_symlink() {
        Kind::Symlink
    } else if t.is_dir() {
        Kind::Directory
    } else if t.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// One answer of `read-files` or `read-files-containing`: a prefix of
/// `paths`, each read whole, within the budgets (at least one path). A file
/// that holds none of `needles` (when they are looked for) is `None`; where
/// `warm` keeps its directory, the session's content filters may say so
/// without a read, and a file read there is learned.
fn read_answer(
    roots: &[FilesRoot],
    paths: Vec<String>,
    max_size: u64,
    mut needles: Option<&mut Needles>,
    warm: &WarmTree,
) -> Vec<Option<Content>> {
    let paths = &paths[..paths.len().min(MAX_ANSWERS)];
    let mut answer = Vec::with_capacity(paths.len());
    // Without needles everything read is carried, so only the data budget,
    // the smaller one, applies.
    const _: () = assert!(BULK_BUDGET < SCAN_BUDGET);
    let (mut carried, mut read) = (0u64, 0u64);
    // Taken before any file is opened: a file changed since is not learned
    // from this answer (`contents.rs`).
    let opened = SystemTime::now();
    let files: Vec<Option<FileInDir>> = match needles {
        Some(_) => paths.iter().map(|p| file_in_dir(roots, Path::new(p))).collect(),
        None => Vec::new(),
    };
    let dirs: Vec<Option<(&FilesRoot, &Path)>> = files.iter().map(|f| f.map(|f| (f.root, f.dir))).collect();
    let kept = warm.kept(&dirs);
    // The directory whose files are being stat'ed, opened once for them
    // all: a walk asks for a directory's files one after the other.
    let mut stats_dir: Option<(&Path, Option<std::fs::File>)> = None;
    // Where each file is read: with needles most files are searched and
    // dropped, so one buffer serves them all (no allocation, no fresh pages
    // per file).
    let mut data = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        if !answer.is_empty() && (carried >= BULK_BUDGET || read >= SCAN_BUDGET) {
            break;
        }
        carried += ANSWER_COST;
        let known = kept.get(i).copied().unwrap_or(false).then(|| files[i]).flatten();
        if let (Some(file), Some(needles)) = (known, needles.as_deref())
            && needles.trigrams.any_use()
        {
            if stats_dir
                .as_ref()
                .is_none_or(|(dir, _)| dir.as_os_str() != file.dir.as_os_str())
            {
                stats_dir = Some((file.dir, open_for_stats(file.root, file.relative_dir)));
            }
            let opened_dir = stats_dir.as_ref().and_then(|(_, opened)| opened.as_ref());
            if opened_dir
                .and_then(|dir| Version::at(dir, file.name))
                .is_some_and(|v| v.size() <= max_size && warm.contents().rules_out(&v, &needles.trigrams))
            {
                answer.push(None);
                continue;
            }
        }
        let (whole, version) = read_whole(roots, Path::new(path), max_size, known.and(Some(opened)), &mut data);
        let content = match whole {
            Err(content) => {
                if let Content::Unreadable(why) = &content {
                    carried += why.len() as u64;
                }
                if needles.is_none() {
                    // What a refused file left is not handed to the next.
                    data = Vec::new();
                }
                content
            }
            Ok(()) => {
                read += data.len() as u64;
                if let Some(version) = version {
                    warm.contents().learn(&version, opened, &data);
                }
                if needles.as_mut().is_some_and(|n| !n.search.any_in(&data)) {
                    answer.push(None);
                    continue;
                }
                carried += data.len() as u64;
                // Without needles the buffer is the answer's; with them it
                // is kept for the next file and what it holds is copied.
                Content::Data(if needles.is_some() {
                    data.clone()
                } else {
                    std::mem::take(&mut data)
                })
            }
        };
        answer.push(Some(content));
    }
    answer
}

/// A file path that is exactly a directory's path and one plain name after
/// it, which what the session knows is looked up by.
#[derive(Clone, Copy)]
struct FileInDir<'a> {
    /// The preopen it lies in.
    root: &'a FilesRoot,
    /// Its directory, absolute: the warm tree's key.
    dir: &'a Path,
    /// Its directory relative to the preopen (empty for the preopen).
    relative_dir: &'a Path,
    /// Its name.
    name: &'a Path,
}

/// `path` as a [`FileInDir`]; `None` for any other path (`.`, `..`,
/// repeated slashes), which is never looked up in what the session knows.
fn file_in_dir<'a>(roots: &'a [FilesRoot], path: &'a Path) -> Option<FileInDir<'a>> {
    let (root, relative) = beneath(roots, path)?;
    // What a walk asks with: cut at the last `/` by bytes.
    #[cfg(unix)]
    if root.holds_plainly(path) {
        use std::os::unix::ffi::OsStrExt;
        let split_last = |bytes: &'a [u8]| {
            let slash = bytes.iter().rposition(|&b| b == b'/');
            let (head, tail) = slash.map_or((&b""[..], bytes), |i| (&bytes[..i], &bytes[i + 1..]));
            (
                Path::new(std::ffi::OsStr::from_bytes(head)),
                Path::new(std::ffi::OsStr::from_bytes(tail)),
            )
        };
        let (dir, name) = split_last(path.as_os_str().as_bytes());
        let (relative_dir, _) = split_last(relative.as_os_str().as_bytes());
        return Some(FileInDir {
            root,
            dir,
            relative_dir,
            name,
        });
    }
    file_in_dir_by_components(root, relative, path)
}

/// [`file_in_dir`] the long way, for any spelling of a path.
fn file_in_dir_by_components<'a>(root: &'a FilesRoot, relative: &'a Path, path: &'a Path) -> Option<FileInDir<'a>> {
    let dir = path.parent()?;
    let name = path.file_name()?;
    let exact = !relative.as_os_str().is_empty()
        && relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && dir.join(name).as_os_str() == path.as_os_str();
    exact.then(|| FileInDir {
        root,
        dir,
        relative_dir: relative.parent().unwrap_or(Path::new("")),
        name: Path::new(name),
    })
}

/// The directory `relative` beneath `root` (empty: the preopen itself),
/// opened for `fstatat` of its entries by name. No symlink on the way is
/// followed, and nothing above the preopen reached, whatever changed since
/// the warm tree said the directory is kept, so it is inside when opened.
/// Renamed out while its files are stat'ed, it still holds them: a stat
/// that matches a learned version (a rename or link of the file itself
/// sets its change time) is of a file learned inside and unchanged since,
/// and rules it out as it stood when the directory was opened. `None`
/// where that cannot be had (openat2 missing, a rename racing the
/// lookup): the files are then read.
#[cfg(not(target_os = "linux"))]
fn open_for_stats(_root: &FilesRoot, _relative: &Path) -> Option<std::fs::File> {
    None
}

/// See the variant for other systems: the directory for `fstatat` of its
/// entries (`openat2`, Linux's).
#[cfg(target_os = "linux")]
fn open_for_stats(root: &FilesRoot, relative: &Path) -> Option<std::fs::File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::openat2(&root.dir, relative, flags, Mode::empty(), resolve).ok()?;
    Some(std::fs::File::from(dir))
}

/// The preopen `path` lies in, and the path relative to it.
fn beneath<'a>(roots: &'a [FilesRoot], path: &'a Path) -> Option<(&'a FilesRoot, &'a Path)> {
    roots.iter().find_map(|r| strip_root(path, &r.at).map(|rel| (r, rel)))
}

/// `path.strip_prefix(at)`, by bytes where the rest is plain names (what a
/// walk asks with, once per directory and file): comparing components was
/// a twentieth of a repeated glob's time.
fn strip_root<'a>(path: &'a Path, at: &Path) -> Option<&'a Path> {
    #[cfg(unix)]
    if let Some(rest) = plain_rest(path, at) {
        use std::os::unix::ffi::OsStrExt;
        return Some(Path::new(std::ffi::OsStr::from_bytes(rest)));
    }
    path.strip_prefix(at).ok()
}

/// One file, whole, into `data` (emptied first) through the preopen it lies
/// in; `Err` is the answer instead (too large, unreadable). With `to_learn`,
/// also the version it had before the read, if what is read may be learned
/// ([`Version::to_learn`]; `opened` is when the answer began). `max_size` is
/// already capped ([`file_cap`]), so `max_size + 1` cannot overflow.
fn read_whole(
    roots: &[FilesRoot],
    path: &Path,
    max_size: u64,
    to_learn: Option<SystemTime>,
    data: &mut Vec<u8>,
) -> (Result<(), Content>, Option<Version>) {
    data.clear();
    let (file, meta) = match open_regular(roots, path) {
        Ok(opened) => opened,
        Err(why) => return (Err(unreadable(why)), None),
    };
    if meta.len() > max_size {
        return (Err(Content::TooLarge(meta.len())), None);
    }
    let version = to_learn.and_then(|opened| Version::to_learn(&file, &meta, opened));
    let read = match read_to_end(&file, meta.len(), max_size, data) {
        // A file that grew past the limit since its stat is too large, as a
        // fresh stat would say.
        Ok(()) if data.len() as u64 > max_size => Err(Content::TooLarge(data.len() as u64)),
        Ok(()) => Ok(()),
        Err(e) => Err(Content::Unreadable(plain(&e))),
    };
    (read, version)
}

/// Reads the regular file `file` from its start to its end into `data`,
/// stopping once it holds more than `max_size` bytes; `size` is the size
/// its `stat` gave. One `read` where the file still has that size: asked
/// for a byte more, a read that returns exactly `size` bytes found the end
/// (a regular file's read is short only there), so no second read is spent
/// to see it; a file that shrank or grew since is read on to its end. `std`'s
/// `read_to_end` would read in growing chunks from 8 KiB and then once more:
/// four reads for a 30 KB file, twice the system calls of the walk.
fn read_to_end(file: &std::fs::File, size: u64, max_size: u64, data: &mut Vec<u8>) -> std::io::Result<()> {
    // Both fit in memory: `max_size` is capped far below `usize::MAX`.
    let limit = usize::try_from(max_size.saturating_add(1)).unwrap_or(usize::MAX);
    let expected = usize::try_from(size).unwrap_or(usize::MAX).min(limit);
    data.reserve_exact(expected.saturating_add(1).min(limit));
    while data.len() < limit {
        if data.len() == data.capacity() {
            // Grown since its stat: doubling, as far as the limit.
            data.reserve((limit - data.len()).min(data.len().max(8 << 10)));
        }
        let most = (data.capacity() - data.len()).min(limit - data.len());
        let got = read_some(file, data, most)?;
        if got == 0 || (got < most && data.len() == expected) {
            break;
        }
    }
    Ok(())
}

/// One `read` of at most `most` bytes appended to `data`, whose spare
/// capacity holds them; retried when a signal interrupts it.
#[cfg(windows)]
fn read_some(mut file: &std::fs::File, data: &mut Vec<u8>, most: usize) -> std::io::Result<usize> {
    let start = data.len();
    data.resize(start + most, 0);
    let got = loop {
        match std::io::Read::read(&mut file, &mut data[start..]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => break other,
        }
    };
    data.truncate(start + *got.as_ref().unwrap_or(&0));
    got
}

/// One `read` of at most `most` bytes appended to `data`, whose spare
/// capacity holds them; retried when a signal interrupts it.
#[cfg(unix)]
fn read_some(file: &std::fs::File, data: &mut Vec<u8>, most: usize) -> std::io::Result<usize> {
    loop {
        let spare = &mut data.spare_capacity_mut()[..most];
        match rustix::io::read(file, spare) {
            Ok((filled, _)) => {
                let got = filled.len();
                // SAFETY: the read initialised the first `got` bytes of the
                // spare capacity, which follow the vector's length.
                unsafe { data.set_len(data.len() + got) };
                return Ok(got);
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Opens a regular file through the preopen it lies in, and stats the open
/// file. The open is resolved beneath that directory by cap-std (as WASI's
/// are): `..` or a symlink that leaves it fails, whatever the path says. It
/// never blocks: a FIFO (even one swapped in after a check) is opened
/// non-blocking and refused by the stat.
fn open_regular(roots: &[FilesRoot], path: &Path) -> Result<(std::fs::File, std::fs::Metadata), HeadError> {
    let (root, relative) = beneath(roots, path).ok_or(HeadError::Outside)?;
    if relative.as_os_str().is_empty() {
        return Err(HeadError::Directory);
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = cap_primitives::fs::open(&root.dir, relative, &options).map_err(|e| open_error(&e))?;
    let meta = file.metadata().map_err(|e| HeadError::Other(plain(&e)))?;
    if meta.is_dir() {
        return Err(HeadError::Directory);
    }
    if !meta.is_file() {
        return Err(HeadError::NotRegular);
    }
    Ok((file, meta))
}

/// What a failed open means: cap-std reports a path that leads outside its
/// directory as a permission error with no OS error number.
fn open_error(err: &std::io::Error) -> HeadError {
    match err.kind() {
        std::io::ErrorKind::NotFound => HeadError::NotFound,
        std::io::ErrorKind::PermissionDenied if err.raw_os_error().is_none() => HeadError::Outside,
        _ => HeadError::Other(plain(err)),
    }
}

/// Why a file is unreadable, in words, for a `read-files` answer.
fn unreadable(why: HeadError) -> Content {
    Content::Unreadable(match why {
        HeadError::NotFound => "not found".into(),
        HeadError::Directory => "is a directory".into(),
        HeadError::NotRegular => "not a regular file".into(),
        HeadError::Outside => "outside the project root".into(),
        HeadError::Other(why) => why,
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_byte_strip_of_a_root_is_the_components_strip() {
        for at in ["/home/u/p", ".", "/"] {
            for path in [
                "/home/u/p",
                "/home/u/p/a/b.rs",
                "/home/u/p//a",
                "/home/u/p/./a",
                "/home/u/p/a/",
                "/home/u/p/../x",
                "/home/u/px/a",
                "./a/b",
                "./.git/x",
                ".git/x",
                "..",
                "a/b",
                "/a",
            ] {
                let (path, at) = (Path::new(path), Path::new(at));
                // By bytes: `Path`'s `==` compares components (`a/` is `a`).
                assert_eq!(
                    strip_root(path, at).map(Path::as_os_str),
                    path.strip_prefix(at).ok().map(Path::as_os_str),
                    "{path:?} at {at:?}"
                );
            }
        }
    }

    /// The byte cut of what a walk asks with gives what the components give,
    /// for every spelling, under a root and under `/`.
    #[test]
    fn a_files_directory_by_bytes_is_its_directory_by_components() {
        use std::ffi::OsString;
        let tmp = tempfile::tempdir().unwrap();
        fn fields(f: FileInDir<'_>) -> (OsString, OsString, OsString) {
            (f.dir.into(), f.relative_dir.into(), f.name.into())
        }
        for at in [tmp.path(), Path::new("/")] {
            let roots = [FilesRoot::new(at, std::fs::File::open(at).unwrap())];
            let at = at.to_string_lossy().trim_end_matches('/').to_string();
            for rest in [
                "/a",
                "/a/b.rs",
                "/a/b/c.rs",
                "//a",
                "/a//b",
                "/./a",
                "/a/./b",
                "/a/../b",
                "/a/",
                "/..",
                "/a\\b",
                "/.a/b",
            ] {
                let path = format!("{at}{rest}");
                let path = Path::new(&path);
                let (root, relative) = beneath(&roots, path).unwrap();
                assert_eq!(
                    file_in_dir(&roots, path).map(fields),
                    file_in_dir_by_components(root, relative, path).map(fields),
                    "{path:?}"
                );
            }
        }
    }

    /// A directory is opened for stats only through real directories
    /// beneath the preopen.
    #[test]
    fn a_directory_for_stats_is_reached_through_no_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("d/e")).unwrap();
        std::os::unix::fs::symlink("d", tmp.path().join("link")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), tmp.path().join("d/up")).unwrap();
        let root = FilesRoot::new(tmp.path(), std::fs::File::open(tmp.path()).unwrap());
        for (relative, opens) in [
            ("", true),
            ("d", true),
            ("d/e", true),
            ("link", false),
            ("link/e", false),
            ("d/up/d", false),
            ("..", false),
            ("d/../..", false),
            ("missing", false),
        ] {
            assert_eq!(
                open_for_stats(&root, Path::new(relative)).is_some(),
                opens,
                "{relative}"
            );
        }
    }

    #[test]
    fn a_components_size_limit_is_capped_by_the_host() {
        assert_eq!(file_cap(u64::MAX, usize::MAX), MAX_FILE_BYTES);
        assert_eq!(file_cap(100, usize::MAX), 100);
        assert_eq!(file_cap(u64::MAX, 1 << 20), 1 << 20);
    }

    fn keeps(files: &mut Files, needles: &[&str], fold_case: bool, haystack: &str) -> Option<bool> {
        let needles = needles.iter().map(|n| n.as_bytes().to_vec()).collect();
        Needles::cached(&mut files.needles, needles, fold_case).map(|n| n.search.any_in(haystack.as_bytes()))
    }

    #[test]
    fn the_needle_search_follows_the_wit_contract() {
        let mut files = Files::default();
        assert_eq!(keeps(&mut files, &["foo", "barbaz"], false, "a barbaz b"), Some(true));
        assert_eq!(
            keeps(&mut files, &["foo", "barbaz"], false, "fo o bar baz"),
            Some(false)
        );
        assert_eq!(keeps(&mut files, &["foo", "barbaz"], false, "a BarBaz b"), Some(false));
        assert_eq!(keeps(&mut files, &["foo", "barbaz"], true, "a BarBaz b"), Some(true));
        assert_eq!(
            keeps(&mut files, &["FOO"], true, "xfoox"),
            Some(true),
            "needles fold too"
        );
        assert_eq!(
            keeps(&mut files, &["fok"], true, "fo\u{212a}"),
            Some(false),
            "ASCII only"
        );
        assert_eq!(
            keeps(&mut files, &[""], false, "anything"),
            Some(true),
            "an empty needle is everywhere"
        );
        assert_eq!(keeps(&mut files, &[""], true, ""), Some(true));
        assert_eq!(
            keeps(&mut files, &[], false, "anything"),
            Some(false),
            "no needles, in no file"
        );
        let many: Vec<String> = (0..=MAX_NEEDLES).map(|i| format!("n{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            keeps(&mut files, &many, false, "x"),
            None,
            "too many needles: not looked for"
        );
        let long = "x".repeat(MAX_NEEDLE_BYTES + 1);
        assert_eq!(keeps(&mut files, &[&long], true, "y"), None, "too long: not looked for");
    }
}
