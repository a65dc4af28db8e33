//! The walk glob and grep share: lexical order, `.git` skipped, the root
//! `.gitignore` applied to root-relative paths, symlinked directories never
//! entered.
//!
//! Directories are listed through the host's `files.list-dir`, one call per
//! directory: `ignore`'s walker would cost a WASI call per entry (and its
//! parallel walker yields only the root in a guest without threads). The
//! root `.gitignore` is still `ignore`'s matcher.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use iota_toolset::bulk::{self, Kind};
use iota_toolset::jail::Jail;
use std::path::{Path, PathBuf};

/// One entry of the walk.
pub struct Entry {
    /// Absolute path, inside the root.
    pub path: PathBuf,
    /// What it is; a symlink is not followed.
    pub kind: Kind,
}

impl Entry {
    /// A regular file (not a symlink to one).
    pub fn is_file(&self) -> bool {
        matches!(self.kind, Kind::File)
    }

    /// A directory (not a symlink to one).
    pub fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Directory)
    }

    /// A symlink, whatever it points at.
    pub fn is_symlink(&self) -> bool {
        matches!(self.kind, Kind::Symlink)
    }
}

/// The root `.gitignore` as a matcher (empty when there is none).
pub fn root_gitignore(jail: &Jail) -> Gitignore {
    let mut builder = GitignoreBuilder::new(jail.root());
    // A missing or unreadable .gitignore simply ignores nothing.
    let _ = builder.add(jail.root().join(".gitignore"));
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Every entry under `start` (which must be inside the root), `start` itself
/// excluded, depth first, in lexical order per directory.
pub fn entries(jail: &Jail, start: &Path) -> impl Iterator<Item = Entry> {
    let mut walk = Walk {
        gitignore: root_gitignore(jail),
        root: jail.root().to_path_buf(),
        stack: Vec::new(),
    };
    let first = walk.children(start);
    walk.stack.push(first.into_iter());
    walk
}

/// The directories being walked, innermost last, each with what is left of it.
struct Walk {
    gitignore: Gitignore,
    root: PathBuf,
    stack: Vec<std::vec::IntoIter<Entry>>,
}

impl Walk {
    /// The entries of `dir` the walk shows, sorted by name; an unreadable
    /// directory has none.
    fn children(&self, dir: &Path) -> Vec<Entry> {
        let Ok(listed) = bulk::list_dir(&dir.to_string_lossy()) else {
            return Vec::new();
        };
        let mut children: Vec<Entry> = listed
            .into_iter()
            .filter(|e| e.name != ".git")
            .map(|e| Entry {
                path: dir.join(&e.name),
                kind: e.kind,
            })
            .filter(|e| !self.ignored(e))
            .collect();
        children.sort_by(|a, b| a.path.file_name().cmp(&b.path.file_name()));
        children
    }

    fn ignored(&self, entry: &Entry) -> bool {
        !self.gitignore.is_empty()
            && entry.path.starts_with(&self.root)
            && self
                .gitignore
                .matched_path_or_any_parents(&entry.path, entry.is_dir())
                .is_ignore()
    }
}

impl Iterator for Walk {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        loop {
            let entry = match self.stack.last_mut()?.next() {
                Some(entry) => entry,
                None => {
                    self.stack.pop();
                    continue;
                }
            };
            if entry.is_dir() {
                let children = self.children(&entry.path);
                self.stack.push(children.into_iter());
            }
            return Some(entry);
        }
    }
}

/// Resolves the optional `path` argument of a walking tool to a directory
/// inside the root: `not a directory: <as written>` otherwise.
pub fn start_dir(jail: &Jail, path: Option<&str>) -> Result<std::path::PathBuf, String> {
    let Some(written) = path else {
        return Ok(jail.root().to_path_buf());
    };
    let abs = jail.resolve(written)?;
    match std::fs::metadata(&abs) {
        Ok(meta) if meta.is_dir() => Ok(abs),
        Err(e) if Jail::is_escape(&e) => Err(jail.outside(written)),
        _ => Err(format!("not a directory: {written}")),
    }
}
