//! The host's own state on disk — compiled components (native code it will
//! execute), remembered descriptions, the sandbox probe's memo — and the key
//! that seals every file of it.
//!
//! Nothing a sandboxed command, a tool or a component can write may change
//! what the host later runs, so this state is kept where none of them can
//! write (`$XDG_STATE_HOME/iota-host`, else `~/.local/state/iota-host`, not
//! the cache directory the spec makes writable to sandboxed commands), is
//! hidden inside the sandbox (an empty mount over it), and is verified
//! anyway: each file ends in a keyed BLAKE3 tag over its name and contents,
//! made with a 256-bit key that lives in the same directory (0600) and is
//! never visible inside the sandbox. A file whose tag does not match is
//! ignored, as if absent, and rebuilt. Files are written to a fresh,
//! unguessable temporary name created exclusively (`O_EXCL|O_NOFOLLOW`, 0600)
//! and renamed into place; the directory is made 0700 by the host, and an
//! existing one that is a link, or is not the user's own and private, is
//! refused.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Length of a file's tag, after its contents.
const TAG_LEN: usize = 32;
/// The key's file name inside the directory.
const KEY_FILE: &str = "key";

/// `$IOTA_CACHE_DIR`, else `$XDG_STATE_HOME/iota-host`, else (Windows)
/// `%LOCALAPPDATA%\iota-host`, else `~/.local/state/iota-host`.
pub fn default_dir() -> Option<PathBuf> {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = env("IOTA_CACHE_DIR").or_else(|| env("XDG_STATE_HOME").map(|d| d.join("iota-host")));
    #[cfg(windows)]
    let dir = dir.or_else(|| env("LOCALAPPDATA").map(|d| d.join("iota-host")));
    dir.or_else(|| crate::platform::home_dir().map(|h| h.join(".local").join("state").join("iota-host")))
}

/// An open state directory: where it is and the key that seals its files.
#[derive(Clone)]
pub struct StateDir {
    dir: PathBuf,
    key: [u8; 32],
}

impl std::fmt::Debug for StateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateDir")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl StateDir {
    /// Opens `dir`, creating it (0700) and its key where missing. Refuses a
    /// directory or key that is a link, belongs to someone else, or that
    /// others may write (or, for the key, read).
    pub fn open(dir: &Path) -> Result<StateDir, String> {
        let refuse = |why: &str| Err(format!("the host state directory {} {why}", dir.display()));
        match std::fs::symlink_metadata(dir) {
            Ok(meta) => {
                if !meta.is_dir() {
                    return refuse("is not a directory (a link or a file)");
                }
                if !owned_and_private(&meta, 0o022) {
                    return refuse("is not the user's own, or others may write to it");
                }
            }
            Err(_) => {
                if let Some(parent) = dir.parent() {
                    let _ = crate::platform::private_dir_builder().recursive(true).create(parent);
                }
                if let Err(e) = crate::platform::private_dir_builder().create(dir) {
                    return refuse(&format!("cannot be created: {e}"));
                }
            }
        }
        let key = match read_key(&dir.join(KEY_FILE)) {
            Ok(key) => key,
            Err(why) => return refuse(&why),
        };
        Ok(StateDir {
            dir: dir.to_path_buf(),
            key,
        })
    }

    /// Opens the default directory ([`default_dir`]).
    pub fn open_default() -> Result<StateDir, String> {
        StateDir::open(&default_dir().ok_or("no home directory for the host's state")?)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The contents of the file `name`, when its tag proves the host wrote
    /// them; `None` for a missing, unreadable or altered file.
    pub fn read(&self, name: &str) -> Option<Vec<u8>> {
        self.with_verified(name, <[u8]>::to_vec)
    }

    /// Calls `use_file` with a path to the file `name` once its tag proves
    /// the host wrote it, for a reader that maps the file itself (wasmtime's
    /// `deserialize_file`: no copy of a compiled component). The tag sits at
    /// the file's end, so the contents start at offset 0 as such a reader
    /// expects, and the reader must ignore trailing bytes. The path is that
    /// of the open file checked (`/proc/self/fd/N`), so a file swapped in
    /// after the check is not the one read.
    ///
    /// Hashing a compiled component (6 MB) was a fifth of a `call`'s start,
    /// so a file's verification is remembered: the sealed file
    /// `NAME.verified` holds its [`Stamp`] when it was verified, and a file
    /// whose stamp still matches is not hashed again. A rename over it, a
    /// truncation, and every write through a system call move its change
    /// time, which no process but root's can set back. A stamp is kept only
    /// for a file last changed [`SETTLED`] before it was first examined (a
    /// write within the same coarse clock tick could leave the change time
    /// as it was; git's racily-clean rule), whose stat did not move while it
    /// was hashed, and whose data is on disk. What it does not see: a process
    /// already holding the file mapped shared and writable changes pages it
    /// dirtied before without moving the change time; such a process could
    /// as well change pages after any check and before wasmtime maps them (a
    /// mapped file, not a copy), so against a writer the state rests on the
    /// directory being the user's own and hidden from the sandbox. Without
    /// `/proc` the file is hashed at every use and read by name, as before.
    pub fn with_verified_file<T>(&self, name: &str, use_file: impl FnOnce(&Path) -> T) -> Option<T> {
        let examined = std::time::SystemTime::now();
        let file = self.open_sealed(name)?;
        let meta = file.metadata().ok()?;
        #[cfg(unix)]
        let through =
            crate::project::fd_path(std::os::fd::AsRawFd::as_raw_fd(&file)).filter(|through| through.exists());
        #[cfg(windows)]
        let through: Option<PathBuf> = None;
        let Some(through) = through else {
            // On Windows `file` is open sharing reads only, so nobody writes,
            // replaces or removes it before `use_file` is done with it.
            self.verify(&file, &meta, name, |_| ())?;
            let used = use_file(&self.dir.join(name));
            drop(file);
            return Some(used);
        };
        let stamp = Stamp::of(&meta);
        let memo = format!("{name}{VERIFIED_SUFFIX}");
        if self.read(&memo).as_deref() != Some(&stamp.bytes()[..]) {
            self.verify(&file, &meta, name, |_| ())?;
            let unmoved = file.metadata().is_ok_and(|after| Stamp::of(&after) == stamp);
            if unmoved && stamp.settled_at(examined) && file.sync_data().is_ok() {
                let _ = self.write(&memo, &stamp.bytes());
            }
        }
        Some(use_file(&through))
    }

    /// Calls `use_contents` on the contents of the file `name`, when its tag
    /// proves the host wrote them, without copying them first: the file is
    /// mapped, verified and used from the one mapping (a compiled component
    /// is several megabytes, and the caller copies it once anyway).
    pub fn with_verified<T>(&self, name: &str, use_contents: impl FnOnce(&[u8]) -> T) -> Option<T> {
        let file = self.open_sealed(name)?;
        let meta = file.metadata().ok()?;
        self.verify(&file, &meta, name, use_contents)
    }

    /// The file `name`, opened to read without following a link or waiting.
    fn open_sealed(&self, name: &str) -> Option<std::fs::File> {
        #[cfg(windows)]
        return crate::platform::windows::open_sharing_reads_only(&self.dir.join(name)).ok();
        #[cfg(unix)]
        crate::platform::open_to_read_no_follow(&self.dir.join(name)).ok()
    }

    /// Calls `use_contents` on the contents of `file` (the file `name`, as
    /// `meta` describes it) if its tag matches them.
    fn verify<T>(
        &self,
        file: &std::fs::File,
        meta: &std::fs::Metadata,
        name: &str,
        use_contents: impl FnOnce(&[u8]) -> T,
    ) -> Option<T> {
        let len = usize::try_from(meta.len()).ok()?;
        if !meta.is_file() || len < TAG_LEN {
            return None;
        }
        let mapping = Mapping::of(file, len)?;
        let bytes = mapping.bytes();
        let (contents, tag) = bytes.split_at(len - TAG_LEN);
        constant_time_eq(tag, &self.tag(name, contents)).then(|| use_contents(contents))
    }

    /// Writes `contents` as the file `name`, sealed, through a fresh private
    /// temporary file, so a reader never sees half a file and no planted
    /// link is followed.
    pub fn write(&self, name: &str, contents: &[u8]) -> std::io::Result<()> {
        let tmp = self.dir.join(format!(".{name}.{}.tmp", crate::secret::token()));
        let written = create_exclusive(&tmp).and_then(|mut file| {
            file.write_all(contents)?;
            file.write_all(&self.tag(name, contents))
        });
        written
            .and_then(|()| std::fs::rename(&tmp, self.dir.join(name)))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
    }

    fn tag(&self, name: &str, contents: &[u8]) -> [u8; TAG_LEN] {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(contents);
        *hasher.finalize().as_bytes()
    }
}

/// What names the remembered verification of a file: `NAME.verified`.
pub const VERIFIED_SUFFIX: &str = ".verified";

/// How long before its hash a file must have last changed for the
/// verification to be remembered: past any coarse clock tick.
const SETTLED: std::time::Duration = std::time::Duration::from_secs(2);

/// What a file's verification is remembered by: which file it is (device,
/// inode), its size, and when it last changed (change and modification
/// times, to the nanosecond).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp([i64; 7]);

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        // Bit patterns: a device or inode number past i64 stays distinct.
        Stamp([
            meta.dev() as i64,
            meta.ino() as i64,
            meta.size() as i64,
            meta.ctime(),
            meta.ctime_nsec(),
            meta.mtime(),
            meta.mtime_nsec(),
        ])
    }

    /// Windows has no change time; the creation time and the file's index
    /// in its volume (which a rename over it changes) stand in for it.
    #[cfg(windows)]
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::windows::fs::MetadataExt;
        let ns = |t: u64| (t as i64).wrapping_sub(116_444_736_000_000_000).wrapping_mul(100);
        Stamp([
            0,
            0,
            meta.file_size() as i64,
            ns(meta.creation_time()).div_euclid(1_000_000_000),
            ns(meta.creation_time()).rem_euclid(1_000_000_000),
            ns(meta.last_write_time()).div_euclid(1_000_000_000),
            ns(meta.last_write_time()).rem_euclid(1_000_000_000),
        ])
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|field| field.to_le_bytes()).collect()
    }

    /// Whether the file had last changed at least [`SETTLED`] before
    /// `examined`.
    fn settled_at(&self, examined: std::time::SystemTime) -> bool {
        let changed = std::time::UNIX_EPOCH
            .checked_add(std::time::Duration::new(
                u64::try_from(self.0[3]).unwrap_or(0),
                u32::try_from(self.0[4]).unwrap_or(0),
            ))
            .unwrap_or(std::time::UNIX_EPOCH);
        examined.duration_since(changed).is_ok_and(|age| age >= SETTLED)
    }
}

/// A file mapped read-only and private, unmapped on drop.
#[cfg(unix)]
struct Mapping {
    at: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

#[cfg(unix)]
impl Mapping {
    fn of(file: &std::fs::File, len: usize) -> Option<Mapping> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        // SAFETY: a fresh read-only private mapping of a regular file, of its
        // length, that nothing else aliases; it lives until `drop`.
        let at = unsafe {
            mmap(
                None,
                std::num::NonZeroUsize::new(len)?,
                ProtFlags::PROT_READ,
                MapFlags::MAP_PRIVATE,
                file,
                0,
            )
        }
        .ok()?;
        Some(Mapping { at, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `at` maps `len` readable bytes for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr().cast::<u8>(), self.len) }
    }
}

#[cfg(unix)]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `of` made; no slice outlives it.
        let _ = unsafe { nix::sys::mman::munmap(self.at, self.len) };
    }
}

/// A file's contents, read whole: the open file is shared for reading
/// only, so what was read is what is there.
#[cfg(windows)]
struct Mapping(Vec<u8>);

#[cfg(windows)]
impl Mapping {
    fn of(mut file: &std::fs::File, len: usize) -> Option<Mapping> {
        let mut data = Vec::with_capacity(len);
        std::io::Read::read_to_end(&mut file, &mut data).ok()?;
        (data.len() == len).then_some(Mapping(data))
    }

    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Creates `path` for writing: a new file (never an existing one, never
/// through a link), readable by its owner only.
pub fn create_exclusive(path: &Path) -> std::io::Result<std::fs::File> {
    crate::platform::open_private_no_follow(std::fs::File::options().write(true).create_new(true), path)
}

/// The key at `path`, made now if there is none.
fn read_key(path: &Path) -> Result<[u8; 32], String> {
    match crate::platform::open_to_read_no_follow(path) {
        Ok(mut file) => {
            let meta = file.metadata().map_err(|e| e.to_string())?;
            if !meta.is_file() || !owned_and_private(&meta, 0o077) {
                return Err("has a key that is not the user's own private file".into());
            }
            let mut key = [0u8; 32];
            std::io::Read::read_exact(&mut file, &mut key).map_err(|_| "has a damaged key file".to_string())?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| e.to_string())?;
            // Another process may be making it at the same moment: the file
            // that won is the key.
            match create_exclusive(path) {
                Ok(mut file) => {
                    file.write_all(&key).map_err(|e| e.to_string())?;
                    Ok(key)
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path),
                Err(e) => Err(format!("cannot keep a key: {e}")),
            }
        }
        Err(e) => Err(format!("has a key that cannot be opened: {e}")),
    }
}

/// Whether `meta` is the effective user's and no bit of `forbidden` is set.
#[cfg(unix)]
fn owned_and_private(meta: &std::fs::Metadata, forbidden: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == nix::unistd::geteuid().as_raw() && meta.mode() & forbidden == 0
}

/// On Windows a file's privacy is its ACL, inherited from the user's
/// profile where the state lives; no sandboxed command of another identity
/// exists there to guard against.
#[cfg(windows)]
fn owned_and_private(_meta: &std::fs::Metadata, _forbidden: u32) -> bool {
    true
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn sealed_files_read_back_and_any_change_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(&dir.path().join("state")).unwrap();
        state.write("a", b"hello").unwrap();
        assert_eq!(state.read("a").as_deref(), Some(&b"hello"[..]));
        // Altered contents, a copy under another name, a foreign key: refused.
        let path = state.dir().join("a");
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(state.read("a"), None);
        state.write("a", b"hello").unwrap();
        std::fs::copy(&path, state.dir().join("b")).unwrap();
        assert_eq!(state.read("b"), None);
        let other = StateDir::open(&dir.path().join("other")).unwrap();
        std::fs::copy(&path, other.dir().join("a")).unwrap();
        assert_eq!(other.read("a"), None);
        // The same directory opened again has the same key.
        assert_eq!(
            StateDir::open(state.dir()).unwrap().read("a").as_deref(),
            Some(&b"hello"[..])
        );
        let mode = std::fs::metadata(state.dir().join(KEY_FILE)).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    /// What `with_verified_file` hands over: the contents through the path
    /// it gives, or `None`.
    fn contents_through(state: &StateDir, name: &str) -> Option<Vec<u8>> {
        state.with_verified_file(name, |path| std::fs::read(path).unwrap())
    }

    #[test]
    fn a_remembered_verification_never_passes_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(&dir.path().join("state")).unwrap();
        let memo = state.dir().join("c.cwasm.verified");
        state.write("c.cwasm", b"compiled").unwrap();
        let sealed = std::fs::read(state.dir().join("c.cwasm")).unwrap();
        // Fresh: verified, not remembered (its change time may share a tick
        // with a write to come).
        assert_eq!(contents_through(&state, "c.cwasm").as_deref(), Some(&sealed[..]));
        assert!(!memo.exists());
        std::thread::sleep(SETTLED + std::time::Duration::from_millis(100));
        assert_eq!(contents_through(&state, "c.cwasm").as_deref(), Some(&sealed[..]));
        assert!(memo.exists(), "a settled file's verification is remembered");
        assert_eq!(contents_through(&state, "c.cwasm").as_deref(), Some(&sealed[..]));
        // Changed in place, same length, modification time put back: the
        // change time moved, so it is hashed again and refused.
        let path = state.dir().join("c.cwasm");
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let mut altered = sealed.clone();
        altered[0] ^= 1;
        std::fs::write(&path, &altered).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(contents_through(&state, "c.cwasm"), None);
        // Swapped for another sealed file: another inode, refused by its tag.
        state.write("d.cwasm", b"other").unwrap();
        std::fs::rename(state.dir().join("d.cwasm"), &path).unwrap();
        assert_eq!(contents_through(&state, "c.cwasm"), None);
        // A memo not sealed by the host is not one.
        state.write("c.cwasm", b"compiled").unwrap();
        std::thread::sleep(SETTLED + std::time::Duration::from_millis(100));
        std::fs::write(&path, &altered).unwrap();
        let forged = Stamp::of(&std::fs::metadata(&path).unwrap()).bytes();
        std::fs::write(&memo, &forged).unwrap();
        assert_eq!(contents_through(&state, "c.cwasm"), None);
    }

    #[test]
    fn a_directory_others_may_write_or_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(StateDir::open(&open).unwrap_err().contains("others may write"));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(StateDir::open(&link).unwrap_err().contains("not a directory"));
        // A planted link at a temporary or key name is never followed.
        let fresh = dir.path().join("fresh");
        std::fs::create_dir(&fresh).unwrap();
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o700)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        std::os::unix::fs::symlink(&victim, fresh.join(KEY_FILE)).unwrap();
        assert!(StateDir::open(&fresh).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    }
}
