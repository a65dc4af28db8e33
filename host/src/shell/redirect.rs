//! The iota exception's redirections, performed by the host as bash would
//! perform them, but only where the line's writes cannot reach what runs
//! outside the sandbox.
//!
//! Spec: "Redirections (>, <, 2>&1, &>) are allowed: they change where
//! iota's output goes, not what runs." An accepted line is not handed to
//! bash (`iota.rs`); its redirections are performed here, left to right,
//! each on what the ones before left, the first that fails ending the line
//! before anything runs, as bash does — with bash's flags (`>` creates or
//! truncates, `>>` appends, `<` reads) and its mode for a new file (0666
//! less the umask).
//!
//! Every file is reached from the pinned project root one directory at a
//! time, no link followed (`O_NOFOLLOW` on each, so a link planted by a
//! sandboxed command is never a way out), and only a regular file is used
//! (opened without waiting, so a FIFO cannot hold the host). A target
//! outside the root (`/dev/null` aside), through a link, or in a protected
//! place (`.git`, `.iota`, `HEAD`, a repository's own directory) keeps the
//! line in the sandbox ([`allowed`]); the same is checked again when the
//! file is opened ([`perform`]), so what changed in between makes the call
//! fail, never the write land there.

use super::iota::Redirection;
#[cfg(unix)]
use super::iota::{DEV_NULL, Open};
use crate::project::ProjectRoot;
#[cfg(unix)]
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
#[cfg(unix)]
use rustix::io::Errno;
#[cfg(unix)]
use std::ffi::{OsStr, OsString};
#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
#[cfg(unix)]
use std::path::{Component, PathBuf};

/// An open file a stream is redirected to.
#[cfg(windows)]
type OwnedFd = std::os::windows::io::OwnedHandle;

/// Where the command's standard streams go once the redirections are done.
#[derive(Debug, Default)]
pub struct Streams {
    /// Its stdin: a file, or `/dev/null` when `None`.
    pub stdin: Option<OwnedFd>,
    /// Its stdout.
    pub stdout: Sink,
    /// Its stderr.
    pub stderr: Sink,
}

/// Where an output stream goes.
#[derive(Debug, Default)]
pub enum Sink {
    /// The call's output, which the model reads.
    #[default]
    Output,
    /// A file (or `/dev/null`); only an iota line, which leaves no sandbox
    /// on Windows, has one.
    #[cfg_attr(windows, allow(dead_code))]
    File(OwnedFd),
}

impl Sink {
    #[cfg(unix)]
    fn try_clone(&self) -> std::io::Result<Sink> {
        Ok(match self {
            Sink::Output => Sink::Output,
            Sink::File(fd) => Sink::File(fd.try_clone()?),
        })
    }
}

/// Whether `redirections`, made in `cwd` (relative to the root, no link on
/// it: the directory the child is started in), may run outside the sandbox:
/// every file target is `/dev/null` or beneath the root, reached with no
/// link on the way, not a link, FIFO, device or directory itself, and (when
/// written) not in a protected place. A target or a directory that does not
/// exist yet passes: opening it fails as bash's would.
#[cfg(unix)]
pub fn allowed(redirections: &[Redirection], root: &ProjectRoot, cwd: &Path) -> bool {
    redirections.iter().all(|redirection| match redirection {
        Redirection::Dup { .. } => true,
        Redirection::File { target, .. } if target == DEV_NULL => true,
        Redirection::File { target, open, .. } => {
            let Some(relative) = beneath(root, cwd, target) else {
                return false;
            };
            let writes = *open != Open::Read;
            match walk(root, &relative, writes) {
                Ok((dir, name)) => match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => FileType::from_raw_mode(st.st_mode) == FileType::RegularFile,
                    Err(_) => true,
                },
                Err(Refused::Missing) => true,
                Err(Refused::Protected | Refused::Link | Refused::Other(_)) => false,
            }
        }
    })
}

/// Performs `redirections` in order, in `cwd` (relative to the root, as
/// [`allowed`] takes it): the streams the command then
/// runs with, or the first failure, as `TARGET: reason`. Like bash, a
/// failure is also said on stderr as the redirections before it left it
/// (`&>log >missing/x` says it in `log`), as `iota-host: TARGET: reason`.
#[cfg(unix)]
pub fn perform(redirections: &[Redirection], root: &ProjectRoot, cwd: &Path) -> Result<Streams, String> {
    let mut streams = Streams::default();
    perform_onto(&mut streams, redirections, root, cwd).inspect_err(|why| {
        if let Sink::File(stderr) = &streams.stderr {
            let _ = rustix::io::write(stderr, format!("iota-host: {why}\n").as_bytes());
        }
    })?;
    Ok(streams)
}

/// Windows has no sandbox to leave: an iota line runs as every line does,
/// its redirections the interpreter's.
#[cfg(windows)]
pub fn allowed(_redirections: &[Redirection], _root: &ProjectRoot, _cwd: &Path) -> bool {
    false
}

/// Never asked on Windows ([`allowed`] is false there).
#[cfg(windows)]
pub fn perform(redirections: &[Redirection], _root: &ProjectRoot, _cwd: &Path) -> Result<Streams, String> {
    if redirections.is_empty() {
        return Ok(Streams::default());
    }
    Err("redirections are the interpreter's on Windows".to_string())
}

#[cfg(unix)]
fn perform_onto(
    streams: &mut Streams,
    redirections: &[Redirection],
    root: &ProjectRoot,
    cwd: &Path,
) -> Result<(), String> {
    for redirection in redirections {
        match redirection {
            Redirection::Dup { fd, to } => {
                let copy = match to {
                    1 => streams.stdout.try_clone(),
                    _ => streams.stderr.try_clone(),
                }
                .map_err(|e| format!("{to}: {}", iota_toolset::output::plain(&e)))?;
                match fd {
                    1 => streams.stdout = copy,
                    _ => streams.stderr = copy,
                }
            }
            Redirection::File { fds, target, open } => {
                let file = open_target(root, cwd, target, *open)?;
                for fd in fds {
                    let copy = file
                        .try_clone()
                        .map_err(|e| format!("{target}: {}", iota_toolset::output::plain(&e)))?;
                    match fd {
                        0 => streams.stdin = Some(copy),
                        1 => streams.stdout = Sink::File(copy),
                        _ => streams.stderr = Sink::File(copy),
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
/// Opens one redirection's file as bash would, within the rules above.
fn open_target(root: &ProjectRoot, cwd: &Path, target: &str, open: Open) -> Result<OwnedFd, String> {
    let failed = |why: &str| format!("{target}: {why}");
    let mut flags = match open {
        Open::Read => OFlags::RDONLY,
        Open::Truncate => OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
        Open::Append => OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND,
    };
    if target == DEV_NULL {
        return rustix::fs::open(DEV_NULL, flags | OFlags::CLOEXEC, Mode::empty()).map_err(|e| failed(&errno_text(e)));
    }
    let relative = beneath(root, cwd, target).ok_or_else(|| failed("outside the project"))?;
    let (dir, name) = walk(root, &relative, open != Open::Read).map_err(|refused| match refused {
        Refused::Missing => failed("No such file or directory"),
        Refused::Protected => failed("a repository's own files are not written outside the sandbox"),
        Refused::Link => failed("a link on the way is not followed outside the sandbox"),
        Refused::Other(e) => failed(&errno_text(e)),
    })?;
    // Never waiting on a FIFO's other end; only a regular file is kept.
    flags |= OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = rustix::fs::openat(&dir, &name, flags, Mode::from_raw_mode(0o666)).map_err(|e| match e {
        Errno::LOOP => failed("a link is not followed outside the sandbox"),
        e => failed(&errno_text(e)),
    })?;
    let st = rustix::fs::fstat(&file).map_err(|e| failed(&errno_text(e)))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(failed("not a regular file"));
    }
    // The command's writes block as a file's do; appending stays appending.
    let status = if open == Open::Append {
        OFlags::APPEND
    } else {
        OFlags::empty()
    };
    rustix::fs::fcntl_setfl(&file, status).map_err(|e| failed(&errno_text(e)))?;
    Ok(file)
}

#[cfg(unix)]
/// The words bash uses for an error (`No such file or directory`).
fn errno_text(e: Errno) -> String {
    iota_toolset::output::plain(&std::io::Error::from(e))
}

#[cfg(unix)]
/// Why a target's directory was not reached.
enum Refused {
    /// A directory on the way does not exist.
    Missing,
    /// The target is in a protected place and would be written.
    Protected,
    /// A link (or something not a directory) on the way.
    Link,
    /// Anything else.
    Other(Errno),
}

#[cfg(unix)]
/// `target` (relative to `cwd`, itself relative to the root, or absolute)
/// as components below the
/// root, `..` taken lexically (no link can be on the way: [`walk`] follows
/// none); `None` when it is not beneath the root or names the root itself.
fn beneath(root: &ProjectRoot, cwd: &Path, target: &str) -> Option<Vec<OsString>> {
    let root_path = root.path();
    let start = cwd;
    let mut parts: Vec<OsString> = if Path::new(target).is_absolute() {
        Vec::new()
    } else {
        start.iter().map(OsStr::to_os_string).collect()
    };
    let target = match Path::new(target).strip_prefix(root_path) {
        Ok(inside) => inside.to_path_buf(),
        Err(_) if Path::new(target).is_absolute() => return None,
        Err(_) => PathBuf::from(target),
    };
    for component in target.components() {
        match component {
            Component::Normal(name) => parts.push(name.to_os_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then_some(parts)
}

#[cfg(unix)]
/// The directory `relative`'s last component is in, reached from the root
/// one directory at a time with no link followed, and that name. Written
/// (`writes`), a protected place is refused: by its names, or a
/// repository's own directory anywhere on the way, the root's included.
fn walk(root: &ProjectRoot, relative: &[OsString], writes: bool) -> Result<(OwnedFd, OsString), Refused> {
    let (name, parents) = relative.split_last().ok_or(Refused::Other(Errno::ISDIR))?;
    if writes && crate::protected::by_name(relative) {
        return Err(Refused::Protected);
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(root.fd(), ".", flags, Mode::empty()).map_err(Refused::Other)?;
    for part in parents {
        if writes && crate::protected::is_repository_dir(dir.as_fd()) {
            return Err(Refused::Protected);
        }
        dir = match rustix::fs::openat(&dir, part, flags, Mode::empty()) {
            Ok(next) => next,
            Err(Errno::NOENT) => return Err(Refused::Missing),
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(Refused::Link),
            Err(e) => return Err(Refused::Other(e)),
        };
    }
    if writes && crate::protected::is_repository_dir(dir.as_fd()) {
        return Err(Refused::Protected);
    }
    Ok((dir, name.clone()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, ProjectRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = ProjectRoot::open(&std::fs::canonicalize(dir.path()).unwrap()).unwrap();
        (dir, root)
    }

    fn file(fds: &[u8], target: &str, open: Open) -> Redirection {
        Redirection::File {
            fds: fds.to_vec(),
            target: target.into(),
            open,
        }
    }

    #[test]
    fn targets_beneath_the_root_with_no_link_and_not_protected_are_allowed() {
        let (_dir, root) = project();
        let base = root.path().to_path_buf();
        std::fs::create_dir_all(base.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(base.join(".git")).unwrap();
        std::fs::write(base.join("in.txt"), "in").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), base.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("in.txt"), base.join("alias.txt")).unwrap();
        let bare = base.join("bare.git");
        for d in ["objects", "refs"] {
            std::fs::create_dir_all(bare.join(d)).unwrap();
        }
        std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let at = |cwd: &str, target: &str, open| allowed(&[file(&[1], target, open)], &root, Path::new(cwd));
        use Open::{Append, Read, Truncate};
        assert!(at("", "out.txt", Truncate));
        assert!(at("", "sub/new.txt", Append));
        assert!(at("sub", "../x.txt", Truncate));
        assert!(at("sub/deeper", "../../x.txt", Truncate));
        assert!(at("", "missing/dir/x.txt", Truncate), "fails when opened, as in bash");
        assert!(at("", "/dev/null", Truncate));
        assert!(at("", &base.join("sub/abs.txt").to_string_lossy(), Truncate));
        assert!(at("", ".git/config", Read), "reading is not writing");
        assert!(!at("", "../escape.txt", Truncate));
        assert!(!at("sub", "../../escape.txt", Truncate));
        assert!(!at("", "/etc/passwd", Read));
        assert!(!at("", "out/x.txt", Truncate), "through a link");
        assert!(!at("", "alias.txt", Truncate), "a link itself");
        assert!(!at("", "alias.txt", Read));
        assert!(!at("", ".git/config", Truncate));
        assert!(!at("", ".iota/config.yaml", Truncate));
        assert!(!at("", "HEAD", Append));
        assert!(!at("", "bare.git/config", Truncate), "a repository's own directory");
        assert!(!at("", "sub", Truncate), "a directory");
        assert!(!at("", ".", Truncate));
    }

    #[test]
    fn streams_follow_the_redirections_in_order_and_files_are_made_as_bash_makes_them() {
        let (_dir, root) = project();
        let base = root.path().to_path_buf();
        std::fs::write(base.join("old.txt"), "old content").unwrap();
        std::fs::write(base.join("log.txt"), "line 1\n").unwrap();
        let dup = |fd, to| Redirection::Dup { fd, to };
        let streams = perform(
            &[
                dup(2, 1),
                file(&[1], "old.txt", Open::Truncate),
                file(&[1], "log.txt", Open::Append),
            ],
            &root,
            &base,
        )
        .unwrap();
        assert!(
            matches!(streams.stderr, Sink::Output),
            "2>&1 before > keeps stderr on the output"
        );
        assert!(matches!(streams.stdout, Sink::File(_)));
        assert!(streams.stdin.is_none());
        assert_eq!(
            std::fs::read(base.join("old.txt")).unwrap(),
            b"",
            "truncated on the way"
        );
        let Sink::File(out) = streams.stdout else {
            unreachable!()
        };
        rustix::io::write(&out, b"line 2\n").unwrap();
        assert_eq!(std::fs::read(base.join("log.txt")).unwrap(), b"line 1\nline 2\n");
        // A missing input ends the line there: what came before is done.
        let failed = perform(
            &[
                file(&[1], "made.txt", Open::Truncate),
                file(&[0], "nope.txt", Open::Read),
            ],
            &root,
            &base,
        )
        .unwrap_err();
        assert_eq!(failed, "nope.txt: No such file or directory");
        assert!(base.join("made.txt").exists());
        // A FIFO is not waited on.
        nix::unistd::mkfifo(&base.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(perform(&[file(&[0], "fifo", Open::Read)], &root, &base).is_err());
    }
}
