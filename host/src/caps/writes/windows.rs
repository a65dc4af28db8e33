//! The write capability's file operations on Windows: every directory of
//! the walk held open without `FILE_SHARE_DELETE` (so none of them can be
//! renamed or removed, and each held path stays that directory), every
//! name opened as itself when it is a reparse point and refused or read as
//! a link; the new file written under a temporary name beside the target
//! and put in place by a hard link (where nothing may be) or a rename over
//! it (where something is expected).

use super::{Entry, Version, WriteError, same_version, version_of};
use crate::platform::windows::{HeldDir, is_link_refusal, is_reparse_point, open_no_reparse};
use crate::scratch::{is_write_temporary, temporary_name};
use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A directory on a write's path, held.
pub type Dir = HeldDir;

/// Told of a write's temporary name (in the directory given) before it is
/// made.
pub type Note<'a> = &'a dyn Fn(&Path, &OsStr);

/// A held directory keeps its path only while the directories above it
/// cannot move either: the walk keeps them all.
pub const HOLDS_ANCESTORS: bool = true;

/// Nothing identifies the root beyond holding it: the walk up stops at the
/// held directories.
#[derive(Debug, Clone, Copy)]
pub struct RootId;

/// The pinned root, held again to walk from.
pub fn open_root(root: &Path) -> std::io::Result<Dir> {
    HeldDir::open(root)
}

/// The identity of the opened root.
pub fn root_id(_root: &Dir) -> std::io::Result<RootId> {
    Ok(RootId)
}

/// What `name` in `dir` is, not following a reparse point; `None` when
/// nothing is.
pub fn entry(dir: &Dir, name: &OsStr) -> std::io::Result<Option<Entry>> {
    match std::fs::symlink_metadata(dir.join(name)?) {
        Ok(meta) if is_reparse_point(&meta) => Ok(Some(Entry::Link)),
        Ok(meta) if meta.is_dir() => Ok(Some(Entry::Directory)),
        Ok(meta) if meta.is_file() => Ok(Some(Entry::Regular)),
        Ok(_) => Ok(Some(Entry::Other)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Holds the directory `name` in `dir`: `Ok(None)` when nothing is there;
/// an error of kind `NotADirectory` when something else is (a reparse
/// point included).
pub fn enter(dir: &Dir, name: &OsStr) -> std::io::Result<Option<Dir>> {
    match dir.child(name) {
        Ok(held) => Ok(Some(held)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if is_link_refusal(&e) || crate::platform::windows::is_not_directory(&e) => {
            Err(std::io::ErrorKind::NotADirectory.into())
        }
        Err(e) => Err(e),
    }
}

/// The target of the link `name` in `dir` (a junction's is absolute).
pub fn read_link(dir: &Dir, name: &OsStr) -> std::io::Result<PathBuf> {
    std::fs::read_link(dir.join(name)?)
}

/// Whether `dir` is a repository's own directory.
pub fn is_repository(dir: &Dir) -> bool {
    crate::protected::is_repository_path(dir.path())
}

/// The regular file `name` in `dir`, opened to read and never through a
/// reparse point; `Ok(None)` when nothing is there.
pub fn open_to_read(dir: &Dir, name: &OsStr) -> std::io::Result<Option<std::fs::File>> {
    match open_no_reparse(OpenOptions::new().read(true), &dir.join(name)?) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if is_link_refusal(&e) => Err(std::io::ErrorKind::NotADirectory.into()),
        Err(e) => Err(e),
    }
}

/// Makes the directory `name` in `dir` (if missing) and holds it, never
/// through a reparse point.
pub fn make_and_enter(dir: &Dir, name: &OsStr) -> Result<Dir, WriteError> {
    match std::fs::create_dir(dir.join(name)?) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.into()),
    }
    match dir.child(name) {
        Ok(held) => Ok(held),
        Err(e) if is_link_refusal(&e) || crate::platform::windows::is_not_directory(&e) => Err(WriteError::PathChanged),
        Err(e) => Err(e.into()),
    }
}

/// Writes `content` as `name` in `dir` when what is there is `expect`
/// (`None`: nothing): the new file made exclusively under a temporary name
/// (noted first), flushed to the disk, then put in place — by a hard link
/// when nothing may be there (which fails if something appeared), by a
/// rename over it otherwise (which replaces a link put there since, never
/// follows it). `placed` is called once the file is under its name.
pub fn write_in(
    dir: &Dir,
    name: &OsStr,
    content: &[u8],
    expect: Option<Version>,
    note: Note<'_>,
    placed: &dyn Fn(),
) -> Result<std::fs::Metadata, WriteError> {
    let target = dir.join(name)?;
    let replacing = match (std::fs::symlink_metadata(&target), expect) {
        (Err(e), None) if e.kind() == std::io::ErrorKind::NotFound => false,
        (Ok(meta), Some(expected))
            if meta.is_file() && !is_reparse_point(&meta) && same_version(&version_of(&meta), &expected) =>
        {
            true
        }
        (Err(e), _) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => return Err(WriteError::Changed),
    };
    let temporary = temporary_name(name);
    note(dir.path(), &temporary);
    let at = dir.join(&temporary)?;
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&at)?;
        file.write_all(content)?;
        file.sync_all()?;
        file.metadata()
    })();
    let placed_here = written.map_err(WriteError::from).and_then(|meta| {
        if replacing {
            std::fs::rename(&at, &target)?;
        } else {
            match std::fs::hard_link(&at, &target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(WriteError::Changed),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(meta)
    });
    // What is left under the temporary name: all of it on a failure, the
    // second name of a hard link on success.
    let _ = std::fs::remove_file(&at);
    let meta = placed_here?;
    placed();
    remove_stale_temporaries(dir, name);
    Ok(meta)
}

/// Whether `dir`, or a held directory above it, is a repository's own
/// directory now. Every directory from the root down is held, so their
/// paths are theirs.
pub fn became_repository(_dir: &Dir, above: &[&Dir], _root: RootId) -> bool {
    above
        .iter()
        .rev()
        .take(super::MAX_DEPTH_CHECKED)
        .any(|held| is_repository(held))
}

/// Removes what killed writes of `name` left in `dir` when older than
/// [`super::STALE`].
fn remove_stale_temporaries(dir: &Dir, name: &OsStr) {
    let mut prefix = OsStr::new(".").to_os_string();
    prefix.push(name);
    prefix.push(".iota-");
    let Ok(entries) = std::fs::read_dir(dir.path()) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let found = entry.file_name();
        let bytes = found.as_encoded_bytes();
        if !(bytes.starts_with(prefix.as_encoded_bytes()) && is_write_temporary(bytes)) {
            continue;
        }
        let old = entry.metadata().is_ok_and(|meta| {
            meta.is_file()
                && !is_reparse_point(&meta)
                && meta
                    .modified()
                    .is_ok_and(|modified| now.duration_since(modified).is_ok_and(|age| age > super::STALE))
        });
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
