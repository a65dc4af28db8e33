//! The Windows platform layer: what the Unix code does with descriptors
//! (`openat` beneath a held directory, `O_NOFOLLOW`, `O_PATH`), done with
//! handles.
//!
//! Two properties of Windows handles carry the design:
//! - A directory opened without `FILE_SHARE_DELETE` cannot be renamed or
//!   removed while the handle is open, by anybody. So a directory the host
//!   holds keeps its path, and a path built from held directories plus one
//!   more name reaches exactly the entry of that name in the last of them —
//!   the guarantee `openat` gives on Unix.
//! - `FILE_FLAG_OPEN_REPARSE_POINT` opens a symbolic link or a junction
//!   itself instead of what it points at; the host then sees the reparse
//!   attribute and refuses it, as `O_NOFOLLOW` refuses a link.
//!
//! Windows has no sandbox (the spec: every call asks unless `auto_run`), so
//! no command of a sandboxed session can race the host here; these opens
//! keep the jail of the code set's tools exact all the same.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
const FILE_SHARE_READ: u32 = 0x1;
const FILE_SHARE_WRITE: u32 = 0x2;
const FILE_SHARE_DELETE: u32 = 0x4;
/// `ERROR_CANT_ACCESS_FILE`, what Windows answers for a reparse point it
/// will not go through: the closest to `ELOOP`.
const ERROR_CANT_ACCESS_FILE: i32 = 1920;
/// `ERROR_DIRECTORY`: "the directory name is invalid", for a file where a
/// directory was needed (`ENOTDIR`).
const ERROR_DIRECTORY: i32 = 267;

/// Whether `error` is the refusal of a reparse point by these opens.
pub fn is_link_refusal(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_CANT_ACCESS_FILE)
}

/// Whether `error` says a name on the way is not a directory.
pub fn is_not_directory(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_DIRECTORY) || error.raw_os_error() == Some(3) // ERROR_PATH_NOT_FOUND
}

/// Whether the file `meta` describes is a symbolic link or a junction.
pub fn is_reparse_point(meta: &std::fs::Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

/// Opens `path` with `options`, the last component never followed: a
/// reparse point there is opened as itself and refused.
pub fn open_no_reparse(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .open(path)?;
    if is_reparse_point(&file.metadata()?) {
        return Err(io::Error::from_raw_os_error(ERROR_CANT_ACCESS_FILE));
    }
    Ok(file)
}

/// Opens the regular file `path` to read, sharing reads only: until the
/// handle closes nobody writes, replaces or removes it.
pub fn open_sharing_reads_only(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .share_mode(FILE_SHARE_READ)
        .open(path)?;
    if is_reparse_point(&file.metadata()?) {
        return Err(io::Error::from_raw_os_error(ERROR_CANT_ACCESS_FILE));
    }
    Ok(file)
}

/// A directory held open so that nobody can rename or remove it, and whose
/// path therefore stays its path while the value lives.
#[derive(Debug)]
pub struct HeldDir {
    path: PathBuf,
    _handle: File,
}

impl HeldDir {
    /// Holds the directory at `path`, which must not itself be a reparse
    /// point.
    pub fn open(path: &Path) -> io::Result<HeldDir> {
        let handle = OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            .open(path)?;
        let attributes = handle.metadata()?.file_attributes();
        if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(io::Error::from_raw_os_error(ERROR_CANT_ACCESS_FILE));
        }
        if attributes & FILE_ATTRIBUTE_DIRECTORY == 0 {
            return Err(io::Error::from_raw_os_error(ERROR_DIRECTORY));
        }
        Ok(HeldDir {
            path: path.to_path_buf(),
            _handle: handle,
        })
    }

    /// The held directory `name` inside this one.
    pub fn child(&self, name: &OsStr) -> io::Result<HeldDir> {
        HeldDir::open(&self.join(name)?)
    }

    /// The path of `name` inside this directory: one plain name only, so the
    /// path reaches an entry of this directory and nothing else.
    pub fn join(&self, name: &OsStr) -> io::Result<PathBuf> {
        let mut parts = Path::new(name).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(_)), None) => Ok(self.path.join(name)),
            _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        }
    }

    /// The directory's path, stable while it is held.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Holds every directory of `relative` (plain names only) below the held
/// `root`, none through a reparse point, and returns the last.
pub fn hold_beneath(root: &HeldDir, relative: &Path) -> io::Result<Vec<HeldDir>> {
    let mut held: Vec<HeldDir> = Vec::new();
    for part in relative.components() {
        let name = match part {
            Component::Normal(name) => name,
            Component::CurDir => continue,
            _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
        };
        let next = held.last().unwrap_or(root).child(name)?;
        held.push(next);
    }
    Ok(held)
}

/// Holds every directory of the absolute `path` from its drive's root down,
/// none a reparse point, and returns the last.
pub fn hold_absolute(path: &Path) -> io::Result<HeldDir> {
    let mut top = PathBuf::new();
    let mut rest = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Prefix(_) | Component::RootDir if rest.as_os_str().is_empty() => top.push(part),
            Component::Normal(name) => rest.push(name),
            _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
        }
    }
    if !path.is_absolute() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let root = HeldDir::open(&top)?;
    Ok(hold_beneath(&root, &rest)?.pop().unwrap_or(root))
}

/// A job object that kills every process in it when its last handle
/// closes: a command's process tree, which dies with the host however the
/// host ends.
#[derive(Debug)]
pub struct Job(std::os::windows::io::OwnedHandle);

impl Job {
    /// A new job, set to kill its processes when it closes.
    pub fn new() -> io::Result<Job> {
        use std::os::windows::io::FromRawHandle;
        use windows_sys::Win32::System::JobObjects::{
            CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
            JobObjectExtendedLimitInformation, SetInformationJobObject,
        };
        // SAFETY: no security attributes and no name; the handle returned is
        // owned from here on.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh handle this function owns.
        let job = Job(unsafe { std::os::windows::io::OwnedHandle::from_raw_handle(raw) });
        // SAFETY: a zeroed limit structure is a valid one (no limits).
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the structure and its size match the information class.
        let set = unsafe {
            SetInformationJobObject(
                raw,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    /// Puts `child` in the job; what it starts from then on joins too.
    pub fn assign(&self, child: &std::process::Child) -> io::Result<()> {
        use std::os::windows::io::AsRawHandle;
        // SAFETY: both handles are open for the duration of the call.
        let assigned = unsafe {
            windows_sys::Win32::System::JobObjects::AssignProcessToJobObject(
                self.0.as_raw_handle(),
                child.as_raw_handle(),
            )
        };
        if assigned == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Kills every process in the job.
    pub fn terminate(&self) {
        use std::os::windows::io::AsRawHandle;
        // SAFETY: the handle is open; exit code 1 for each process.
        unsafe { windows_sys::Win32::System::JobObjects::TerminateJobObject(self.0.as_raw_handle(), 1) };
    }
}
