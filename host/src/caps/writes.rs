//! The write capability (`iota:toolset/writes`): the one file a call of a
//! writing tool may change, resolved once when the call is decided and held
//! open from then on.
//!
//! Why a handle and not a path: the gate decides by where a write lands —
//! whether to ask, what the question names, whether it is protected — and
//! another party (a sandboxed command of this session or of another one on
//! the same project) can change the path afterwards, flipping a link `d` →
//! `.git` between the gate's look and the write. So [`HeldWrite::resolve`]
//! walks the path beneath the root one component at a time, the kernel
//! following no symlink (a link inside the root is read and followed here,
//! where the walk sees it, as the file tools always followed them), and keeps
//! the last directory it reached open. The preview's diff, the question, and
//! the write all use that directory: [`HeldWrite::read`] and
//! [`HeldWrite::replace`] open one name in it and never look the path up
//! again. The WASI preopens are read-only for every call, so this is the only
//! way a component writes, and only the approved call's [`CallWrite`] lets
//! `replace` through.
//!
//! What a held directory does not stop: the directory itself being renamed
//! somewhere else by a process that can rename it. Inside the sandbox no
//! command can move a directory into a repository's `.git` or the root's
//! `.iota` (they are read-only mounts there, `shell/sandbox.rs`), which is
//! what the protection is about; a process of the user's own, outside any
//! sandbox, could, and it could write `.git/config` itself.

use super::CallState;
use crate::project::ProjectRoot;
use crate::wit::iota::toolset::writes::{Current, Host, Refusal, Version};
use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

#[cfg_attr(unix, path = "writes/unix.rs")]
#[cfg_attr(windows, path = "writes/windows.rs")]
mod sys;
pub use sys::Note;
use sys::{Dir, RootId};

/// Symlinks a resolution follows at most, as the kernel's `ELOOP` bound.
const MAX_HOPS: usize = 40;

/// Why a call's `path` has no file a write could land in, as the tool reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// It, or a symlink on it, leads outside the root (an absolute symlink
    /// too, as the preopen refuses them).
    Outside,
    /// It is a directory.
    Directory,
    /// Not a regular file: a FIFO, a socket, a device, a dangling symlink, a
    /// file where a directory should be, too many links.
    NotRegular,
    /// Anything else, in words.
    Other(String),
}

impl From<Unresolved> for Refusal {
    fn from(why: Unresolved) -> Refusal {
        match why {
            Unresolved::Outside => Refusal::Outside,
            Unresolved::Directory => Refusal::Directory,
            Unresolved::NotRegular => Refusal::NotRegular,
            Unresolved::Other(why) => Refusal::Other(why),
        }
    }
}

/// An OS error in words, without its number.
fn other(e: std::io::Error) -> Unresolved {
    Unresolved::Other(iota_toolset::output::plain(&e))
}

/// What an entry of a directory is, its last link not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A symbolic link (on Windows, any reparse point).
    Link,
    /// A directory.
    Directory,
    /// A regular file.
    Regular,
    /// A FIFO, a socket, a device.
    Other,
}

/// The file a writing call may change: the directory it lands in, held open
/// since the call was decided, and its name there.
#[derive(Debug)]
pub struct HeldWrite {
    /// The deepest directory on the path that existed, open.
    dir: Dir,
    /// The directories between the root and `dir`, held too where holding
    /// is what keeps `dir`'s path (Windows); empty on Unix.
    held: Vec<Dir>,
    /// Directories to create below `dir`, outermost first.
    missing: Vec<OsString>,
    /// The file's name in the last of them.
    name: OsString,
    /// Where it lands, relative to the root.
    lands: PathBuf,
    /// The path as the call gave it.
    given: String,
    /// Where it lands, absolute.
    path: PathBuf,
    /// Whether a write there changes what runs outside the sandbox
    /// ([`crate::protected`]).
    protected: bool,
    /// The root's identity: where a look up from `dir` stops.
    root_id: RootId,
    /// Whether a `replace` wrote it: the call's answer must then say it did,
    /// whatever else it costs.
    wrote: std::sync::atomic::AtomicBool,
}

impl HeldWrite {
    /// Resolves `given` (relative to `root`, or absolute inside it) beneath
    /// the root: `.` and `..` of the text folded first (a path above the root
    /// is outside), then component by component from the opened root, each
    /// directory opened without following a link; a symlink met on the way is
    /// read and its target walked from the directory it is in, `..` there
    /// taken from that directory. `project` is the pinned root: the walk
    /// starts at the directory it holds, whatever its path has become.
    pub fn resolve(project: &ProjectRoot, given: &str) -> Result<HeldWrite, Unresolved> {
        let root = project.path();
        // No longer path could be opened (`PATH_MAX`), and a walk that
        // creates directories must not make thousands of them.
        if given.len() > super::fs::MAX_PATH_BYTES {
            return Err(too_long());
        }
        let relative = crate::project::fold_beneath(root, Path::new(given)).ok_or(Unresolved::Outside)?;
        let root_dir = sys::open_root(root).map_err(other)?;
        // The directories entered below the root, with their names.
        let mut entered: Vec<(Dir, OsString)> = Vec::new();
        // What is left to walk, the next component last.
        let mut pending: Vec<OsString> = relative.iter().rev().map(OsStr::to_os_string).collect();
        let mut hops = 0;
        // Whether the last component was a symlink: then nothing missing may
        // be created for it (a dangling link is not a file to write through).
        let mut through_final_link = false;
        let (missing, name) = loop {
            let Some(part) = pending.pop() else {
                // The path ends in a directory (`x/..`, a link to `.`).
                return Err(Unresolved::Directory);
            };
            if part == "." {
                continue;
            }
            if part == ".." {
                entered.pop().ok_or(Unresolved::Outside)?;
                continue;
            }
            let here = entered.last().map_or(&root_dir, |(dir, _)| dir);
            let last = pending.iter().all(|p| p == ".");
            if last {
                match sys::entry(here, &part).map_err(other)? {
                    Some(Entry::Link) => {
                        follow(here, &part, &mut pending, &mut hops)?;
                        through_final_link = true;
                        continue;
                    }
                    Some(Entry::Directory) => return Err(Unresolved::Directory),
                    Some(Entry::Regular) => break (Vec::new(), part),
                    Some(Entry::Other) => return Err(Unresolved::NotRegular),
                    None if through_final_link => return Err(Unresolved::NotRegular),
                    None => break (Vec::new(), part),
                }
            }
            match sys::enter(here, &part) {
                Ok(Some(dir)) => entered.push((dir, part)),
                Ok(None) if !through_final_link => {
                    // The rest is to be created: plain names only.
                    let mut rest: Vec<OsString> = std::iter::once(part)
                        .chain(pending.drain(..).rev())
                        .filter(|p| p != ".")
                        .collect();
                    if rest.iter().any(|p| p == "..") {
                        return Err(other(std::io::ErrorKind::NotFound.into()));
                    }
                    let name = rest.pop().expect("the missing part holds at least its first name");
                    break (rest, name);
                }
                Ok(None) => return Err(Unresolved::NotRegular),
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                    if sys::entry(here, &part).map_err(other)? != Some(Entry::Link) {
                        return Err(Unresolved::NotRegular);
                    }
                    follow(here, &part, &mut pending, &mut hops)?;
                }
                Err(e) => return Err(other(e)),
            }
        };
        let lands: PathBuf = entered
            .iter()
            .map(|(_, name)| name.as_os_str())
            .chain(missing.iter().map(OsString::as_os_str))
            .chain(std::iter::once(name.as_os_str()))
            .collect();
        if lands.as_os_str().len() > super::fs::MAX_PATH_BYTES {
            return Err(too_long());
        }
        let components: Vec<&OsStr> = lands.iter().collect();
        // A repository's own directory anywhere on the way (a bare one is
        // known only by its contents), the root's included.
        let in_repository = std::iter::once(&root_dir)
            .chain(entered.iter().map(|(dir, _)| dir))
            .any(sys::is_repository);
        let protected = crate::protected::by_name(&components) || in_repository;
        let root_id = sys::root_id(&root_dir).map_err(other)?;
        let mut held: Vec<Dir> = std::iter::once(root_dir)
            .chain(entered.into_iter().map(|(dir, _)| dir))
            .collect();
        let dir = held.pop().expect("the root at least");
        if !sys::HOLDS_ANCESTORS {
            held.clear();
        }
        Ok(HeldWrite {
            dir,
            held,
            missing,
            name,
            path: root.join(&lands),
            lands,
            given: given.to_string(),
            protected,
            root_id,
            wrote: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether [`HeldWrite::replace`] wrote the file.
    pub fn wrote(&self) -> bool {
        self.wrote.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Where the write lands, relative to the root.
    pub fn lands(&self) -> &Path {
        &self.lands
    }

    /// The path as the call gave it.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// Whether a write there changes what runs outside the sandbox.
    pub fn protected(&self) -> bool {
        self.protected
    }

    /// What is at the file now, read through the held directory: at most
    /// `max` bytes (`data` is `None` beyond), never through a symlink put at
    /// its name since, never waiting on a FIFO.
    pub fn read(&self, max: u64) -> Result<Option<Current>, Unresolved> {
        if !self.missing.is_empty() {
            return Ok(None);
        }
        let file = match sys::open_to_read(&self.dir, &self.name) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Err(Unresolved::NotRegular),
            Err(e) => return Err(other(e)),
        };
        let meta = file
            .metadata()
            .map_err(|e| Unresolved::Other(iota_toolset::output::plain(&e)))?;
        if meta.is_dir() {
            return Err(Unresolved::Directory);
        }
        if !meta.is_file() {
            return Err(Unresolved::NotRegular);
        }
        let version = version_of(&meta);
        if meta.len() > max {
            return Ok(Some(Current { data: None, version }));
        }
        let mut data = Vec::with_capacity(meta.len() as usize + 1);
        file.take(max + 1)
            .read_to_end(&mut data)
            .map_err(|e| Unresolved::Other(iota_toolset::output::plain(&e)))?;
        let data = (data.len() as u64 <= max).then_some(data);
        Ok(Some(Current { data, version }))
    }

    /// Replaces the file with `content` when what is there is `expect`
    /// (`None`: nothing): the missing directories created first, each
    /// entered without following a link, then the file written beside its
    /// name and put in place in one step (`sys::write_in`): a file that
    /// appeared meanwhile is never replaced, a link put at the name is
    /// replaced and never followed.
    ///
    /// `note` hears of each temporary name before it is made (the
    /// session's journal, `scratch.rs`), so what a host killed between
    /// making and renaming it leaves is removed by the next one.
    pub fn replace(&self, content: &[u8], expect: Option<Version>, note: Note<'_>) -> Result<Version, WriteError> {
        let mut created: Vec<Dir> = Vec::new();
        for name in &self.missing {
            let here = created.last().unwrap_or(&self.dir);
            let entered = sys::make_and_enter(here, name)?;
            created.push(entered);
        }
        let dir = created.last().unwrap_or(&self.dir);
        // Made part of a repository since the call was decided unprotected
        // (a bare layout's `HEAD` put beside `objects/` and `refs/`): not
        // what anybody was asked about.
        let above: Vec<&Dir> = self
            .held
            .iter()
            .chain(std::iter::once(&self.dir))
            .chain(&created)
            .collect();
        if !self.protected && sys::became_repository(dir, &above, self.root_id) {
            return Err(WriteError::BecameProtected);
        }
        let placed = || self.wrote.store(true, std::sync::atomic::Ordering::Release);
        let meta = sys::write_in(dir, &self.name, content, expect, note, &placed)?;
        Ok(version_of(&meta))
    }
}

/// Why [`HeldWrite::replace`] wrote nothing.
#[derive(Debug)]
pub enum WriteError {
    /// What is there is not what was expected.
    Changed,
    /// A directory the write was to create became something else.
    PathChanged,
    /// The directory it lands in became part of a repository since.
    BecameProtected,
    /// The system refused.
    Io(std::io::Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> WriteError {
        WriteError::Io(e)
    }
}

impl From<WriteError> for Refusal {
    fn from(e: WriteError) -> Refusal {
        match e {
            WriteError::Changed => Refusal::Changed,
            WriteError::PathChanged => {
                Refusal::Other("a directory on its path changed after the call was decided".to_string())
            }
            WriteError::BecameProtected => Refusal::Other(
                "its directory became part of a git repository after the call was decided; call it again to be asked"
                    .to_string(),
            ),
            WriteError::Io(e) => Refusal::Other(in_words(&e)),
        }
    }
}

/// A system error as what the model (or the person) can act on; nothing
/// was written when one of these is said.
fn in_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let why = match e.kind() {
        ErrorKind::StorageFull => "the disk is full (no space left on device); free some space and call again",
        ErrorKind::QuotaExceeded => "the disk quota is exceeded; free some of the quota and call again",
        ErrorKind::ReadOnlyFilesystem => "the filesystem is read-only",
        ErrorKind::PermissionDenied => "permission denied: the user iota-host runs as may not write there",
        ErrorKind::FileTooLarge => "the file would be larger than the filesystem or a limit allows",
        _ => return iota_toolset::output::plain(e),
    };
    format!("{why}; nothing was written")
}

/// A [`Note`] that keeps nothing (tests, and hosts without a session).
#[cfg(test)]
const UNNOTED: Note<'static> = &|_, _| {};

/// Directories above a write that `sys::became_repository` looks at, at most.
const MAX_DEPTH_CHECKED: usize = 64;

/// The refusal of a path longer than any that could be opened.
fn too_long() -> Unresolved {
    Unresolved::Other("File name too long".to_string())
}

/// How old a temporary file of ours must be to be taken for one a killed
/// write left (a write's own exists for microseconds).
const STALE: std::time::Duration = std::time::Duration::from_secs(60);

/// Reads the link `name` in `dir` and queues its target's components to be
/// walked from `dir`; an absolute target is outside (the preopen refuses
/// those, even pointing back in).
fn follow(dir: &Dir, name: &OsStr, pending: &mut Vec<OsString>, hops: &mut usize) -> Result<(), Unresolved> {
    *hops += 1;
    if *hops > MAX_HOPS {
        return Err(Unresolved::NotRegular);
    }
    let target = sys::read_link(dir, name).map_err(other)?;
    // On Windows a target with a drive or a root (`\\x`, `C:x`) is not
    // relative to the link's directory either.
    if target.is_absolute() || target.has_root() || matches!(target.components().next(), Some(Component::Prefix(_))) {
        return Err(Unresolved::Outside);
    }
    pending.extend(target.iter().rev().map(OsStr::to_os_string));
    Ok(())
}

/// A file's version from its metadata.
fn version_of(meta: &std::fs::Metadata) -> Version {
    Version {
        size: meta.len(),
        modified_ns: iota_toolset::files::modified_ns(meta),
    }
}

/// Whether two versions are one (the generated type has no `PartialEq`).
pub(crate) fn same_version(a: &Version, b: &Version) -> bool {
    (a.size, a.modified_ns) == (b.size, b.modified_ns)
}

/// What one call may do through `writes`.
#[derive(Debug, Clone, Default)]
pub enum CallWrite {
    /// Nothing: a read-only tool, a task, a description.
    #[default]
    Nothing,
    /// The call's `path` leads nowhere a file could be written.
    Unresolved(Unresolved),
    /// The call's file, held; `decided` once the gate let the call run
    /// (a preview only reads it).
    Held {
        /// The file.
        file: Arc<HeldWrite>,
        /// Whether `replace` may write it.
        decided: bool,
    },
}

impl CallWrite {
    /// The file of a call of a writing tool whose arguments are `args`:
    /// its `path`, resolved beneath the pinned root. A call with no `path`
    /// string may write nothing.
    pub fn resolve(project: &ProjectRoot, args: &serde_json::Value) -> CallWrite {
        match args.get("path").and_then(serde_json::Value::as_str) {
            Some(path) => match HeldWrite::resolve(project, path) {
                Ok(file) => CallWrite::Held {
                    file: Arc::new(file),
                    decided: false,
                },
                Err(why) => CallWrite::Unresolved(why),
            },
            None => CallWrite::Nothing,
        }
    }

    /// The same file, now that the gate has let the call run.
    pub fn decided(&self) -> CallWrite {
        match self {
            CallWrite::Held { file, .. } => CallWrite::Held {
                file: file.clone(),
                decided: true,
            },
            other => other.clone(),
        }
    }

    /// The held file, if any.
    pub fn held(&self) -> Option<&HeldWrite> {
        match self {
            CallWrite::Held { file, .. } => Some(file),
            _ => None,
        }
    }

    fn file(&self) -> Result<&HeldWrite, Refusal> {
        match self {
            CallWrite::Nothing => Err(Refusal::NotApproved),
            CallWrite::Unresolved(why) => Err(why.clone().into()),
            CallWrite::Held { file, .. } => Ok(file),
        }
    }
}

impl Host for CallState {
    fn target(&mut self) -> Result<String, Refusal> {
        let file = self.write.file()?;
        Ok(file.path.to_string_lossy().into_owned())
    }

    fn read(&mut self, max_size: u64) -> Result<Option<Current>, Refusal> {
        let cap = max_size
            .min(super::fs::MAX_FILE_BYTES)
            .min(u64::try_from(self.limiter.max).unwrap_or(u64::MAX));
        self.write.file()?.read(cap).map_err(Refusal::from)
    }

    fn replace(&mut self, content: Vec<u8>, expect: Option<Version>) -> Result<Version, Refusal> {
        let CallWrite::Held { file, decided: true } = &self.write else {
            return Err(self.write.file().err().unwrap_or(Refusal::NotApproved));
        };
        let session = &self.session;
        let note: Note<'_> = &|dir, temporary| session.note_temporary(dir, temporary);
        file.replace(&content, expect, note).map_err(Refusal::from)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        (dir, root)
    }

    fn lands(root: &Path, path: &str) -> Result<(PathBuf, bool), Unresolved> {
        HeldWrite::resolve(&pinned(root), path).map(|held| (held.lands, held.protected))
    }

    fn pinned(root: &Path) -> ProjectRoot {
        ProjectRoot::open(root).unwrap()
    }

    #[test]
    fn a_path_lands_where_the_kernel_would_put_it_and_protected_places_are_known() {
        let (_dir, root) = project();
        symlink(".git", root.join("g")).unwrap();
        symlink("src", root.join("s")).unwrap();
        symlink("../.git/config", root.join("src/c")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        let cases: &[(&str, &str, bool)] = &[
            ("src/a.rs", "src/a.rs", false),
            ("./src/../src/a.rs", "src/a.rs", false),
            ("s/a.rs", "src/a.rs", false),
            ("new/dir/x", "new/dir/x", false),
            (".git/config", ".git/config", true),
            ("g/hooks/pre-commit", ".git/hooks/pre-commit", true),
            ("s/c", ".git/config", true),
            (".iota/config.yaml", ".iota/config.yaml", true),
            ("HEAD", "HEAD", true),
            ("sub/.git/config", "sub/.git/config", true),
        ];
        for (given, want, protected) in cases {
            assert_eq!(lands(&root, given), Ok((PathBuf::from(want), *protected)), "{given}");
        }
        let absolute = root.join("src/a.rs");
        assert_eq!(
            lands(&root, absolute.to_str().unwrap()),
            Ok((PathBuf::from("src/a.rs"), false))
        );
    }

    #[test]
    fn what_leads_out_or_is_no_file_is_refused() {
        let (dir, root) = project();
        let outside = dir.path().parent().unwrap().to_path_buf();
        symlink(&outside, root.join("abs")).unwrap();
        symlink("../..", root.join("src/up")).unwrap();
        symlink(root.join("src"), root.join("abs-inside")).unwrap();
        symlink("missing", root.join("dangling")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        std::fs::write(root.join("file"), "").unwrap();
        assert_eq!(lands(&root, "../x"), Err(Unresolved::Outside));
        assert_eq!(lands(&root, "/etc/passwd"), Err(Unresolved::Outside));
        assert_eq!(lands(&root, "abs/x"), Err(Unresolved::Outside));
        assert_eq!(
            lands(&root, "abs-inside/x"),
            Err(Unresolved::Outside),
            "as the preopen does"
        );
        assert_eq!(lands(&root, "src/up/x"), Err(Unresolved::Outside));
        assert_eq!(lands(&root, "src"), Err(Unresolved::Directory));
        assert_eq!(lands(&root, "dangling"), Err(Unresolved::NotRegular));
        assert_eq!(lands(&root, "loop"), Err(Unresolved::NotRegular));
        assert_eq!(lands(&root, "file/x"), Err(Unresolved::NotRegular));
    }

    #[test]
    fn a_bare_repository_anywhere_is_protected() {
        let (_dir, root) = project();
        for dir in ["vendor/bare.git/objects", "vendor/bare.git/refs"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("vendor/bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(
            lands(&root, "vendor/bare.git/config"),
            Ok((PathBuf::from("vendor/bare.git/config"), true))
        );
        assert_eq!(lands(&root, "vendor/x"), Ok((PathBuf::from("vendor/x"), false)));
    }

    /// The decision holds the directory: a link flipped after it moves
    /// nothing, and the write lands where the question said.
    #[test]
    fn a_link_flipped_after_the_decision_moves_no_byte() {
        let (_dir, root) = project();
        std::fs::create_dir(root.join("d")).unwrap();
        let held = HeldWrite::resolve(&pinned(&root), "d/config").unwrap();
        assert!(!held.protected);
        std::fs::rename(root.join("d"), root.join("d-real")).unwrap();
        symlink(".git", root.join("d")).unwrap();
        held.replace(b"planted?", None, UNNOTED).unwrap();
        assert!(!root.join(".git/config").exists());
        assert_eq!(std::fs::read(root.join("d-real/config")).unwrap(), b"planted?");
    }

    #[test]
    fn missing_directories_are_made_and_a_link_planted_among_them_is_refused() {
        let (_dir, root) = project();
        let held = HeldWrite::resolve(&pinned(&root), "a/b/c.txt").unwrap();
        held.replace(b"one", None, UNNOTED).unwrap();
        assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"one");
        let planted = HeldWrite::resolve(&pinned(&root), "x/y/z.txt").unwrap();
        symlink(".git", root.join("x")).unwrap();
        assert!(matches!(
            planted.replace(b"two", None, UNNOTED),
            Err(WriteError::PathChanged)
        ));
        assert!(!root.join(".git/y").exists());
    }

    #[test]
    fn a_replace_keeps_to_what_it_expects_and_the_files_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, root) = project();
        let path = root.join("run.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let held = HeldWrite::resolve(&pinned(&root), "run.sh").unwrap();
        let now = held.read(100).unwrap().unwrap();
        assert_eq!(now.data.as_deref(), Some(&b"old"[..]));
        assert!(
            matches!(held.replace(b"new", None, UNNOTED), Err(WriteError::Changed)),
            "it exists"
        );
        let stale = Version {
            size: 3,
            modified_ns: now.version.modified_ns + 1,
        };
        assert!(matches!(
            held.replace(b"new", Some(stale), UNNOTED),
            Err(WriteError::Changed)
        ));
        let written = held.replace(b"newer", Some(now.version), UNNOTED).unwrap();
        assert_eq!(written.size, 5);
        assert_eq!(std::fs::read(&path).unwrap(), b"newer");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);
        // Nothing is left beside it.
        let names: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            names.iter().all(|n| !n.to_string_lossy().contains(".iota-")),
            "{names:?}"
        );
    }

    #[test]
    fn a_directory_made_a_repository_after_the_decision_is_not_written() {
        let (_dir, root) = project();
        for d in ["x/objects", "x/refs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let held = HeldWrite::resolve(&pinned(&root), "x/config").unwrap();
        assert!(!held.protected, "no HEAD yet: not a repository");
        std::fs::write(root.join("x/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(matches!(
            held.replace(b"[core]", None, UNNOTED),
            Err(WriteError::BecameProtected)
        ));
        assert!(!root.join("x/config").exists());
    }

    #[test]
    fn what_a_killed_replacement_left_is_removed_by_the_next_write() {
        let (_dir, root) = project();
        std::fs::write(root.join("a.txt"), "old").unwrap();
        let left = root.join(".a.txt.iota-0123456789abcdef0123456789abcdef.tmp");
        std::fs::write(&left, "half").unwrap();
        let young = root.join(".a.txt.iota-fedcba9876543210fedcba9876543210.tmp");
        std::fs::write(&young, "in flight").unwrap();
        // The user's own file named like one, just as old: not ours.
        let theirs = root.join(".a.txt.iota-backup.tmp");
        std::fs::write(&theirs, "kept").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for aged in [&left, &theirs] {
            std::fs::File::options()
                .write(true)
                .open(aged)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let held = HeldWrite::resolve(&pinned(&root), "a.txt").unwrap();
        let version = held.read(100).unwrap().unwrap().version;
        held.replace(b"new", Some(version), UNNOTED).unwrap();
        assert!(!left.exists(), "a stale one is removed");
        assert!(young.exists(), "one that may be another write's own is kept");
        assert!(theirs.exists(), "a name writes never make is the user's");
    }

    #[test]
    fn a_link_put_at_the_name_is_replaced_not_followed() {
        let (_dir, root) = project();
        std::fs::write(root.join("a.txt"), "old").unwrap();
        let held = HeldWrite::resolve(&pinned(&root), "a.txt").unwrap();
        let version = held.read(100).unwrap().unwrap().version;
        std::fs::remove_file(root.join("a.txt")).unwrap();
        symlink(".git/config", root.join("a.txt")).unwrap();
        assert_eq!(held.read(100).unwrap_err(), Unresolved::NotRegular);
        assert!(matches!(
            held.replace(b"x", Some(version), UNNOTED),
            Err(WriteError::Changed)
        ));
        assert!(!root.join(".git/config").exists());
    }
}
