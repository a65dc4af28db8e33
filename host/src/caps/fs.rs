//! The filesystem capability: WASI preopens of the project root, and
//! `iota:toolset/files`, whole-file reads in bulk through the same jail.
//!
//! The root is preopened both at `.` and at its absolute path, so a guest can
//! use the absolute paths it reports to the model. wasmtime's preopen refuses
//! every path that leaves the root — `..`, absolute paths elsewhere, and any
//! symlink whose target is outside (even an absolute one pointing back in) —
//! which is stricter than the spec's lexical jail and is kept deliberately.

use super::CallState;
use super::bindings::iota::toolset::files::{Content, Entry, FileHead, HeadError, Host, Kind};
use anyhow::{Context as _, Result};
use cap_primitives::fs::{OpenOptions, OpenOptionsExt};
use iota_toolset::bulk::modified_ns;
use iota_toolset::output::plain;
use std::io::Read;
use std::path::{Path, PathBuf};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Data one `read-files` answer carries at most (beyond its first file).
pub const BULK_BUDGET: u64 = 256 << 10;

/// What a call may do to the project root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// No filesystem at all.
    None,
    /// Read-only: readers, previews, toolsets without the write grant.
    ReadOnly,
    /// Read-write: approved calls of writing tools with the write grant.
    ReadWrite,
}

/// A preopened directory as `read-files` sees it: where the guest sees it,
/// and a handle every open is resolved beneath.
pub struct BulkRoot {
    at: PathBuf,
    dir: std::fs::File,
}

/// Adds the preopens for `access` to `builder`: the root, and `read_dirs`
/// read-only at their absolute paths. Returns the same directories for
/// `read-files` (none without access).
pub fn preopen(
    builder: &mut WasiCtxBuilder,
    root: &Path,
    read_dirs: &[std::path::PathBuf],
    access: FsAccess,
) -> Result<Vec<BulkRoot>> {
    let perms = match access {
        FsAccess::None => return Ok(Vec::new()),
        FsAccess::ReadOnly => FsPerms::ReadOnly,
        FsAccess::ReadWrite => FsPerms::ReadWrite,
    };
    let absolute = root.to_str().context("the project root is not valid UTF-8")?;
    builder
        .preopened_dir(root, ".", perms)
        .and_then(|b| b.preopened_dir(root, absolute, perms))
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot open the project root {}", root.display()))?;
    for dir in read_dirs {
        let guest = dir.to_str().context("a readable directory's path is not valid UTF-8")?;
        builder
            .preopened_dir(dir, guest, FsPerms::ReadOnly)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("cannot open {}", dir.display()))?;
    }
    std::iter::once(root)
        .chain(read_dirs.iter().map(PathBuf::as_path))
        .map(|at| {
            let dir = cap_primitives::fs::open_ambient_dir(at, cap_primitives::ambient_authority())
                .with_context(|| format!("cannot open {}", at.display()))?;
            Ok(BulkRoot {
                at: at.to_path_buf(),
                dir,
            })
        })
        .collect()
}

impl Host for CallState {
    fn read_files(&mut self, paths: Vec<String>, max_size: u64) -> Vec<Content> {
        let mut answer = Vec::with_capacity(paths.len());
        let mut carried = 0u64;
        for path in paths {
            if !answer.is_empty() && carried >= BULK_BUDGET {
                break;
            }
            let content = read_whole(&self.bulk_roots, Path::new(&path), max_size);
            if let Content::Data(data) = &content {
                carried += data.len() as u64;
            }
            answer.push(content);
        }
        answer
    }

    fn read_head(&mut self, path: String, max_size: u64) -> Result<FileHead, HeadError> {
        let (file, meta) = open_regular(&self.bulk_roots, Path::new(&path))?;
        let mut data = Vec::with_capacity(meta.len().min(max_size) as usize);
        file.take(max_size)
            .read_to_end(&mut data)
            .map_err(|e| HeadError::Other(plain(&e)))?;
        Ok(FileHead {
            data,
            size: meta.len(),
            modified_ns: modified_ns(&meta),
        })
    }

    fn list_dir(&mut self, path: String) -> Result<Vec<Entry>, String> {
        let (root, relative) = beneath(&self.bulk_roots, Path::new(&path)).ok_or("outside the project root")?;
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let entries = cap_primitives::fs::read_dir(&root.dir, relative).map_err(|e| e.to_string())?;
        Ok(entries
            .filter_map(Result::ok)
            .map(|entry| {
                let kind = match entry.file_type() {
                    Ok(t) if t.is_symlink() => Kind::Symlink,
                    Ok(t) if t.is_dir() => Kind::Directory,
                    Ok(t) if t.is_file() => Kind::File,
                    _ => Kind::Other,
                };
                Entry {
                    name: entry.file_name().to_string_lossy().into_owned(),
                    kind,
                }
            })
            .collect())
    }
}

/// The preopen `path` lies in, and the path relative to it.
fn beneath<'a>(roots: &'a [BulkRoot], path: &'a Path) -> Option<(&'a BulkRoot, &'a Path)> {
    roots
        .iter()
        .find_map(|r| path.strip_prefix(&r.at).ok().map(|rel| (r, rel)))
}

/// One file, whole, through the preopen it lies in.
fn read_whole(roots: &[BulkRoot], path: &Path, max_size: u64) -> Content {
    let (mut file, meta) = match open_regular(roots, path) {
        Ok(opened) => opened,
        Err(why) => return unreadable(why),
    };
    if meta.len() > max_size {
        return Content::TooLarge(meta.len());
    }
    // Exactly the size stat gave (plus one byte to see growth); a file that
    // grew past the limit since is too large, as a fresh stat would say.
    let mut data = Vec::with_capacity(meta.len() as usize + 1);
    match (&mut file).take(max_size + 1).read_to_end(&mut data) {
        Ok(_) if data.len() as u64 > max_size => Content::TooLarge(data.len() as u64),
        Ok(_) => Content::Data(data),
        Err(e) => Content::Unreadable(plain(&e)),
    }
}

/// Opens a regular file through the preopen it lies in, and stats the open
/// file. The open is resolved beneath that directory by cap-std (as WASI's
/// are): `..` or a symlink that leaves it fails, whatever the path says. It
/// never blocks: a FIFO (even one swapped in after a check) is opened
/// non-blocking and refused by the stat.
fn open_regular(roots: &[BulkRoot], path: &Path) -> Result<(std::fs::File, std::fs::Metadata), HeadError> {
    let (root, relative) = beneath(roots, path).ok_or(HeadError::Outside)?;
    if relative.as_os_str().is_empty() {
        return Err(HeadError::Directory);
    }
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
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
