//! What a write under the project root can plant that later runs outside any
//! sandbox: a git repository's own directory (hooks, `core.fsmonitor`,
//! `core.pager` and the rest of its config), and the project's `.iota` config.
//!
//! One home for the rule: the approval gate asks about a write that lands
//! there every time (`caps/writes.rs` resolves where it lands), and the
//! sandbox keeps the same places read-only (`shell/sandbox.rs`).

use rustix::fs::{AtFlags, FileType, statat};
use std::ffi::OsStr;
use std::os::fd::AsFd;

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
pub fn is_repository_dir(dir: impl AsFd) -> bool {
    let kind = |name: &str| {
        statat(&dir, name, AtFlags::empty())
            .ok()
            .map(|st| FileType::from_raw_mode(st.st_mode))
    };
    kind("HEAD").is_some()
        && ((kind("objects") == Some(FileType::Directory) && kind("refs") == Some(FileType::Directory))
            || kind("commondir") == Some(FileType::RegularFile))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_by_name_at_the_root_and_git_anywhere() {
        for path in [
            ".git",
            ".git/hooks/x",
            ".iota/config.yaml",
            "HEAD",
            "sub/.git/config",
            "a/b/.git",
        ] {
            let parts: Vec<&str> = path.split('/').collect();
            assert!(by_name(&parts), "{path}");
        }
        for path in [
            "src/a.rs",
            ".gitignore",
            "sub/HEAD",
            "sub/.iota/x",
            "git/config",
            ".github/x",
        ] {
            let parts: Vec<&str> = path.split('/').collect();
            assert!(!by_name(&parts), "{path}");
        }
    }

    #[test]
    fn a_repository_dir_is_known_by_its_layout() {
        let dir = tempfile::tempdir().unwrap();
        let open = || std::fs::File::open(dir.path()).unwrap();
        assert!(!is_repository_dir(open()));
        std::fs::create_dir(dir.path().join("objects")).unwrap();
        std::fs::create_dir(dir.path().join("refs")).unwrap();
        assert!(!is_repository_dir(open()), "no HEAD yet");
        std::fs::write(dir.path().join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(is_repository_dir(open()));
        // Its objects elsewhere, through a link, as git allows.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::remove_dir(dir.path().join("objects")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("objects")).unwrap();
        assert!(is_repository_dir(open()));
        // A linked worktree's: HEAD and where the rest is.
        let worktree = tempfile::tempdir().unwrap();
        std::fs::write(worktree.path().join("HEAD"), "ref: refs/heads/w\n").unwrap();
        std::fs::write(worktree.path().join("commondir"), "../..\n").unwrap();
        assert!(is_repository_dir(std::fs::File::open(worktree.path()).unwrap()));
    }
}
