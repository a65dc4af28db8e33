//! What differs between Unix and Windows in the few file operations many
//! modules share: private directories and files, and opens that never go
//! through a link. Each function has one body per platform; everything
//! Windows needs beyond them lives in [`windows`].

use std::fs::{DirBuilder, File, OpenOptions};
use std::path::Path;

#[cfg(windows)]
pub mod windows;

/// A builder of directories only their owner can enter (0700 on Unix; on
/// Windows a new directory inherits its parent's ACL, which for the
/// user's profile is the user's alone).
pub fn private_dir_builder() -> DirBuilder {
    #[allow(unused_mut)]
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// Opens `path` with `options`, never through a link at its last
/// component (`O_NOFOLLOW`; on Windows a reparse point is refused), a file
/// it creates readable by its owner only (0600 on Unix).
pub fn open_private_no_follow(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path)
    }
    #[cfg(windows)]
    windows::open_no_reparse(options, path)
}

/// Opens `path` to read, never through a link at its last component and
/// never waiting (a FIFO opened on Unix does not block).
pub fn open_to_read_no_follow(path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
    }
    #[cfg(windows)]
    windows::open_no_reparse(OpenOptions::new().read(true), path)
}

/// The user's home directory: `$HOME` when set (Unix, and Git Bash or a
/// Unix-minded user on Windows), else on Windows `%USERPROFILE%`.
pub fn home_dir() -> Option<std::path::PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let home = var("HOME");
    #[cfg(windows)]
    let home = home.or_else(|| var("USERPROFILE"));
    home
}

/// The path whose bytes are `bytes`, as git and the kernel store them: any
/// bytes on Unix; on Windows UTF-8, what does not decode replaced.
pub fn path_from_bytes(bytes: Vec<u8>) -> std::path::PathBuf {
    #[cfg(unix)]
    use std::os::unix::ffi::OsStringExt;
    #[cfg(unix)]
    return std::ffi::OsString::from_vec(bytes).into();
    #[cfg(windows)]
    String::from_utf8_lossy(&bytes).into_owned().into()
}

/// The canonical form of `path`, as `std::fs::canonicalize` makes it, but on
/// Windows without the `\\?\` prefix where the path is a plain drive path
/// (`C:\x`): that is the form users, tools and components write, and the
/// jail compares paths by their text.
pub fn canonicalize(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let canonical = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    if let Some(rest) = canonical.to_str().and_then(|text| text.strip_prefix(r"\\?\"))
        && rest.as_bytes().get(1) == Some(&b':')
        && rest.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
    {
        return Ok(rest.into());
    }
    Ok(canonical)
}

/// `O_PATH` where the system has it (Linux): a descriptor that holds a
/// directory or file in place without the right to read it. Elsewhere a
/// read-only open stands in (it needs the read permission `O_PATH` does not).
#[cfg(target_os = "linux")]
pub const O_PATH: rustix::fs::OFlags = rustix::fs::OFlags::PATH;
/// See the Linux definition.
#[cfg(all(unix, not(target_os = "linux")))]
pub const O_PATH: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY;

/// `AT_NO_AUTOMOUNT` where the system has it (Linux): a `stat` that does
/// not mount an automount point. Elsewhere nothing.
#[cfg(target_os = "linux")]
pub const AT_NO_AUTOMOUNT: rustix::fs::AtFlags = rustix::fs::AtFlags::NO_AUTOMOUNT;
/// See the Linux definition.
#[cfg(all(unix, not(target_os = "linux")))]
pub const AT_NO_AUTOMOUNT: rustix::fs::AtFlags = rustix::fs::AtFlags::empty();

/// A `stat`'s device and inode, as 64-bit numbers on every Unix (macOS's
/// device number is 32 bits, signed).
#[cfg(unix)]
#[allow(clippy::unnecessary_cast, clippy::cast_sign_loss)]
pub fn dev_ino(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// The entries of the open directory `fd`, read from its start: on Linux
/// with `getdents64` itself into `buffer` (no `DIR` to set up; a read error
/// is an error, not the end); elsewhere through the C library's `readdir`.
/// Used as `while let Some(entry) = listing.next()`, each entry with its
/// `file_name()` and `file_type()`.
#[cfg(target_os = "linux")]
pub fn listing<Fd: std::os::fd::AsFd>(fd: Fd, buffer: &mut Vec<u8>) -> rustix::fs::RawDir<'_, Fd> {
    if buffer.capacity() == 0 {
        buffer.reserve(32 << 10);
    }
    rustix::fs::RawDir::new(fd, buffer.spare_capacity_mut())
}

/// See the Linux definition.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn listing<Fd: std::os::fd::AsFd>(fd: Fd, _buffer: &mut Vec<u8>) -> Listing {
    Listing(Some(rustix::fs::Dir::read_from(fd)))
}

/// A directory's entries through `readdir` (Unix but Linux).
#[cfg(all(unix, not(target_os = "linux")))]
pub struct Listing(Option<rustix::io::Result<rustix::fs::Dir>>);

#[cfg(all(unix, not(target_os = "linux")))]
impl Listing {
    /// The next entry; an error once, then the end, where the directory
    /// could not be read.
    pub fn next(&mut self) -> Option<rustix::io::Result<rustix::fs::DirEntry>> {
        match self.0.as_mut()? {
            Ok(dir) => dir.next(),
            Err(_) => self.0.take().and_then(|opened| opened.err()).map(Err),
        }
    }
}
