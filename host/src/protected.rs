//! What a write under the project root can plant that later runs outside any
//! sandbox: a git repository's own directory (hooks, `core.fsmonitor`,
//! `core.pager` and the rest of its config), and the project's `.iota` config.
//!
//! One home for the rule: the approval gate asks about a write that lands
//! there every time (`caps/writes.rs` resolves where it lands), and the
//! sandbox keeps the same places read-only (`shell/sandbox.rs`).

use std::ffi::OsStr;

#[cfg(unix)]
mod repositories;
#[cfg(unix)]
pub use repositories::{Repositories, RepositoryIndex, mount_bound};

/// Paths at the root that stay read-only in the sandbox, with a placeholder
/// where missing, and that a tool's write asks about every time: `.git`
/// (hooks, `core.fsmonitor`), `.iota` (the project config), and `HEAD`,
/// without which no bare repository's layout at the root (`HEAD`,
/// `objects/`, `refs/`, `config`) is one git would find.
pub const PROTECTED_AT_ROOT: &[&str] = &[".git", ".iota", "HEAD"];

/// The name of a repository's own directory (or of the file that points at
/// it) inside its work tree.
pub const GIT_DIR: &str = ".git";

/// Whether a path under the root, given by its components from the root,
/// lies in a protected place by its names alone: at or under one of
/// [`PROTECTED_AT_ROOT`], or at or under a `.git` anywhere (a nested
/// repository is run by git as much as the root's is). A bare repository's
/// directory is found by its contents, [`is_repository_dir`].
pub fn by_name<S: AsRef<OsStr>>(components: &[S]) -> bool {
    let at_root = components
        .first()
        .is_some_and(|first| PROTECTED_AT_ROOT.iter().any(|p| first.as_ref() == OsStr::new(p)));
    at_root || components.iter().any(|c| c.as_ref() == OsStr::new(GIT_DIR))
}

/// Whether the open directory `dir` is a repository's own directory as git
/// recognises one (its `is_git_directory`): a `HEAD`, and `objects/` and
/// `refs/` directories, or a `commondir` file naming where those are (a
/// linked worktree's). Links are followed, as git follows them. A bare
/// repository looks like that wherever it is, and git finds it when run
/// inside it.
#[cfg(unix)]
pub fn is_repository_dir(dir: impl std::os::fd::AsFd) -> bool {
    use rustix::fs::{AtFlags, FileType, statat};
    let kind = |name: &str| {
        statat(&dir, name, AtFlags::empty())
            .ok()
            .map(|st| FileType::from_raw_mode(st.st_mode))
    };
    kind("HEAD").is_some()
        && ((kind("objects") == Some(FileType::Directory) && kind("refs") == Some(FileType::Directory))
            || kind("commondir") == Some(FileType::RegularFile))
}

/// [`is_repository_dir`] by path, for a directory whose path is held to it
/// (Windows: `platform::windows::HeldDir`).
#[cfg(windows)]
pub fn is_repository_path(dir: &std::path::Path) -> bool {
    let meta = |name: &str| std::fs::metadata(dir.join(name)).ok();
    meta("HEAD").is_some()
        && ((meta("objects").is_some_and(|m| m.is_dir()) && meta("refs").is_some_and(|m| m.is_dir()))
            || meta("commondir").is_some_and(|m| m.is_file()))
}
