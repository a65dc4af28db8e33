//! The walk glob and grep share: lexical order, `.git` skipped, the root
//! `.gitignore` applied to root-relative paths, symlinked directories never
//! entered. It is `ignore`'s sequential walker: a wasm32-wasip2 guest has no
//! threads, and the parallel walker silently yields only the root there.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, WalkBuilder};
use iota_toolset::jail::Jail;
use std::path::Path;

/// The root `.gitignore` as a matcher (empty when there is none).
pub fn root_gitignore(jail: &Jail) -> Gitignore {
    let mut builder = GitignoreBuilder::new(jail.root());
    // A missing or unreadable .gitignore simply ignores nothing.
    let _ = builder.add(jail.root().join(".gitignore"));
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Every entry under `start` (which must be inside the root), `start` itself
/// excluded, in lexical order per directory.
pub fn entries(jail: &Jail, start: &Path) -> impl Iterator<Item = DirEntry> {
    let gitignore = root_gitignore(jail);
    let root = jail.root().to_path_buf();
    let mut builder = WalkBuilder::new(start);
    builder
        .standard_filters(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            if gitignore.is_empty() || !entry.path().starts_with(&root) {
                return true;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !gitignore.matched_path_or_any_parents(entry.path(), is_dir).is_ignore()
        });
    builder.build().filter_map(Result::ok).filter(|entry| entry.depth() > 0)
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
