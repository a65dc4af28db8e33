//! The lexical path jail shared by every file tool.
//!
//! A path argument is resolved against the project root (an absolute one is
//! accepted when it lies inside), cleaned of `.` and `..` without touching the
//! filesystem, and refused when it points outside. Symlinks are not followed
//! for this check and the target need not exist. Inside a component the WASI
//! preopen is a second, stricter wall: it also refuses any symlink whose target
//! leaves the root, and [`Jail::is_escape`] recognises that refusal so the
//! model reads the same jail message for both.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// The project root and the rules for paths under it.
#[derive(Debug, Clone)]
pub struct Jail {
    root: PathBuf,
}

impl Jail {
    /// A jail at `root`, which must be absolute; it is cleaned lexically.
    pub fn new(root: impl AsRef<Path>) -> Jail {
        Jail {
            root: clean(root.as_ref()),
        }
    }

    /// The project root, absolute and clean.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `as_written` to an absolute, clean path inside the root, or
    /// returns the text the model reads.
    pub fn resolve(&self, as_written: &str) -> Result<PathBuf, String> {
        if as_written.contains('\0') {
            return Err(format!("path must not contain a NUL byte: {as_written:?}"));
        }
        let written = Path::new(as_written);
        let joined = if written.is_absolute() {
            written.to_path_buf()
        } else {
            self.root.join(written)
        };
        let cleaned = clean(&joined);
        if cleaned.starts_with(&self.root) {
            Ok(cleaned)
        } else {
            Err(self.outside(as_written))
        }
    }

    /// `path is outside the project root (<root>): <as written>`.
    pub fn outside(&self, as_written: &str) -> String {
        format!(
            "path is outside the project root ({}): {}",
            self.root.display(),
            as_written
        )
    }

    /// The root-relative form of an absolute path inside the root, with `/`
    /// separators; `.` for the root itself.
    pub fn relative(&self, path: &Path) -> String {
        // A walk asks this for every entry: a plain byte suffix when the
        // rest is already clean (what `Path::strip_prefix` would give, a
        // fifth of a glob's time in a component), components otherwise.
        if let Some(rest) = plain_rest(path, &self.root) {
            return lossy(rest).into_owned();
        }
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Where [`Jail::relative`]'s answer starts in `path`'s bytes, when it is
    /// that plain suffix: `path` is the root, `/`, then names joined by
    /// single `/`s (none empty, `.`, `..` or holding `\`). A walk asks once
    /// per directory, for a child of it, and then knows every plain child's.
    pub fn relative_start(&self, path: &Path) -> Option<usize> {
        plain_rest(path, &self.root).map(|rest| path.as_os_str().len() - rest.len())
    }

    /// Whether an I/O error is the preopen refusing a path that escapes the
    /// root (a symlink pointing out): WASI reports it as `EPERM`.
    pub fn is_escape(err: &std::io::Error) -> bool {
        // errno 63 is EPERM in wasi-libc's numbering; natively there is no preopen.
        cfg!(target_os = "wasi") && err.raw_os_error() == Some(63)
    }
}

/// `bytes` as text, invalid UTF-8 replaced by U+FFFD: what
/// `String::from_utf8_lossy` gives, through `str::from_utf8`'s check first.
/// Names are almost always valid, and the lossy decoder goes byte by byte
/// where the check takes words: a walk decodes every path it meets.
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// A path as text, as `Path::to_string_lossy` gives it (by [`lossy`]).
pub fn path_text(path: &Path) -> Cow<'_, str> {
    lossy(path.as_os_str().as_encoded_bytes())
}

/// `path` as the host's system writes it, for what a tool shows: under a
/// Windows root (`C:\…`, which the host hands a component as it is) every
/// `/` the component joined to it becomes `\` too, so one path does not
/// mix both; any other path as it is.
pub fn shown_path(path: &Path) -> String {
    let text = path_text(path);
    let bytes = text.as_bytes();
    let windows = bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\';
    if windows {
        text.replace('/', "\\")
    } else {
        text.into_owned()
    }
}

/// The bytes of `path` after `root` and one `/`, when they are plain names
/// joined by single `/`s ([`is_clean_relative`]): then they are what
/// `path.strip_prefix(root)` gives, found without parsing components.
pub fn plain_rest<'a>(path: &'a Path, root: &Path) -> Option<&'a [u8]> {
    let rest = path
        .as_os_str()
        .as_encoded_bytes()
        .strip_prefix(root.as_os_str().as_encoded_bytes())?
        .strip_prefix(b"/")?;
    is_clean_relative(rest).then_some(rest)
}

/// Whether `rest` is a relative path of plain names joined by single `/`s
/// (no empty, `.` or `..` component, no `\`): then it is its own
/// root-relative form.
fn is_clean_relative(rest: &[u8]) -> bool {
    !rest.is_empty() && rest.split(|&b| b == b'/').all(is_plain_name)
}

/// Whether `name` is one name a clean relative path may hold: not empty,
/// `.` or `..`, and without `/` or `\` (which [`Jail::relative`] turns
/// into `/`).
pub fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.iter().any(|&b| b == b'/' || b == b'\\')
}

/// Cleans a path lexically: drops `.`, applies `..` (never above the top).
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                // `..` above a relative start stays; above the root is the root.
                None | Some(Component::ParentDir) => {
                    if !out.has_root() {
                        out.push("..");
                    }
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(_) => {
                    out.pop();
                }
            },
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_under_a_windows_root_is_shown_with_backslashes_only() {
        assert_eq!(
            shown_path(Path::new(r"C:\proj/.iota/skills/x")),
            r"C:\proj\.iota\skills\x"
        );
        assert_eq!(shown_path(Path::new("/proj/.iota/a\\b")), "/proj/.iota/a\\b");
    }

    #[test]
    fn lossy_decodes_as_the_std_lossy_decoder() {
        for bytes in [
            &b"src/main.rs"[..],
            "caf\u{e9}/\u{1f980}".as_bytes(),
            b"a\xffb",
            b"\xe2\x82",
            b"",
        ] {
            assert_eq!(lossy(bytes), String::from_utf8_lossy(bytes));
        }
        assert!(matches!(lossy(b"plain"), Cow::Borrowed("plain")));
    }

    fn jail() -> Jail {
        Jail::new("/home/u/project")
    }

    #[test]
    fn paths_inside_resolve() {
        let j = jail();
        assert_eq!(j.resolve("src/a.rs").unwrap(), Path::new("/home/u/project/src/a.rs"));
        assert_eq!(j.resolve("./src/../b").unwrap(), Path::new("/home/u/project/b"));
        assert_eq!(j.resolve("/home/u/project/x").unwrap(), Path::new("/home/u/project/x"));
        assert_eq!(j.resolve(".").unwrap(), Path::new("/home/u/project"));
    }

    #[test]
    fn escapes_are_refused_with_the_jail_message() {
        let j = jail();
        for p in [
            "../secrets",
            "/etc/passwd",
            "sub/../../x",
            "/home/u/project_evil/a",
            "/../../etc",
        ] {
            assert_eq!(
                j.resolve(p).unwrap_err(),
                format!("path is outside the project root (/home/u/project): {p}")
            );
        }
    }

    #[test]
    fn relative_forms() {
        let j = jail();
        assert_eq!(j.relative(Path::new("/home/u/project")), ".");
        assert_eq!(j.relative(Path::new("/home/u/project/a/b")), "a/b");
        // The byte fast path and the components agree, whatever the form.
        for path in [
            "/home/u/project/a",
            "/home/u/project/a/b.rs",
            "/home/u/project//a",
            "/home/u/project/./a/",
            "/home/u/project/a/./b",
            "/home/u/project/a//b/",
            "/home/u/project/.hidden/..x",
            "/home/u/project/a/../b",
            "/home/u/project_evil/a",
            "/home/u/projectx",
            "/elsewhere",
        ] {
            let by_components = match Path::new(path).strip_prefix(j.root()) {
                Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                Ok(rel) => rel.to_string_lossy().into_owned(),
                Err(_) => path.to_string(),
            };
            assert_eq!(j.relative(Path::new(path)), by_components, "{path}");
            // Where the plain suffix is used, it is that answer.
            if let Some(start) = j.relative_start(Path::new(path)) {
                assert_eq!(&path[start..], by_components, "{path}");
            }
        }
        assert_eq!(j.relative_start(Path::new("/home/u/project/a/b")), Some(16));
        for unplain in [
            "/home/u/project",
            "/home/u/project/",
            "/home/u/project/a\\b",
            "/home/u/project/a/./b",
        ] {
            assert_eq!(j.relative_start(Path::new(unplain)), None, "{unplain}");
        }
        // At the filesystem's root, the components answer.
        let top = Jail::new("/");
        assert_eq!(top.relative_start(Path::new("/a")), None);
        assert_eq!(top.relative(Path::new("/a/b")), "a/b");
    }

    #[test]
    fn cleaning_keeps_leading_parents_of_relative_paths() {
        assert_eq!(clean(Path::new("a/../../../x")), Path::new("../../x"));
        assert_eq!(clean(Path::new("/../a/./b/..")), Path::new("/a"));
        assert_eq!(clean(Path::new("a/b/../c")), Path::new("a/c"));
    }

    #[test]
    fn nul_is_refused() {
        assert!(jail().resolve("a\0b").unwrap_err().contains("NUL"));
    }
}
