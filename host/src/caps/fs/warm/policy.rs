//! What the warm tree may keep, and how much of it: the rules a listing
//! passes before it is kept (`warm.rs` says why each holds) and the budgets
//! that bound the tree. A directory's listing is kept only
//! - at a *real path*: the root, or a plain name its parent's kept listing
//!   names as a directory ([`real_parent`], [`Watched::may_keep`]);
//! - from its second listing in the session ([`Seen`]); a walk's start
//!   listed again has the directories above it listed first, at most
//!   [`MAX_CLIMB`] of them ([`Watched::climb`]);
//! - within [`MAX_ENTRIES`] entries, [`MAX_KEPT_PATH_BYTES`] of paths and
//!   [`watch_budget`] watches.

use super::watches::Watched;
use crate::caps::fs::{FilesRoot, Kind};
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Directories above a walk's start listed at most to keep it
/// ([`WarmTree::keep_above`]); a start deeper below unkept ones is listed
/// afresh each time.
///
/// [`WarmTree::keep_above`]: super::WarmTree::keep_above
const MAX_CLIMB: usize = 64;

/// Entries the warm tree keeps at most, over all its directories (about
/// 16 MiB of names for typical source trees); past it, `list-dir` reads the
/// directory each time.
pub const MAX_ENTRIES: usize = 250_000;

/// Bytes of directory paths the tree keeps at most: those of watched
/// directories (each held twice, by path and by watch), and apart from
/// them those of directories listed once. A component chooses the paths it
/// lists, up to `PATH_MAX` each, so a count alone would not bound them.
pub const MAX_KEPT_PATH_BYTES: usize = 16 << 20;

/// The watches one tree may hold: a quarter of the user's inotify limit
/// (`fs.inotify.max_user_watches`, 8,192 on older kernels), so editors and
/// file watchers keep the rest.
pub(super) fn watch_budget() -> usize {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|limit| limit.trim().parse::<usize>().ok())
        .unwrap_or(8192)
        / 4
}

/// Whether a directory's listing may be kept ([`Watched::may_keep`]).
pub(super) enum MayKeep {
    /// It may.
    Yes,
    /// It may not.
    No,
    /// Not while its parent's listing is not kept.
    OnceParentIs,
}

/// Directories listed once this session. Only a directory listed again
/// is watched and kept: a session's first search pays nothing for the
/// tree, a search that repeats one builds it. A hint, not a fact about
/// the files, so it outlives `clear` (a shell command between two
/// searches does not make the next one a first again). Only
/// directories that could be opened are remembered.
#[derive(Default)]
pub(super) struct Seen {
    /// Their paths.
    pub(super) paths: HashSet<OsString>,
    /// Bytes of the paths in `paths`, against [`MAX_KEPT_PATH_BYTES`].
    pub(super) bytes: usize,
}

impl Seen {
    /// Whether `dir` was listed before.
    pub(super) fn contains(&self, dir: &Path) -> bool {
        self.paths.contains(dir.as_os_str())
    }

    /// Remembers that `dir` was listed, within the bounds; whether it was
    /// not remembered before.
    pub(super) fn insert(&mut self, dir: &Path) -> bool {
        let bytes = dir.as_os_str().len();
        let new = self.paths.len() < MAX_ENTRIES
            && self.bytes + bytes <= MAX_KEPT_PATH_BYTES
            && self.paths.insert(dir.as_os_str().to_owned());
        if new {
            self.bytes += bytes;
        }
        new
    }

    /// Forgets that `dir` was listed.
    pub(super) fn remove(&mut self, dir: &Path) {
        if self.paths.remove(dir.as_os_str()) {
            self.bytes -= dir.as_os_str().len();
        }
    }
}

/// For a directory that may be kept: `Some(None)` for the root itself,
/// `Some(Some(parent))` for a path below it made only of plain names;
/// `None` for anything else (`.`, `..`, a trailing slash's oddities), which
/// is always listed afresh.
pub(super) fn real_parent(root: &FilesRoot, dir: &Path) -> Option<Option<PathBuf>> {
    // What a walk asks with, found without parsing components (which
    // took a twentieth of a warm glob).
    if root.holds_plainly(dir) {
        return Some(dir.parent().map(Path::to_path_buf));
    }
    real_parent_by_components(root, dir)
}

/// [`real_parent`] the long way, for any spelling of a path.
fn real_parent_by_components(root: &FilesRoot, dir: &Path) -> Option<Option<PathBuf>> {
    let relative = dir.strip_prefix(&root.at).ok()?;
    if relative.as_os_str().is_empty() {
        // As bytes: `//root` and `/./root` are the root to `Path`'s `==`,
        // but their keys would be other bytes, which `forget_below` of the
        // root (a renamed parent, `same_root`) would not reach.
        return (dir.as_os_str() == root.at.as_os_str()).then_some(None);
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

impl Watched {
    /// The directories to list, from the highest down, so that the
    /// directory below `parent` may be kept: `parent` and each directory
    /// above it whose listing is not kept, up to the root or one whose
    /// parent's kept listing names it. Empty when, as far as the tree
    /// knows, one of them may not be kept (not a real path, or no room for
    /// them all) or they are more than [`MAX_CLIMB`].
    pub(super) fn climb(&self, root: &FilesRoot, parent: &Path) -> Vec<PathBuf> {
        let mut climb = Vec::new();
        let mut at = parent.to_path_buf();
        loop {
            if climb.len() == MAX_CLIMB {
                return Vec::new();
            }
            let Some(above) = real_parent(root, &at) else {
                return Vec::new();
            };
            match self.may_keep(&at, above.as_deref()) {
                MayKeep::No => return Vec::new(),
                MayKeep::Yes => {
                    climb.push(at);
                    break;
                }
                // Its parent is not kept either: climb on.
                MayKeep::OnceParentIs => {
                    climb.push(at);
                    let Some(above) = above else { return Vec::new() };
                    at = above;
                }
            }
        }
        // Room for a watch of each not watched yet, the start's too.
        let unwatched: Vec<&PathBuf> = climb
            .iter()
            .filter(|dir| !self.dirs.contains_key(dir.as_os_str()))
            .collect();
        let bytes: usize = unwatched.iter().map(|dir| 2 * dir.as_os_str().len()).sum();
        if !self.has_room_for_watches(unwatched.len() + 1, bytes) {
            return Vec::new();
        }
        climb.reverse();
        climb
    }

    /// Whether `dir`'s listing may be kept: it is a real path (see the
    /// module's documentation) and there is room.
    pub(super) fn may_keep(&self, dir: &Path, parent: Option<&Path>) -> MayKeep {
        if self.entries >= MAX_ENTRIES {
            return MayKeep::No;
        }
        let Some(parent) = parent else { return MayKeep::Yes };
        // Names are compared as the listing holds them, decoded; a name
        // with U+FFFD may stand for another (undecodable) one.
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            return MayKeep::No;
        };
        if name.contains(char::REPLACEMENT_CHARACTER) {
            return MayKeep::No;
        }
        let Some(listing) = self.dirs.get(parent.as_os_str()).and_then(|p| p.listing.as_ref()) else {
            return MayKeep::OnceParentIs;
        };
        // Listings are sorted by name (`list_opened`).
        match listing.binary_search_by(|e| e.name.as_str().cmp(name)) {
            Ok(at) if matches!(listing[at].kind, Kind::Directory) => MayKeep::Yes,
            _ => MayKeep::No,
        }
    }

    /// Whether one more directory may be watched at `dir`.
    pub(super) fn has_room_for(&self, dir: &Path) -> bool {
        self.has_room_for_watches(1, 2 * dir.as_os_str().len())
    }

    /// Whether `watches` more directories may be watched, their paths
    /// taking `path_bytes` more.
    fn has_room_for_watches(&self, watches: usize, path_bytes: usize) -> bool {
        self.dirs.len() + watches <= self.max_watches
            && self.entries + watches <= MAX_ENTRIES
            && self.path_bytes + path_bytes <= MAX_KEPT_PATH_BYTES
    }

    /// Whether a listing of `entries` more may be kept.
    pub(super) fn has_room_for_listing(&self, entries: usize) -> bool {
        self.entries + entries <= MAX_ENTRIES
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::root_at;
    use super::*;

    /// Only the root's own spelling is the root: another spelling of it
    /// would be kept under other bytes, out of reach of the root's checks.
    #[test]
    fn only_the_roots_exact_path_is_a_real_path() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = root_at(&base);
        let at = base.to_string_lossy().into_owned();
        assert_eq!(real_parent(&root, &base), Some(None));
        assert_eq!(real_parent(&root, &base.join("a")), Some(Some(base.clone())));
        for other in [
            format!("/{at}"),
            format!("/.{at}"),
            format!("{at}/"),
            format!("{at}/."),
            format!("{at}//a"),
        ] {
            assert_eq!(real_parent(&root, Path::new(&other)), None, "{other}");
        }
        // The byte fast path answers as the components do, for every
        // spelling, and under the filesystem's root too.
        for (root, at) in [(root, at.as_str()), (root_at(Path::new("/")), "")] {
            for rest in [
                "/a", "/a/b", "/a/", "/a/.", "/a/./b", "/a/../b", "//a", "/a//b", "/..", "/a\\b", "/...", "/.a",
                "/a/..",
            ] {
                let dir = format!("{at}{rest}");
                let dir = Path::new(&dir);
                assert_eq!(
                    real_parent(&root, dir),
                    real_parent_by_components(&root, dir),
                    "{dir:?}"
                );
            }
        }
    }
}
