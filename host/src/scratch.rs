//! The host's own directories under the system temp directory: one per
//! session, `iota-<random>`, holding the session's private `/tmp` (what its
//! sandboxed commands see as `/tmp`) and its job logs. Removed when the
//! session ends, and, when the process that made one was killed before it
//! could (`kill -9`, an iota child stopped by its parent's timeout, the
//! machine's OOM killer), by the next host that looks.
//!
//! The directory also keeps the session's journal of write temporaries
//! (`writes`, beside the subdirectories, so no sandboxed command sees it):
//! each name a write is about to make in the project, so that a host killed
//! between making and renaming one leaves nothing the sweep does not find.
//!
//! How a host knows a directory is abandoned: its maker holds an exclusive
//! `flock` on the `.owner` file in it for as long as it lives, and the
//! kernel lets go of the lock when the process dies, however it dies. A
//! directory whose `.owner` can be locked belongs to nobody alive. The
//! directory comes into place (a rename) only once its lock is held, so no
//! sweep sees one half made.
//!
//! On Windows the lock is the `.owner` file itself, held open sharing
//! nothing: nobody else can open it while its maker lives, and Windows
//! closes the handle when the process dies, however it dies.

#[cfg(unix)]
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The prefix of every scratch directory's name.
const PREFIX: &str = "iota-";

/// The file whose lock says the directory's maker lives.
const OWNER: &str = ".owner";

/// The journal of write temporaries: absolute paths, each ended by a NUL.
const JOURNAL: &str = "writes";

/// The most of a journal a sweep reads: a long session's worth of writes.
const MAX_JOURNAL: u64 = 64 << 20;

/// One session's scratch directory, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    base: PathBuf,
    /// The journal, opened on the first note.
    journal: Mutex<Option<File>>,
    /// Holds the lock; closed (released) after the directory is gone.
    _owner: File,
}

impl Scratch {
    /// A new scratch directory in the system temp directory (0700, a fresh
    /// unguessable name, never an existing directory), after sweeping the
    /// abandoned ones.
    pub fn create() -> std::io::Result<Scratch> {
        let temp = std::env::temp_dir();
        sweep_soon(&temp);
        let token = crate::secret::token();
        let staging = temp.join(format!(".{PREFIX}staging-{token}"));
        crate::platform::private_dir_builder().create(&staging)?;
        let made = (|| {
            let owner = hold_owner(&staging.join(OWNER))?;
            let base = temp.join(format!("{PREFIX}{token}"));
            std::fs::rename(&staging, &base)?;
            Ok(Scratch {
                base,
                journal: Mutex::new(None),
                _owner: owner,
            })
        })();
        if made.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        made
    }

    /// The directory.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.base
    }

    /// Its subdirectory `name` (0700), made if missing.
    pub fn subdir(&self, name: &str) -> std::io::Result<PathBuf> {
        let dir = self.base.join(name);
        match crate::platform::private_dir_builder().create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(dir),
        }
    }
}

impl Scratch {
    /// Adds `path` (a write's temporary, about to be made) to the journal.
    pub fn note_temporary(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let mut journal = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        if journal.is_none() {
            let file = crate::platform::open_private_no_follow(
                std::fs::OpenOptions::new().append(true).create(true),
                &self.base.join(JOURNAL),
            )?;
            *journal = Some(file);
        }
        let mut entry = path.as_os_str().as_encoded_bytes().to_vec();
        entry.push(0);
        journal.as_mut().map_or(Ok(()), |file| file.write_all(&entry))
    }
}

/// Removes the write temporaries a dead session's journal `journal` names
/// that are still there: each opened beneath `/` with no link followed on
/// the way, and removed only when its name is a write temporary's and it
/// is a regular file of this user's. How many were removed.
fn sweep_journal(journal: &Path) -> usize {
    use std::io::Read;
    let mut text = Vec::new();
    let Ok(file) = crate::platform::open_to_read_no_follow(journal) else {
        return 0;
    };
    if file.take(MAX_JOURNAL).read_to_end(&mut text).is_err() {
        return 0;
    }
    let mut removed = 0;
    for entry in text.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let path = crate::platform::path_from_bytes(entry.to_vec());
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        if !path.is_absolute() || !is_write_temporary(name.as_encoded_bytes()) {
            continue;
        }
        if remove_temporary(dir, name) {
            removed += 1;
        }
    }
    removed
}

/// Removes the write temporary `name` in `dir` if it is a regular file of
/// this user's, `dir` opened beneath `/` with no link followed on the way.
#[cfg(unix)]
fn remove_temporary(dir: &Path, name: &std::ffi::OsStr) -> bool {
    let uid = rustix::process::geteuid().as_raw();
    let Ok(dir) = open_with_no_link(dir) else {
        return false;
    };
    let ours = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile && st.st_uid == uid
    });
    ours && rustix::fs::unlinkat(&dir, name, AtFlags::empty()).is_ok()
}

/// The directory `dir` (absolute), opened with no symbolic link followed on
/// the way: `openat2`'s `RESOLVE_NO_SYMLINKS` on Linux, elsewhere one
/// component at a time from `/`, each `O_NOFOLLOW`.
#[cfg(unix)]
fn open_with_no_link(dir: &Path) -> rustix::io::Result<std::os::fd::OwnedFd> {
    let flags = crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    #[cfg(target_os = "linux")]
    {
        let how = rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS;
        rustix::fs::openat2(rustix::fs::CWD, dir, flags, Mode::empty(), how)
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::path::Component;
        let mut at = rustix::fs::open("/", flags, Mode::empty())?;
        for part in dir.components() {
            match part {
                Component::RootDir => {}
                Component::Normal(name) => at = rustix::fs::openat(&at, name, flags | OFlags::NOFOLLOW, Mode::empty())?,
                _ => return Err(rustix::io::Errno::INVAL),
            }
        }
        Ok(at)
    }
}

/// Removes the write temporary `name` in `dir` if it is a regular file,
/// every directory from the drive's root to `dir` held and none a reparse
/// point. (Windows' temp directory is the user's own.)
#[cfg(windows)]
fn remove_temporary(dir: &Path, name: &std::ffi::OsStr) -> bool {
    let Ok(held) = crate::platform::windows::hold_absolute(dir) else {
        return false;
    };
    let Ok(path) = held.join(name) else {
        return false;
    };
    std::fs::symlink_metadata(&path)
        .is_ok_and(|meta| meta.is_file() && !crate::platform::windows::is_reparse_point(&meta))
        && std::fs::remove_file(&path).is_ok()
}

/// Creates the owner file `path` and takes its lock: an exclusive `flock`,
/// which the kernel lets go of when the process dies.
#[cfg(unix)]
fn hold_owner(path: &Path) -> std::io::Result<File> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let owner = rustix::fs::open(path, flags, Mode::from_raw_mode(0o600))?;
    rustix::fs::flock(&owner, FlockOperation::NonBlockingLockExclusive)?;
    Ok(File::from(owner))
}

/// Creates the owner file `path`, open sharing nothing: Windows closes the
/// handle when the process dies, however it dies.
#[cfg(windows)]
fn hold_owner(path: &Path) -> std::io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .share_mode(0)
        .open(path)
}

/// Whether the scratch directory `path` is this user's and its maker gone:
/// a directory (no link), its `.owner` lockable.
#[cfg(unix)]
fn abandoned(path: &Path) -> bool {
    let uid = rustix::process::geteuid().as_raw();
    let Ok(st) = rustix::fs::statat(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW) else {
        return false;
    };
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory || st.st_uid != uid {
        return false;
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let Ok(owner) = rustix::fs::open(path.join(OWNER), flags, Mode::empty()) else {
        return false;
    };
    rustix::fs::flock(&owner, FlockOperation::NonBlockingLockExclusive).is_ok()
}

/// Whether the scratch directory `path` is abandoned: a directory (no
/// reparse point) whose `.owner` opens sharing nothing, so no process holds
/// it.
#[cfg(windows)]
fn abandoned(path: &Path) -> bool {
    use std::os::windows::fs::OpenOptionsExt;
    let is_dir = std::fs::symlink_metadata(path)
        .is_ok_and(|meta| meta.is_dir() && !crate::platform::windows::is_reparse_point(&meta));
    is_dir
        && std::fs::OpenOptions::new()
            .read(true)
            .share_mode(0)
            .open(path.join(OWNER))
            .is_ok()
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_tree(&self.base);
    }
}

/// Removes `dir` and everything in it, even what a sandboxed command made
/// unwritable (`chmod 555` on a directory of its /tmp stops `rm -r` for
/// anyone but root): where the first try fails, every directory in it is
/// made the owner's to change again (opened without following a link) and
/// the removal tried once more. Whether it is gone.
pub fn remove_tree(dir: &Path) -> bool {
    if std::fs::remove_dir_all(dir).is_ok() {
        return true;
    }
    #[cfg(unix)]
    {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) {
            make_owner_writable(fd, 0);
        }
    }
    std::fs::remove_dir_all(dir).is_ok()
}

/// `chmod 700` on the directory `fd` and every directory below it (to a
/// depth no path reaches).
#[cfg(unix)]
fn make_owner_writable(fd: std::os::fd::OwnedFd, depth: usize) {
    if depth > 2048 || rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700)).is_err() {
        return;
    }
    let Ok(listing) = rustix::fs::Dir::read_from(&fd) else {
        return;
    };
    for entry in listing.flatten() {
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." || entry.file_type() != rustix::fs::FileType::Directory {
            continue;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Ok(sub) = rustix::fs::openat(&fd, name, flags, Mode::empty()) {
            make_owner_writable(sub, depth + 1);
        }
    }
}

/// How often one process sweeps at most.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Sweeps `temp` unless this process did in the last [`SWEEP_EVERY`].
pub fn sweep_soon(temp: &Path) {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < SWEEP_EVERY) {
            return;
        }
        *last = Some(Instant::now());
    }
    sweep(temp);
}

/// Removes every scratch directory in `temp` that is this user's and whose
/// maker is gone (its `.owner` can be locked). Nothing is followed: a link
/// named like one, or a directory of another user, is left alone.
pub fn sweep(temp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.as_encoded_bytes().starts_with(PREFIX.as_bytes()) {
            continue;
        }
        let path = entry.path();
        if abandoned(&path) {
            sweep_journal(&path.join(JOURNAL));
            // Even what a command there made unwritable (`chmod 555`).
            if remove_tree(&path) {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_writes_make_are_taken_for_their_temporaries() {
        for _ in 0..100 {
            let made = temporary_name(std::ffi::OsStr::new("a.txt"));
            assert!(is_write_temporary(made.as_encoded_bytes()), "{made:?}");
        }
        let token = "0123456789abcdef0123456789ABCDEF";
        for name in [
            format!("a.txt.iota-{token}.tmp"),
            format!("..iota-{token}.tmp"),
            format!(".a.txt.iota-{}.tmp", &token[1..]),
            format!(".a.txt.iota-{token}x.tmp"),
            format!(".a.txt.iota-{token}.tmp2"),
            format!(".a.txt.iotb-{token}.tmp"),
            ".a.txt.iota-.tmp".to_string(),
            ".tmp".to_string(),
            ".gitignore".to_string(),
        ] {
            assert!(!is_write_temporary(name.as_bytes()), "{name}");
        }
        assert!(is_write_temporary(format!(".x.iota-{token}.tmp").as_bytes()));
    }

    #[test]
    fn a_scratch_directory_is_swept_only_once_its_maker_is_gone() {
        let temp = tempfile::tempdir().unwrap();
        let temp = temp.path();
        // Alive: its lock held (here, by an open description of this test's).
        let alive = temp.join("iota-alive");
        std::fs::create_dir(&alive).unwrap();
        let held = File::create(alive.join(OWNER)).unwrap();
        rustix::fs::flock(&held, FlockOperation::LockExclusive).unwrap();
        // Gone: its lock free.
        let gone = temp.join("iota-gone");
        std::fs::create_dir_all(gone.join("tmp")).unwrap();
        std::fs::write(gone.join(OWNER), "").unwrap();
        std::fs::write(gone.join("tmp/big"), vec![0u8; 4096]).unwrap();
        // Not ours to judge: no owner file, a link, another name.
        let legacy = temp.join("iota-legacy");
        std::fs::create_dir(&legacy).unwrap();
        let target = temp.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join(OWNER), "").unwrap();
        std::os::unix::fs::symlink(&target, temp.join("iota-link")).unwrap();
        let other = temp.join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(OWNER), "").unwrap();
        assert_eq!(sweep(temp), 1);
        assert!(!gone.exists());
        assert!(alive.exists() && legacy.exists() && target.join(OWNER).exists() && other.exists());
        drop(held);
        assert_eq!(sweep(temp), 1, "its maker gone now");
        assert!(!alive.exists());
    }

    #[test]
    fn what_was_made_unwritable_is_removed_all_the_same() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("iota-x");
        std::fs::create_dir_all(dir.join("tmp/keep/deeper")).unwrap();
        std::fs::write(dir.join("tmp/keep/deeper/blob"), "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        for d in ["tmp/keep/deeper", "tmp/keep"] {
            std::fs::set_permissions(dir.join(d), std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        // A link out of it is not followed: what it points at keeps its mode.
        let outside = temp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o555)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("tmp/link")).unwrap();
        // (Root removes it at the first try; what the second needs is
        // checked on its own, whoever runs the test.)
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        make_owner_writable(rustix::fs::open(&dir, flags, Mode::empty()).unwrap(), 0);
        for d in ["tmp/keep/deeper", "tmp/keep"] {
            assert_eq!(
                std::fs::metadata(dir.join(d)).unwrap().permissions().mode() & 0o777,
                0o700,
                "{d}"
            );
        }
        std::fs::set_permissions(dir.join("tmp/keep"), std::fs::Permissions::from_mode(0o555)).unwrap();
        assert!(remove_tree(&dir));
        assert!(!dir.exists());
        assert_eq!(std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777, 0o555);
    }

    #[test]
    fn a_scratch_directory_is_removed_when_dropped_and_not_swept_while_held() {
        let scratch = Scratch::create().unwrap();
        let base = scratch.path().to_path_buf();
        let tmp = scratch.subdir("tmp").unwrap();
        std::fs::write(tmp.join("x"), "x").unwrap();
        assert_eq!(scratch.subdir("tmp").unwrap(), tmp);
        let Some(parent) = base.parent() else { unreachable!() };
        sweep(parent);
        assert!(tmp.join("x").exists(), "held: not swept");
        drop(scratch);
        assert!(!base.exists());
    }

    #[test]
    fn a_dead_sessions_journal_sweeps_its_temporaries_and_nothing_else() {
        let temp = tempfile::tempdir().unwrap();
        let project = temp.path().join("project");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        let token = "0123456789abcdef0123456789abcdef";
        let left = project.join(format!("sub/.a.txt.iota-{token}.tmp"));
        std::fs::write(&left, "half").unwrap();
        // Named in the journal but not a write's temporary: kept.
        let theirs = project.join("sub/a.txt");
        std::fs::write(&theirs, "the user's").unwrap();
        // A temporary's name reached through a link on the way: kept.
        let elsewhere = temp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let behind = elsewhere.join(format!(".b.txt.iota-{token}.tmp"));
        std::fs::write(&behind, "not through a link").unwrap();
        std::os::unix::fs::symlink(&elsewhere, project.join("link")).unwrap();
        // A directory named like one: kept.
        let dir_named = project.join(format!(".c.iota-{token}.tmp"));
        std::fs::create_dir(&dir_named).unwrap();

        let dead = temp.path().join("iota-dead");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(OWNER), "").unwrap();
        let mut journal = Vec::new();
        for path in [
            left.clone(),
            theirs.clone(),
            project.join(format!("link/.b.txt.iota-{token}.tmp")),
            dir_named.clone(),
            project.join(format!("gone/.d.iota-{token}.tmp")),
        ] {
            journal.extend_from_slice(path.as_os_str().as_encoded_bytes());
            journal.push(0);
        }
        journal.extend_from_slice(b"relative/.e.iota-0123456789abcdef0123456789abcdef.tmp\0");
        std::fs::write(dead.join(JOURNAL), journal).unwrap();

        assert_eq!(sweep(temp.path()), 1);
        assert!(!dead.exists());
        assert!(!left.exists(), "the dead session's temporary is gone");
        assert!(theirs.exists() && behind.exists() && dir_named.exists());
    }

    #[test]
    fn a_living_session_notes_its_temporaries_out_of_the_sandboxes_sight() {
        let scratch = Scratch::create().unwrap();
        scratch.note_temporary(Path::new("/x/.a.iota-0.tmp")).unwrap();
        scratch.note_temporary(Path::new("/y/.b.iota-1.tmp")).unwrap();
        let journal = std::fs::read(scratch.path().join(JOURNAL)).unwrap();
        assert_eq!(journal, b"/x/.a.iota-0.tmp\0/y/.b.iota-1.tmp\0");
        // Not inside what a sandbox is shown (its /tmp, its job logs).
        for shown in ["tmp", "jobs"] {
            assert!(!scratch.subdir(shown).unwrap().join(JOURNAL).exists());
        }
    }
}

/// Whether `name` is a write's temporary name ([`temporary_name`]):
/// `.`, a name, `.iota-`, 32 hex digits, `.tmp`. Listings of the project
/// leave these out: a model should not see, read or write the host's
/// half-made files.
pub fn is_write_temporary(name: &[u8]) -> bool {
    const TOKEN: usize = 32;
    let Some(rest) = name.strip_prefix(b".").and_then(|r| r.strip_suffix(b".tmp")) else {
        return false;
    };
    let Some(split) = rest.len().checked_sub(TOKEN) else {
        return false;
    };
    let (base, token) = rest.split_at(split);
    token.iter().all(u8::is_ascii_hexdigit) && base.strip_suffix(b".iota-").is_some_and(|file| !file.is_empty())
}

/// `.NAME.iota-RANDOM.tmp`: beside the file, unguessable, and known as ours.
/// Listings leave such names out ([`is_write_temporary`]).
pub fn temporary_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    let mut temporary = std::ffi::OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".iota-{}.tmp", crate::secret::token()));
    temporary
}
