//! The write capability's system calls on Unix: directories as descriptors,
//! each entered with `O_NOFOLLOW`, the new file unnamed (`O_TMPFILE`) where
//! the filesystem allows, put in place by `linkat`/`renameat2`.

use super::{Entry, Version, WriteError, same_version};
use crate::scratch::{is_write_temporary, temporary_name};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A directory on a write's path, open.
pub type Dir = OwnedFd;

/// Told of a write's temporary name (in the directory given) before it is
/// made.
pub type Note<'a> = &'a dyn Fn(BorrowedFd<'_>, &OsStr);

/// The pinned root, opened again to walk from.
pub fn open_root(root: &Path) -> std::io::Result<Dir> {
    Ok(rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// What `name` in `dir` is, not following a link; `None` when nothing is.
pub fn entry(dir: &Dir, name: &OsStr) -> std::io::Result<Option<Entry>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => Entry::Link,
            FileType::Directory => Entry::Directory,
            FileType::RegularFile => Entry::Regular,
            _ => Entry::Other,
        })),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Enters the directory `name` in `dir` without following a link:
/// `Ok(None)` when nothing is there; an error of kind
/// `NotADirectory` when something else is (a link included).
pub fn enter(dir: &Dir, name: &OsStr) -> std::io::Result<Option<Dir>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(dir) => Ok(Some(dir)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) => Err(std::io::ErrorKind::NotADirectory.into()),
        Err(e) => Err(e.into()),
    }
}

/// The target of the link `name` in `dir`.
pub fn read_link(dir: &Dir, name: &OsStr) -> std::io::Result<PathBuf> {
    let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
    Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
}

/// Whether `dir` is a repository's own directory.
pub fn is_repository(dir: &Dir) -> bool {
    crate::protected::is_repository_dir(dir)
}

/// A descriptor keeps its directory whatever happens to the path above
/// it: the walk's other directories need not stay open.
pub const HOLDS_ANCESTORS: bool = false;

/// The root's identity, where a look up from a held directory stops.
pub type RootId = (u64, u64);

/// The identity of the opened root.
pub fn root_id(root: &Dir) -> std::io::Result<RootId> {
    Ok(rustix::fs::fstat(root).map(|st| crate::platform::dev_ino(&st))?)
}

/// The regular file `name` in `dir`, opened to read without following a
/// link or waiting on a FIFO; `Ok(None)` when nothing is there.
pub fn open_to_read(dir: &Dir, name: &OsStr) -> std::io::Result<Option<std::fs::File>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(std::fs::File::from(fd))),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP) => Err(std::io::ErrorKind::NotADirectory.into()),
        Err(e) => Err(e.into()),
    }
}

/// Makes the directory `name` in `dir` (if missing) and enters it without
/// following a link: what the walk left to create.
pub fn make_and_enter(dir: &Dir, name: &OsStr) -> Result<Dir, WriteError> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(dir) => Ok(dir),
        // Something not a directory was put there since the decision.
        Err(Errno::LOOP | Errno::NOTDIR) => Err(WriteError::PathChanged),
        Err(e) => Err(e.into()),
    }
}

/// Writes `content` as `name` in `dir` when what is there is `expect`
/// (`None`: nothing): the new file made unnamed in the directory
/// (`O_TMPFILE`, so an interrupted write leaves nothing) and linked in under
/// the name — directly when nothing may be there (a file that appeared
/// meanwhile is never replaced), by a rename over it otherwise (which
/// replaces a link put there since, never follows it). A new file gets 0644
/// less the umask, a replaced one its mode. `placed` is called once the
/// file is under its name. Returns the new file's metadata.
pub fn write_in(
    dir: &Dir,
    name: &OsStr,
    content: &[u8],
    expect: Option<Version>,
    note: Note<'_>,
    placed: &dyn Fn(),
) -> Result<std::fs::Metadata, WriteError> {
    let dir = dir.as_fd();
    let mode = match (rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW), expect) {
        (Err(Errno::NOENT), None) => None,
        (Ok(st), Some(expected))
            if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                && same_version(&stat_version(&st), &expected) =>
        {
            Some(Mode::from_raw_mode(st.st_mode & 0o7777))
        }
        (Ok(_), _) | (Err(Errno::NOENT), Some(_)) => return Err(WriteError::Changed),
        (Err(e), _) => return Err(e.into()),
    };
    let mut new = NewFile::create(dir, name, mode, note)?;
    new.file.write_all(content)?;
    if let Some(mode) = mode {
        // The umask narrowed the mode the file was made with.
        rustix::fs::fchmod(&new.file, mode)?;
    }
    // On the disk before it is in place: a crash after the answer
    // keeps what the answer says was written.
    new.file.sync_all()?;
    let meta = new.file.metadata()?;
    new.link(dir, name, mode.is_some(), note)?;
    placed();
    // The new name durable too; the file is in place whatever this says.
    let _ = rustix::fs::fsync(dir);
    remove_stale_temporaries(dir, name);
    Ok(meta)
}

impl From<Errno> for WriteError {
    fn from(e: Errno) -> WriteError {
        WriteError::Io(e.into())
    }
}

/// A file being written, not yet under its name.
struct NewFile {
    file: std::fs::File,
    /// Its temporary name in the directory, when the filesystem has no
    /// unnamed files (`O_TMPFILE`).
    named: Option<OsString>,
}

impl NewFile {
    /// An unnamed file in `dir`, or else one under an unpredictable
    /// temporary name, created exclusively.
    fn create(dir: BorrowedFd<'_>, name: &OsStr, mode: Option<Mode>, note: Note<'_>) -> Result<NewFile, WriteError> {
        let mode = mode.unwrap_or(Mode::from_raw_mode(0o644));
        // An unnamed file (Linux's `O_TMPFILE`) is linked in through /proc
        // (`AT_EMPTY_PATH` needs a capability), so without /proc it could
        // not be named.
        #[cfg(target_os = "linux")]
        let opened = if proc_fds() {
            let unnamed = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
            rustix::fs::openat(dir, ".", unnamed, mode)
        } else {
            Err(Errno::NOENT)
        };
        #[cfg(not(target_os = "linux"))]
        let opened: rustix::io::Result<OwnedFd> = Err(Errno::NOENT);
        match opened {
            Ok(fd) => {
                return Ok(NewFile {
                    file: fd.into(),
                    named: None,
                });
            }
            // Filesystems without O_TMPFILE answer one of these.
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        let named = temporary_name(name);
        note(dir, &named);
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir, &named, flags, mode)?;
        Ok(NewFile {
            file: fd.into(),
            named: Some(named),
        })
    }

    /// Puts the file under `name` in `dir`: over what is there when
    /// `replacing`, else only where nothing is.
    fn link(self, dir: BorrowedFd<'_>, name: &OsStr, replacing: bool, note: Note<'_>) -> Result<(), WriteError> {
        let exists = |e: Errno| {
            if e == Errno::EXIST {
                WriteError::Changed
            } else {
                e.into()
            }
        };
        match &self.named {
            None => {
                let proc_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&self.file));
                if !replacing {
                    return rustix::fs::linkat(CWD, proc_path.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
                        .map_err(exists);
                }
                let temporary = temporary_name(name);
                note(dir, &temporary);
                rustix::fs::linkat(CWD, proc_path.as_str(), dir, &temporary, AtFlags::SYMLINK_FOLLOW)?;
                rename_into_place(dir, &temporary, name)
            }
            Some(temporary) if replacing => rename_into_place(dir, temporary, name),
            Some(temporary) => {
                let placed = match rustix::fs::renameat_with(dir, temporary, dir, name, RenameFlags::NOREPLACE) {
                    // No RENAME_NOREPLACE here: a hard link is as exclusive.
                    Err(Errno::INVAL | Errno::NOSYS) => rustix::fs::linkat(dir, temporary, dir, name, AtFlags::empty())
                        .and_then(|()| rustix::fs::unlinkat(dir, temporary, AtFlags::empty())),
                    other => other,
                };
                placed.map_err(|e| {
                    let _ = rustix::fs::unlinkat(dir, temporary, AtFlags::empty());
                    exists(e)
                })
            }
        }
    }
}

/// Whether this process's descriptors are reachable as `/proc/self/fd/N`.
#[cfg(target_os = "linux")]
fn proc_fds() -> bool {
    static MOUNTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MOUNTED.get_or_init(|| Path::new("/proc/self/fd").is_dir())
}

/// Whether `dir` or a directory above it up to the root (`root`: its device
/// and inode; through `..` from the directory itself, never a path) is a
/// repository's own directory now.
pub fn became_repository(dir: &Dir, _above: &[&Dir], root: RootId) -> bool {
    let flags = crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(mut at) = rustix::fs::openat(dir, ".", flags, Mode::empty()) else {
        return false;
    };
    for _ in 0..super::MAX_DEPTH_CHECKED {
        if crate::protected::is_repository_dir(&at) {
            return true;
        }
        let here = rustix::fs::fstat(&at).map(|st| crate::platform::dev_ino(&st));
        if here.is_err() || here == Ok(root) {
            return false;
        }
        let Ok(up) = rustix::fs::openat(&at, "..", flags, Mode::empty()) else {
            return false;
        };
        at = up;
    }
    false
}

/// Removes what killed writes of `name` left in `dir`: the `.NAME.iota-*.tmp`
/// a replacement links in just before its rename, when older than
/// [`super::STALE`].
fn remove_stale_temporaries(dir: BorrowedFd<'_>, name: &OsStr) {
    let mut prefix = b".".to_vec();
    prefix.extend_from_slice(name.as_bytes());
    prefix.extend_from_slice(b".iota-");
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(listed) = rustix::fs::openat(dir, ".", flags, Mode::empty()) else {
        return;
    };
    let mut buffer = Vec::with_capacity(16 << 10);
    let mut entries = crate::platform::listing(&listed, &mut buffer);
    let now = std::time::SystemTime::now();
    while let Some(Ok(entry)) = entries.next() {
        let found = entry.file_name().to_bytes();
        if !(found.starts_with(&prefix) && is_write_temporary(found)) {
            continue;
        }
        let old = rustix::fs::statat(dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
            let modified =
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(st.st_mtime).unwrap_or(0));
            FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                && st.st_uid == rustix::process::geteuid().as_raw()
                && now.duration_since(modified).is_ok_and(|age| age > super::STALE)
        });
        if old {
            let _ = rustix::fs::unlinkat(dir, entry.file_name(), AtFlags::empty());
        }
    }
}

/// Renames `temporary` over `name` in `dir`, removing it if that fails.
fn rename_into_place(dir: BorrowedFd<'_>, temporary: &OsStr, name: &OsStr) -> Result<(), WriteError> {
    rustix::fs::renameat(dir, temporary, dir, name).map_err(|e| {
        let _ = rustix::fs::unlinkat(dir, temporary, AtFlags::empty());
        e.into()
    })
}

/// A file's version from a `stat`: the same clock as [`version_of`].
fn stat_version(st: &rustix::fs::Stat) -> Version {
    let ns = i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec);
    Version {
        size: st.st_size as u64,
        modified_ns: u64::try_from(ns).unwrap_or(0),
    }
}
