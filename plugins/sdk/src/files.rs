//! Whole files and directory listings in bulk: the host's `iota:toolset/files` inside a component,
//! `std::fs` natively (benchmarks, unit tests).
//!
//! A component that reads many files (grep over a tree) pays a dozen WASI
//! calls per file through the preopen; one `read-files` call reads a batch.

pub use crate::bindings::iota::toolset::files::{Content, Entry, EntryStat, FileHead, HeadError, Kind, PackedListing};
// Natively only: the host's answer and the native fallback search needles;
// a component asks the host.
#[cfg(not(target_arch = "wasm32"))]
pub use needles::NeedleSearch;

#[cfg(not(target_arch = "wasm32"))]
mod needles;

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
pub fn each_file(paths: &[String], max_size: u64, f: impl FnMut(usize, Content) -> bool) {
    each_answer(
        paths,
        |rest| read_some(rest, max_size).into_iter().map(Some).collect(),
        f,
    );
}

/// Reads every path like [`each_file`], but hands `f` only the answers for
/// files that hold one of `needles` (with `fold_case`, ASCII letters in
/// either case), or are too large or unreadable: the host looks for the
/// needles natively, so the files that cannot match are never copied in.
/// `f` gets each answer's index in `paths`.
pub fn each_file_containing(
    paths: &[String],
    max_size: u64,
    needles: &[Vec<u8>],
    fold_case: bool,
    f: impl FnMut(usize, Content) -> bool,
) {
    each_answer(
        paths,
        |rest| read_some_containing(rest, max_size, needles, fold_case),
        f,
    );
}

/// Asks `read` for the paths not yet answered until all are, handing `f`
/// each answer that is not `None`, with its index; stops when `f` returns
/// false.
fn each_answer(
    paths: &[String],
    read: impl Fn(&[String]) -> Vec<Option<Content>>,
    mut f: impl FnMut(usize, Content) -> bool,
) {
    let mut done = 0;
    while done < paths.len() {
        let batch = read(&paths[done..]);
        // The host answers at least one path; an empty answer would loop.
        assert!(!batch.is_empty(), "the host answered no file");
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
    ns_since_epoch(meta.modified())
}

/// A time as [`modified_ns`] reports it: nanoseconds since the Unix epoch,
/// 0 when unknown or earlier.
pub fn ns_since_epoch(time: std::io::Result<std::time::SystemTime>) -> u64 {
    time.ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The entries of the directory at `path` (absolute, inside the project root
/// or a read-only directory), sorted by name; a symlink is reported as one,
/// never followed. Asked of the host packed (`list-dir-packed`): a walk
/// lists every directory it enters, and a list of records would cost the
/// component an allocation per name.
pub fn list_dir(path: &str) -> Result<Listing, String> {
    #[cfg(target_arch = "wasm32")]
    let packed = crate::bindings::iota::toolset::files::list_dir_packed(path)?;
    #[cfg(not(target_arch = "wasm32"))]
    let packed = {
        let mut entries: Vec<(String, Kind)> = std::fs::read_dir(path)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .map(|entry| {
                let kind = entry.file_type().map_or(Kind::Other, kind_of);
                (entry.file_name().to_string_lossy().into_owned(), kind)
            })
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        PackedListing {
            names: entries.iter().map(|(name, _)| name.as_str()).collect(),
            lengths: entries.iter().map(|(name, _)| name.len() as u32).collect(),
            kinds: entries.iter().map(|(_, kind)| *kind).collect(),
        }
    };
    Listing::new(packed)
}

/// One directory's entries as [`list_dir`] gives them, sorted by name.
pub struct Listing(PackedListing);

impl Listing {
    /// Checks that the lengths cut the names into whole strings, one per
    /// kind, so that [`Listing::iter`] only slices.
    fn new(packed: PackedListing) -> Result<Listing, String> {
        let mut at = 0usize;
        let whole = packed.lengths.len() == packed.kinds.len()
            && packed.lengths.iter().all(|&length| {
                at = at.saturating_add(length as usize);
                packed.names.is_char_boundary(at)
            })
            && at == packed.names.len();
        if !whole {
            return Err("the host's listing is malformed".into());
        }
        Ok(Listing(packed))
    }

    /// Each entry's name and kind, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Kind)> + '_ {
        let mut at = 0;
        let names = self.0.lengths.iter().map(move |&length| {
            let name = &self.0.names[at..at + length as usize];
            at += length as usize;
            name
        });
        names.zip(self.0.kinds.iter().copied())
    }

    /// The entry at `index`, its name starting at byte `at` of
    /// [`Listing::names`] (the lengths of the names before it added up): its
    /// name and kind. For a walk that goes through a listing one entry at a
    /// time and keeps both; `None` past the end or for an `at` that does not
    /// start a name.
    pub fn entry_at(&self, index: usize, at: usize) -> Option<(&str, Kind)> {
        let length = *self.0.lengths.get(index)? as usize;
        let name = self.0.names.get(at..at.checked_add(length)?)?;
        Some((name, self.0.kinds[index]))
    }

    /// Every name, one after the other.
    pub fn names(&self) -> &str {
        &self.0.names
    }

    /// How many entries the directory has.
    pub fn len(&self) -> usize {
        self.0.kinds.len()
    }

    /// Whether the directory has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.kinds.is_empty()
    }
}

/// Names one `stat-names` call takes at most.
pub const MAX_STAT_NAMES: usize = 16_384;
/// Bytes of names, separators included, one `stat-names` call takes at most.
pub const MAX_STAT_NAME_BYTES: usize = 1 << 20;
/// What separates the names of a `stat-names` call: no name holds it.
pub const NAME_SEPARATOR: char = '/';
/// The longest name `stat-names` looks up, in bytes: the most the kernel
/// takes in a path (`PATH_MAX` less its NUL). Filesystems stop sooner (255
/// on ext4, 1,024 on FUSE), and `list-dir` reports whatever they hold, so a
/// listed name is never too long to be stat'ed here.
pub const MAX_NAME_BYTES: usize = 4095;

/// `stat` of each of `names` in the directory at `path` (absolute, inside
/// the project root or a read-only directory), a symlink not followed: a
/// host call per 16,384 names instead of a WASI call each. `None` for a
/// name that is not there, cannot be stat'ed or is not one plain path
/// component.
pub fn stat_names(path: &str, names: &[impl AsRef<str>]) -> Result<Vec<Option<EntryStat>>, String> {
    let mut stats = Vec::with_capacity(names.len());
    let mut rest = names;
    while !rest.is_empty() {
        // A name the host would not look at travels as `.` (which it answers
        // `none`), so a `/` in it cannot split it into two.
        let (mut joined, mut count) = (String::new(), 0);
        for name in rest.iter().take(MAX_STAT_NAMES) {
            let name = name.as_ref();
            let name = if is_statable_name(name) { name } else { "." };
            if count > 0 && joined.len() + 1 + name.len() > MAX_STAT_NAME_BYTES {
                break;
            }
            if count > 0 {
                joined.push(NAME_SEPARATOR);
            }
            joined.push_str(name);
            count += 1;
        }
        stats.extend(stat_joined(path, &joined)?);
        rest = &rest[count..];
    }
    Ok(stats)
}

/// One `stat-names` call.
#[cfg(target_arch = "wasm32")]
fn stat_joined(path: &str, joined: &str) -> Result<Vec<Option<EntryStat>>, String> {
    crate::bindings::iota::toolset::files::stat_names(path, joined)
}

/// Natively, the stats `stat-names` would answer.
#[cfg(not(target_arch = "wasm32"))]
fn stat_joined(path: &str, joined: &str) -> Result<Vec<Option<EntryStat>>, String> {
    let dir = std::path::Path::new(path);
    if !dir.is_dir() {
        return Err(format!("not a directory: {path}"));
    }
    let stat = |name: &str| {
        let meta = std::fs::symlink_metadata(dir.join(name)).ok()?;
        Some(EntryStat {
            kind: kind_of(meta.file_type()),
            size: meta.len(),
            modified_ns: modified_ns(&meta),
        })
    };
    Ok(joined
        .split(NAME_SEPARATOR)
        .map(|name| if is_statable_name(name) { stat(name) } else { None })
        .collect())
}

/// What a directory entry of type `t` is, as `list-dir` reports it.
#[cfg(not(target_arch = "wasm32"))]
fn kind_of(t: std::fs::FileType) -> Kind {
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

/// Whether `stat-names` looks at `name`: exactly one plain path component
/// (not empty, `.` or `..`, no `/`) of at most [`MAX_NAME_BYTES`] bytes, so a
/// lookup never leaves the directory it is made in.
pub fn is_statable_name(name: &str) -> bool {
    let mut components = std::path::Path::new(name).components();
    // `a/` and `./a` parse to one component too: the name must be it.
    name.len() <= MAX_NAME_BYTES
        && matches!(
            (components.next(), components.next()),
            (Some(std::path::Component::Normal(one)), None) if one == name
        )
}

#[cfg(target_arch = "wasm32")]
fn read_some(paths: &[String], max_size: u64) -> Vec<Content> {
    crate::bindings::iota::toolset::files::read_files(paths, max_size)
}

#[cfg(target_arch = "wasm32")]
fn read_some_containing(paths: &[String], max_size: u64, needles: &[Vec<u8>], fold_case: bool) -> Vec<Option<Content>> {
    crate::bindings::iota::toolset::files::read_files_containing(paths, max_size, needles, fold_case)
}

/// Natively the needles are looked for here, as the host would answer (the
/// limits on needles aside).
#[cfg(not(target_arch = "wasm32"))]
fn read_some_containing(paths: &[String], max_size: u64, needles: &[Vec<u8>], fold_case: bool) -> Vec<Option<Content>> {
    let mut search = NeedleSearch::new(needles, fold_case);
    read_some(paths, max_size)
        .into_iter()
        .map(|content| match content {
            Content::Data(data) => search.any_in(&data).then_some(Content::Data(data)),
            other => Some(other),
        })
        .collect()
}

/// Whether a searcher reads `data` as other bytes than these: grep-searcher
/// (like ripgrep) transcodes a file that begins with a UTF-16 byte-order
/// mark to UTF-8, so a literal of a match need not be in its raw bytes.
pub fn transcoded_by_searchers(data: &[u8]) -> bool {
    data.starts_with(&[0xFF, 0xFE]) || data.starts_with(&[0xFE, 0xFF])
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

#[cfg(test)]
mod tests {
    use super::*;

    /// More names than one call takes are asked in several calls, each
    /// answer at its name's index, and a name the host would not look at
    /// (one with a `/` included) never shifts the others.
    #[test]
    fn stat_names_keeps_every_answer_at_its_index_across_calls() {
        let dir = std::env::temp_dir().join(format!("iota-sdk-stat-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("f"), "four").unwrap();
        let long = "n".repeat(MAX_NAME_BYTES);
        let names: Vec<String> = (0..MAX_STAT_NAMES * 2 + 7)
            .map(|i| match i % 6 {
                0 => "f".to_string(),
                1 => "d/f".to_string(),
                2 => "d".to_string(),
                3 => String::new(),
                4 => long.clone(),
                _ => "..".to_string(),
            })
            .collect();
        let stats = stat_names(&dir.to_string_lossy(), &names).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(stats.len(), names.len());
        for (i, stat) in stats.iter().enumerate() {
            match i % 6 {
                0 => assert!(
                    matches!(stat, Some(s) if matches!(s.kind, Kind::File) && s.size == 4),
                    "{i}"
                ),
                2 => assert!(matches!(stat, Some(s) if matches!(s.kind, Kind::Directory)), "{i}"),
                _ => assert!(stat.is_none(), "{i}"),
            }
        }
        // A call's bytes bound it too: long names, fewer per call.
        const { assert!(MAX_STAT_NAMES * (MAX_NAME_BYTES + 1) > MAX_STAT_NAME_BYTES) };
    }

    /// A listing is taken only when its lengths cut its names into whole
    /// strings, one per kind; then each name is its own slice.
    #[test]
    fn a_packed_listing_is_sliced_only_when_its_lengths_fit_its_names() {
        let packed = |names: &str, lengths: &[u32], kinds: usize| PackedListing {
            names: names.into(),
            lengths: lengths.to_vec(),
            kinds: vec![Kind::File; kinds],
        };
        let listing = Listing::new(packed("aébcd", &[1, 3, 0, 2], 4)).unwrap();
        let names: Vec<&str> = listing.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "éb", "", "cd"]);
        assert!(Listing::new(packed("", &[], 0)).unwrap().is_empty());
        for (names, lengths, kinds) in [
            ("abc", &[1, 1][..], 2),
            ("abc", &[1, 3], 2),
            ("abc", &[1, 2], 3),
            ("aé", &[2, 1], 2),
            ("a", &[u32::MAX, 2], 2),
        ] {
            assert!(
                Listing::new(packed(names, lengths, kinds)).is_err(),
                "{names} {lengths:?} {kinds}"
            );
        }
    }

    /// The native fallback answers as the host does: only files with a
    /// needle (case folded when asked), too large and unreadable ones too.
    #[test]
    fn each_file_containing_hands_over_the_files_with_a_needle() {
        let dir = std::env::temp_dir().join(format!("iota-sdk-bulk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = [
            ("a", "has Needle"),
            ("b", "has needle"),
            ("c", "nothing"),
            ("d", "a needle, but too long"),
        ];
        let mut paths: Vec<String> = files
            .iter()
            .map(|(name, text)| {
                let path = dir.join(name);
                std::fs::write(&path, text).unwrap();
                path.to_string_lossy().into_owned()
            })
            .collect();
        paths.push(dir.join("missing").to_string_lossy().into_owned());
        let handed = |needles: &[&str], fold_case: bool| {
            let needles: Vec<Vec<u8>> = needles.iter().map(|n| n.as_bytes().to_vec()).collect();
            let mut handed = Vec::new();
            each_file_containing(&paths, 12, &needles, fold_case, |i, content| {
                handed.push((i, matches!(content, Content::Data(_))));
                true
            });
            handed
        };
        assert_eq!(handed(&["needle"], false), [(1, true), (3, false), (4, false)]);
        assert_eq!(
            handed(&["NEEDLE"], true),
            [(0, true), (1, true), (3, false), (4, false)]
        );
        assert_eq!(
            handed(&["nothing", "Need"], false),
            [(0, true), (2, true), (3, false), (4, false)]
        );
        assert_eq!(handed(&[], false), [(3, false), (4, false)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
