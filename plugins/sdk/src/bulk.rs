//! Whole files and directory listings in bulk: the host's `iota:toolset/files` inside a component,
//! `std::fs` natively (benchmarks, unit tests).
//!
//! A component that reads many files (grep over a tree) pays a dozen WASI
//! calls per file through the preopen; one `read-files` call reads a batch.

pub use crate::bindings::iota::toolset::files::{Content, Entry, FileHead, HeadError, Kind};

/// Reads every path (absolute, inside the project root or a read-only
/// directory), each whole when at most `max_size` bytes; one answer per path,
/// in order.
pub fn read_files(paths: &[String], max_size: u64) -> Vec<Content> {
    let mut answers = Vec::with_capacity(paths.len());
    while answers.len() < paths.len() {
        let batch = read_some(&paths[answers.len()..], max_size);
        // The host answers at least one path; an empty answer would loop.
        assert!(!batch.is_empty(), "read-files answered nothing");
        answers.extend(batch);
    }
    answers
}

/// Reads every path like [`read_files`], handing each answer to `f` in order
/// as it arrives, so no more than one host answer (about 256 KiB) is held at
/// once; stops early when `f` returns false.
pub fn each_file(paths: &[String], max_size: u64, mut f: impl FnMut(usize, Content) -> bool) {
    let mut done = 0;
    while done < paths.len() {
        let batch = read_some(&paths[done..], max_size);
        assert!(!batch.is_empty(), "read-files answered nothing");
        for content in batch {
            if !f(done, content) {
                return;
            }
            done += 1;
        }
    }
}

/// Reads every path like [`each_file`], but hands `f` only the answers for
/// files that hold one of `needles` (or are too large or unreadable): the
/// host looks for the needles natively, so the files that cannot match are
/// never copied in. `f` gets each answer's index in `paths`.
pub fn each_file_containing(
    paths: &[String],
    max_size: u64,
    needles: &[Vec<u8>],
    mut f: impl FnMut(usize, Content) -> bool,
) {
    let mut done = 0;
    while done < paths.len() {
        let batch = read_some_containing(&paths[done..], max_size, needles);
        assert!(!batch.is_empty(), "read-files-containing answered nothing");
        for content in batch {
            if let Some(content) = content
                && !f(done, content)
            {
                return;
            }
            done += 1;
        }
    }
}

/// Opens the file at `path` (absolute, inside the project root or a
/// read-only directory; links followed while they stay inside) and reads at
/// most `max_size` bytes, with its size and modification time: one host call
/// for what costs a dozen WASI calls. A FIFO or device is refused unopened.
pub fn read_head(path: &str, max_size: u64) -> Result<FileHead, HeadError> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::files::read_head(path, max_size);
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::io::{ErrorKind, Read};
        let error = |e: std::io::Error| match e.kind() {
            ErrorKind::NotFound => HeadError::NotFound,
            _ => HeadError::Other(crate::output::plain(&e)),
        };
        // Natively there is no preopen: the stat before the open keeps a
        // FIFO from blocking it.
        let meta = std::fs::metadata(path).map_err(error)?;
        if meta.is_dir() {
            return Err(HeadError::Directory);
        }
        if !meta.is_file() {
            return Err(HeadError::NotRegular);
        }
        let mut data = Vec::with_capacity(meta.len().min(max_size) as usize);
        std::fs::File::open(path)
            .and_then(|file| file.take(max_size).read_to_end(&mut data))
            .map_err(error)?;
        Ok(FileHead {
            data,
            size: meta.len(),
            modified_ns: modified_ns(&meta),
        })
    }
}

/// A `stat` result's modification time as `read-head` reports it:
/// nanoseconds since the Unix epoch, 0 when unknown or earlier. The host and
/// every reader of a file's time share it, so the same stat gives the same
/// number everywhere.
pub fn modified_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The entries of the directory at `path` (absolute, inside the project root
/// or a read-only directory), in no particular order; a symlink is reported
/// as one, never followed.
pub fn list_dir(path: &str) -> Result<Vec<Entry>, String> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::files::list_dir(path);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let entries = std::fs::read_dir(path).map_err(|e| e.to_string())?;
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

#[cfg(target_arch = "wasm32")]
fn read_some(paths: &[String], max_size: u64) -> Vec<Content> {
    crate::bindings::iota::toolset::files::read_files(paths, max_size)
}

#[cfg(target_arch = "wasm32")]
fn read_some_containing(paths: &[String], max_size: u64, needles: &[Vec<u8>]) -> Vec<Option<Content>> {
    crate::bindings::iota::toolset::files::read_files_containing(paths, max_size, needles)
}

/// Natively the needles are looked for here, one `memmem` pass each, as the
/// host would answer (the limits on needles aside).
#[cfg(not(target_arch = "wasm32"))]
fn read_some_containing(paths: &[String], max_size: u64, needles: &[Vec<u8>]) -> Vec<Option<Content>> {
    read_some(paths, max_size)
        .into_iter()
        .map(|content| match content {
            Content::Data(data) if !needles.iter().any(|n| memchr::memmem::find(&data, n).is_some()) => None,
            other => Some(other),
        })
        .collect()
}

#[cfg(not(target_arch = "wasm32"))]
fn read_some(paths: &[String], max_size: u64) -> Vec<Content> {
    use std::io::Read;
    paths
        .iter()
        .map(|path| {
            let read = || -> std::io::Result<Content> {
                let file = std::fs::File::open(path)?;
                let meta = file.metadata()?;
                if !meta.is_file() {
                    return Ok(Content::Unreadable("not a regular file".into()));
                }
                if meta.len() > max_size {
                    return Ok(Content::TooLarge(meta.len()));
                }
                let mut data = Vec::with_capacity(meta.len() as usize + 1);
                file.take(max_size + 1).read_to_end(&mut data)?;
                Ok(if data.len() as u64 > max_size {
                    Content::TooLarge(data.len() as u64)
                } else {
                    Content::Data(data)
                })
            };
            read().unwrap_or_else(|e| Content::Unreadable(e.to_string()))
        })
        .collect()
}
