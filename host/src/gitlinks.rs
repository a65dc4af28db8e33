//! The submodules a repository's index records (its gitlinks): where git,
//! run by the user in the repository, goes on into another repository on its
//! own (`git status`, `git diff`, `git grep --recurse-submodules`) as soon as
//! `<path>/.git` exists there. A sandboxed command that could create that
//! `.git` (a directory, or a file naming a repository it made, with a
//! `core.fsmonitor`) would run code the next time the user asks git for the
//! status of the project; the sandbox keeps one there (`protected.rs`).
//!
//! The index is read as git writes it (`Documentation/gitformat-index.txt`):
//! versions 2 to 4, SHA-1 or SHA-256 object names, prefix-compressed paths
//! (v4), and a split index's shared part (its `link` extension), whose
//! gitlinks are taken whole (one deleted in the split part is kept: a
//! placeholder too many is harmless, one too few is not).

use std::path::{Path, PathBuf};

/// An index larger than this is not read (git's own are far smaller: a
/// million entries take about 100 MiB).
pub const MAX_INDEX_BYTES: u64 = 512 << 20;

/// A repository's `config` or `commondir` larger than this is not read.
const MAX_SMALL_FILE: u64 = 64 << 10;

/// Why an index could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not an index git would read.
    Malformed,
    /// Not a regular file.
    NotAFile,
    /// Past the bytes it may take.
    TooLarge,
}

/// What one index records, as read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Index {
    /// The gitlink paths (relative to the work tree), sorted.
    pub links: Vec<PathBuf>,
    /// The shared index a split index named and that was read with it:
    /// a later change of it is a change of the index.
    pub shared: Option<PathBuf>,
}

/// The gitlinks of the index at `index`, in the repository whose own
/// directory is `git_dir`, taking the bytes read from `budget` (a split
/// index's two parts both; also where what is read turns out malformed).
/// An index (or its shared part) larger than what is left of `budget`, or
/// than [`MAX_INDEX_BYTES`], is not read. No index is no gitlinks.
pub fn read(git_dir: &Path, index: &Path, budget: &mut u64) -> Result<Index, Unreadable> {
    let Some(bytes) = read_regular(index, (*budget).min(MAX_INDEX_BYTES))? else {
        return Ok(Index::default());
    };
    *budget = budget.saturating_sub(bytes.len() as u64);
    // What is not an index costs no read of the repository's config.
    if bytes.get(..4) != Some(b"DIRC") || bytes.len() < 12 {
        return Err(Unreadable::Malformed);
    }
    let hash = hash_len(git_dir, budget);
    let (mut links, shared) = parse(&bytes, hash)?;
    let mut read_shared = None;
    if let Some(shared) = shared {
        // The shared index sits beside the split one.
        let path = index.with_file_name(format!("sharedindex.{shared}"));
        let max = (*budget).min(MAX_INDEX_BYTES.saturating_sub(bytes.len() as u64));
        if let Some(bytes) = read_regular(&path, max)? {
            *budget = budget.saturating_sub(bytes.len() as u64);
            links.extend(parse(&bytes, hash)?.0);
        }
        read_shared = Some(path);
    }
    links.sort();
    links.dedup();
    Ok(Index {
        links,
        shared: read_shared,
    })
}

/// The file at `path` if it is a regular one of `max` bytes at most; `None`
/// where there is none. Opened without blocking (a FIFO named `index` in a
/// repository a command made must not hang the host).
fn read_regular(path: &Path, max: u64) -> Result<Option<Vec<u8>>, Unreadable> {
    let file = match crate::platform::open_to_read_no_follow(path) {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(_) => return Err(Unreadable::NotAFile),
    };
    let meta = file.metadata().map_err(|_| Unreadable::NotAFile)?;
    if !meta.is_file() {
        return Err(Unreadable::NotAFile);
    }
    if meta.len() > max {
        return Err(Unreadable::TooLarge);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    use std::io::Read;
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(|_| Unreadable::NotAFile)?;
    Ok(Some(bytes))
}

/// 32 where the repository's config says its objects are SHA-256, else 20
/// (a linked worktree's config is its common directory's); what is read of
/// `commondir` and `config` taken from `budget` too.
fn hash_len(git_dir: &Path, budget: &mut u64) -> usize {
    let mut small = |path: &Path| {
        let bytes = read_regular(path, MAX_SMALL_FILE.min(*budget)).ok().flatten()?;
        *budget = budget.saturating_sub(bytes.len() as u64);
        Some(bytes)
    };
    let common = small(&git_dir.join("commondir"))
        .map(|text| git_dir.join(String::from_utf8_lossy(&text).trim()))
        .unwrap_or_else(|| git_dir.to_path_buf());
    let config = small(&common.join("config")).unwrap_or_default();
    let text = String::from_utf8_lossy(&config).to_ascii_lowercase();
    let sha256 = text.lines().any(|line| {
        let line: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        line == "objectformat=sha256"
    });
    if sha256 { 32 } else { 20 }
}

/// The gitlinks of one index file, and the shared index it names (hex).
fn parse(bytes: &[u8], hash: usize) -> Result<(Vec<PathBuf>, Option<String>), Unreadable> {
    let u32_at = |at: usize| -> Result<u32, Unreadable> {
        let b = bytes.get(at..at + 4).ok_or(Unreadable::Malformed)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    if bytes.get(..4) != Some(b"DIRC") {
        return Err(Unreadable::Malformed);
    }
    let version = u32_at(4)?;
    if !(2..=4).contains(&version) {
        return Err(Unreadable::Malformed);
    }
    let count = u32_at(8)? as usize;
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    let mut links = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = u32_at(at + 24)?;
        let flags_at = at + 40 + hash;
        let flags = u16::from_be_bytes(
            bytes
                .get(flags_at..flags_at + 2)
                .ok_or(Unreadable::Malformed)?
                .try_into()
                .map_err(|_| Unreadable::Malformed)?,
        );
        at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let path = if version == 4 {
            let (strip, used) = varint(bytes.get(at..).ok_or(Unreadable::Malformed)?)?;
            at += used;
            let keep = previous.len().checked_sub(strip).ok_or(Unreadable::Malformed)?;
            let end =
                at + memchr::memchr(0, bytes.get(at..).ok_or(Unreadable::Malformed)?).ok_or(Unreadable::Malformed)?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&bytes[at..end]);
            at = end + 1;
            path
        } else {
            let end =
                at + memchr::memchr(0, bytes.get(at..).ok_or(Unreadable::Malformed)?).ok_or(Unreadable::Malformed)?;
            let path = bytes[at..end].to_vec();
            // Padded with 1 to 8 NULs to a multiple of 8 from the entry's start.
            at = start + ((end - start + 8) & !7);
            path
        };
        // Only a path git itself would write: relative, no `.` or `..`
        // (a crafted index must not name a place outside the work tree).
        let plain = !path.is_empty()
            && path
                .split(|&b| b == b'/')
                .all(|c| !c.is_empty() && c != b"." && c != b"..");
        if mode & 0o170000 == 0o160000 && plain {
            links.push(crate::platform::path_from_bytes(path.to_vec()));
        }
        previous = path;
    }
    // Extensions, up to the trailing checksum.
    let mut shared = None;
    while at + 8 + hash <= bytes.len() {
        let signature = &bytes[at..at + 4];
        let size = u32_at(at + 4)? as usize;
        let data = bytes.get(at + 8..at + 8 + size).ok_or(Unreadable::Malformed)?;
        if signature == b"link" {
            let oid = data.get(..hash).ok_or(Unreadable::Malformed)?;
            shared = Some(oid.iter().map(|b| format!("{b:02x}")).collect());
        }
        at += 8 + size;
    }
    Ok((links, shared))
}

/// Git's offset varint (`varint.c`): seven bits a byte, high bit set on all
/// but the last, each continuation adding one.
fn varint(bytes: &[u8]) -> Result<(usize, usize), Unreadable> {
    let mut iter = bytes.iter();
    let mut c = *iter.next().ok_or(Unreadable::Malformed)?;
    let mut value = usize::from(c & 0x7f);
    let mut used = 1;
    while c & 0x80 != 0 {
        c = *iter.next().ok_or(Unreadable::Malformed)?;
        used += 1;
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .and_then(|v| v.checked_add(usize::from(c & 0x7f)))
            .ok_or(Unreadable::Malformed)?;
    }
    Ok((value, used))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::Command;

    /// Runs git in `dir`, asserting it succeeded.
    pub(crate) fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args([
                "-c",
                "protocol.file.allow=always",
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository with submodules at `lib` and `deep/er/sub` and plain files
    /// around them, its index written by git itself in `version`.
    fn repository(version: &str, split: bool, object_format: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        git(&sub, &["init", "-q", &format!("--object-format={object_format}")]);
        std::fs::write(sub.join("f"), "x").unwrap();
        git(&sub, &["add", "f"]);
        git(&sub, &["commit", "-qm", "s"]);
        let main = dir.path().join("main");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q", &format!("--object-format={object_format}")]);
        for (i, name) in ["a.txt", "deep/er/file", "deep/er/zz", "lib.rs", "libz/x"]
            .iter()
            .enumerate()
        {
            std::fs::create_dir_all(main.join(name).parent().unwrap()).unwrap();
            std::fs::write(main.join(name), i.to_string()).unwrap();
        }
        git(&main, &["add", "."]);
        let url = sub.to_str().unwrap();
        git(&main, &["submodule", "add", "-q", url, "lib"]);
        git(&main, &["submodule", "add", "-q", url, "deep/er/sub"]);
        if split {
            git(&main, &["update-index", "--split-index"]);
            std::fs::write(main.join("later"), "y").unwrap();
            git(&main, &["add", "later"]);
        }
        git(&main, &["update-index", "--index-version", version]);
        (dir, main)
    }

    #[test]
    fn gitlinks_are_read_from_every_index_git_writes() {
        if Command::new("git").arg("--version").output().is_err() {
            return;
        }
        for (version, split, format) in [
            ("2", false, "sha1"),
            ("3", false, "sha1"),
            ("4", false, "sha1"),
            ("4", true, "sha1"),
            ("2", true, "sha1"),
            ("4", false, "sha256"),
        ] {
            let (_dir, main) = repository(version, split, format);
            let git_dir = main.join(".git");
            let mut budget = MAX_INDEX_BYTES;
            let index = read(&git_dir, &git_dir.join("index"), &mut budget).unwrap();
            assert_eq!(
                index.links,
                [PathBuf::from("deep/er/sub"), PathBuf::from("lib")],
                "index v{version} split={split} {format}"
            );
            // (Changing the version, git may write the index whole again.)
            if !split || version == "2" {
                assert_eq!(index.shared.is_some(), split, "index v{version} split={split} {format}");
            }
            let size = |path: &Path| std::fs::metadata(path).unwrap().len();
            let spent =
                size(&git_dir.join("index")) + index.shared.as_deref().map_or(0, size) + size(&git_dir.join("config"));
            assert_eq!(MAX_INDEX_BYTES - budget, spent, "both parts and the config paid for");
        }
    }

    #[test]
    fn what_is_not_an_index_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut budget = MAX_INDEX_BYTES;
        assert_eq!(
            read(d, &d.join("index"), &mut budget),
            Ok(Index::default()),
            "none: no gitlinks"
        );
        // The repository's config is read for an index, and paid for.
        std::fs::write(d.join("config"), vec![b'#'; 1000]).unwrap();
        std::fs::write(d.join("index"), b"DIRC\0\0\0\x02\0\0\0\x05short").unwrap();
        assert_eq!(read(d, &d.join("index"), &mut budget), Err(Unreadable::Malformed));
        assert_eq!(
            budget,
            MAX_INDEX_BYTES - 17 - 1000,
            "what was read is paid for, malformed or not"
        );
        // What is not an index costs no read of the config.
        std::fs::write(d.join("index"), b"not an index").unwrap();
        let mut budget = MAX_INDEX_BYTES;
        assert_eq!(read(d, &d.join("index"), &mut budget), Err(Unreadable::Malformed));
        assert_eq!(budget, MAX_INDEX_BYTES - 12);
        // One past what is left is not read at all.
        let mut budget = 11;
        assert_eq!(read(d, &d.join("index"), &mut budget), Err(Unreadable::TooLarge));
        assert_eq!(budget, 11);
        std::fs::remove_file(d.join("index")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("index"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(
            read(d, &d.join("index"), &mut budget),
            Err(Unreadable::NotAFile),
            "a FIFO does not block"
        );
    }
}
