//! WASI calls held to bounds wasmtime-wasi leaves open. Each replaces one of
//! wasmtime-wasi's functions in the linker and otherwise does what it does:
//!
//! - **Waits end when the call must stop.** `poll` and `pollable.block` wait
//!   inside the host, where no epoch tick reaches, so a component sleeping
//!   for ever (`subscribe-duration(u64::MAX)`, no grant needed) would hold
//!   its thread and instance slot past any time limit and any cancellation.
//!   Here the wait looks every 50 ms at what an epoch tick would, and the
//!   call stops as timed out or cancelled.
//! - **A stream write stays within its permit.** WASI says a `write` past
//!   what `check-write` permitted traps, but wasmtime-wasi's file streams
//!   take any length and write it on a blocking thread that outlives the
//!   call, so a component could queue a crossing's worth per stream and
//!   leave. Here the stream is asked for its permit first (a file stream
//!   allows 64 KiB at a time).
//! - **Directory listings are bounded while held.** wasmtime-wasi reads a
//!   whole directory into memory at `read-directory` and keeps it until the
//!   stream is dropped, so one store holding many streams of a large
//!   directory could hold gigabytes. Here each listing is counted when it is
//!   opened and released when its stream is dropped, against
//!   [`MAX_LISTED_BYTES`] per store; past it, `read-directory` answers
//!   `insufficient-memory`. A write's temporary file (`caps/writes.rs`) is
//!   left out of what a listing reads, as the host's own listings do.
//! - **An open never waits.** wasmtime-wasi's `open-at` opens as asked, and
//!   the open of a FIFO waits for its other end (a device's may wait or
//!   act) in the host, where no epoch tick reaches: a command could
//!   `mkfifo` a name a toolset then opens, and hold its thread past every
//!   time limit. Here the open is non-blocking and keeps only regular files
//!   and directories ([`open_at`]). `set-times-at` through symlinks opened
//!   its target too (to write, then to read); here it opens it `O_PATH`
//!   ([`set_times_following`]). So every file a component holds through
//!   WASI is a regular file or a directory, which is what keeps the
//!   blocking stream calls (`blocking-read`, `blocking-flush`) that are not
//!   replaced here from waiting on a peer.

use super::{CallState, Stopper};
use crate::scratch::is_write_temporary;
use cap_primitives::fs::FollowSymlinks;
#[cfg(unix)]
use cap_primitives::fs::OpenOptionsExt;
use std::collections::HashMap;
use std::path::Path;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    ComponentNamedList, Lift, Linker, LinkerInstance, Lower, Resource, ResourceTable, ResourceType,
};
use wasmtime_wasi::OpenMode;
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    self as fs_types, DescriptorFlags, ErrorCode, HostDescriptor, HostDirectoryEntryStream, NewTimestamp, OpenFlags,
    PathFlags,
};
use wasmtime_wasi::p2::bindings::sync::io::streams::{Host as StreamsHost, StreamError};
use wasmtime_wasi::p2::{DynOutputStream, DynPollable, ReaddirIterator, StreamError as HostStreamError};
use wasmtime_wasi_io::bindings::wasi::io::poll::{Host as PollHost, HostPollable};

/// The WASI 0.2 version wasmtime-wasi links (its `src/p2/wit/deps`); a
/// component importing any 0.2 version is resolved to it. [`add_to_linker`]
/// fails if an interface is not there under this version.
const VERSION: &str = "0.2.12";

/// Bytes of directory listings one store may hold at once through WASI
/// `read-directory` streams, each entry counting [`LISTED_ENTRY_COST`]
/// besides its name.
pub const MAX_LISTED_BYTES: usize = 64 << 20;

/// What one listed entry costs besides its name (its `String` and type).
const LISTED_ENTRY_COST: usize = 64;

/// Whether wasmtime-wasi does a call's file work on the calling thread (set
/// on every context the host builds): the call is synchronous anyway, and a
/// hop to a blocking pool per read would cost more than the read.
pub const BLOCKING_CURRENT_THREAD: bool = true;

/// A `write` past what `check-write` permitted.
#[derive(Debug)]
pub struct BeyondPermit;

impl std::fmt::Display for BeyondPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a stream write past what check-write permitted")
    }
}

impl std::error::Error for BeyondPermit {}

/// The listings a store holds through `read-directory` streams.
#[derive(Debug, Default)]
pub struct Listings {
    /// Bytes held, by stream.
    held: HashMap<u32, usize>,
    /// Their sum, against [`MAX_LISTED_BYTES`].
    total: usize,
}

/// Replaces wasmtime-wasi's functions named in the module's documentation.
/// Call after wasmtime-wasi's own `add_to_linker_sync`.
pub fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    replace(
        linker,
        "wasi:io/poll",
        "poll",
        |mut store, (pollables,): (Vec<Resource<DynPollable>>,)| {
            let stopper = store.data().stop.clone();
            let table = &mut store.data_mut().table;
            Ok((until(&stopper, PollHost::poll(table, pollables))??,))
        },
    )?;
    replace(
        linker,
        "wasi:io/poll",
        "[method]pollable.block",
        |mut store, (pollable,): (Resource<DynPollable>,)| {
            let stopper = store.data().stop.clone();
            let table = &mut store.data_mut().table;
            until(&stopper, HostPollable::block(table, pollable))??;
            Ok(())
        },
    )?;
    replace(
        linker,
        "wasi:io/streams",
        "[method]output-stream.write",
        |mut store, (stream, contents): (Resource<DynOutputStream>, Vec<u8>)| {
            let table = &mut store.data_mut().table;
            let written: Result<(), StreamError> = match write_within_permit(table, &stream, contents) {
                Ok(()) => Ok(()),
                Err(err) => Err(table.convert_stream_error(err)?),
            };
            Ok((written,))
        },
    )?;
    replace(
        linker,
        "wasi:filesystem/types",
        "[method]descriptor.open-at",
        |mut store,
         (dir, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            let table = &mut store.data_mut().table;
            let opened = match table.get(&dir)? {
                Descriptor::Dir(dir) => open_at(dir, path_flags, &path, open_flags, flags),
                Descriptor::File(_) => Err(ErrorCode::NotDirectory),
            };
            let answer = match opened {
                Ok(descriptor) => Ok(table.push(descriptor)?),
                Err(code) => Err(code),
            };
            Ok((answer,))
        },
    )?;
    replace(
        linker,
        "wasi:filesystem/types",
        "[method]descriptor.set-times-at",
        |mut store,
         (dir, path_flags, path, atime, mtime): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            let state = store.data_mut();
            if !path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
                // wasmtime-wasi's own: `utimensat` in the parent, which opens
                // nothing.
                let mut view = state.filesystem();
                let answer = match HostDescriptor::set_times_at(&mut view, dir, path_flags, path, atime, mtime) {
                    Ok(()) => Ok(()),
                    Err(err) => Err(fs_types::Host::convert_error_code(&mut view, err)?),
                };
                return Ok((answer,));
            }
            let answer = match state.table.get(&dir)? {
                Descriptor::Dir(dir) => set_times_following(dir, &path, atime, mtime),
                Descriptor::File(_) => Err(ErrorCode::NotDirectory),
            };
            Ok((answer,))
        },
    )?;
    let released = |mut store: StoreContextMut<'_, CallState>, rep: u32| {
        let state = store.data_mut();
        if let Some(bytes) = state.listings.held.remove(&rep) {
            state.listings.total -= bytes;
        }
        state.table.delete(Resource::<ReaddirIterator>::new_own(rep))?;
        Ok(())
    };
    redefine(linker, "wasi:filesystem/types", "directory-entry-stream", |instance| {
        instance.resource(
            "directory-entry-stream",
            ResourceType::host::<ReaddirIterator>(),
            released,
        )
    })?;
    replace(
        linker,
        "wasi:filesystem/types",
        "[method]descriptor.read-directory",
        |mut store, (dir,): (Resource<Descriptor>,)| {
            let state = store.data_mut();
            let room = MAX_LISTED_BYTES.saturating_sub(state.listings.total);
            let Some(bytes) = listed_bytes(&state.table, &dir, room) else {
                return Ok((Err(ErrorCode::InsufficientMemory),));
            };
            let mut view = state.filesystem();
            let answer = match HostDescriptor::read_directory(&mut view, dir) {
                Ok(stream) => Ok(stream),
                Err(err) => Err(fs_types::Host::convert_error_code(&mut view, err)?),
            };
            if let Ok(stream) = &answer {
                state.listings.held.insert(stream.rep(), bytes);
                state.listings.total += bytes;
            }
            Ok((answer,))
        },
    )?;
    replace(
        linker,
        "wasi:filesystem/types",
        "[method]directory-entry-stream.read-directory-entry",
        |mut store, (stream,): (Resource<ReaddirIterator>,)| {
            let mut view = store.data_mut().filesystem();
            loop {
                let read =
                    HostDirectoryEntryStream::read_directory_entry(&mut view, Resource::new_borrow(stream.rep()));
                let answer = match read {
                    Ok(Some(entry))
                        if entry.type_ == fs_types::DescriptorType::RegularFile
                            && is_write_temporary(entry.name.as_bytes()) =>
                    {
                        continue;
                    }
                    Ok(entry) => Ok(entry),
                    Err(err) => Err(fs_types::Host::convert_error_code(&mut view, err)?),
                };
                return Ok((answer,));
            }
        },
    )
}

/// `interface` at [`VERSION`].
fn versioned(interface: &str) -> String {
    format!("{interface}@{VERSION}")
}

/// Replaces the function `name` of `interface` (see [`redefine`]).
fn replace<Params, Return>(
    linker: &mut Linker<CallState>,
    interface: &str,
    name: &str,
    f: impl Fn(StoreContextMut<'_, CallState>, Params) -> wasmtime::Result<Return> + Send + Sync + Clone + 'static,
) -> wasmtime::Result<()>
where
    Params: ComponentNamedList + Lift + 'static,
    Return: ComponentNamedList + Lower + 'static,
{
    redefine(linker, interface, name, |instance| instance.func_wrap(name, f.clone()))
}

/// Redefines `name` of `interface` with `define`; `name` must already be
/// defined there: one that moved (another WASI version) would otherwise
/// leave the original in place beside an unused replacement. Defining it
/// without shadowing first must fail, which proves it was there.
fn redefine(
    linker: &mut Linker<CallState>,
    interface: &str,
    name: &str,
    define: impl Fn(&mut LinkerInstance<'_, CallState>) -> wasmtime::Result<()>,
) -> wasmtime::Result<()> {
    let interface = versioned(interface);
    if define(&mut linker.instance(&interface)?).is_ok() {
        wasmtime::bail!("wasmtime-wasi no longer defines {interface} {name}: update caps/wasi_bounds.rs");
    }
    linker.allow_shadowing(true);
    let redefined = define(&mut linker.instance(&interface)?);
    linker.allow_shadowing(false);
    redefined
}

/// Waits for `future` on wasmtime-wasi's runtime while the call may go on:
/// it stops, timed out or cancelled, as it would at an epoch tick.
fn until<T>(stopper: &Stopper, future: impl Future<Output = T>) -> wasmtime::Result<T> {
    // Timers are made inside the runtime, whose time driver they need.
    wasmtime_wasi::runtime::in_tokio(async move {
        let mut future = std::pin::pin!(future);
        loop {
            if let Some(stop) = stopper.reason() {
                return Err(stop);
            }
            if let Ok(done) = tokio::time::timeout(Stopper::EVERY, future.as_mut()).await {
                return Ok(done);
            }
        }
    })
}

/// wasmtime-wasi's `open-at` (its `Dir::open_at`, same flags, checks and
/// errors), except that the open cannot block: a FIFO opens only once its
/// other end does, and a device's open may wait or act, in the host where no
/// epoch tick reaches. The file is opened non-blocking, resolved beneath
/// `dir` as wasmtime-wasi resolves it, and kept only if it is a regular file
/// or a directory: anything else is closed at once and refused as
/// `unsupported`, checked on the open file so a swap after a check cannot
/// slip one in.
fn open_at(
    dir: &Dir,
    path_flags: PathFlags,
    path: &str,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
) -> Result<Descriptor, ErrorCode> {
    let mut options = cap_primitives::fs::OpenOptions::new();
    let mut mode = OpenMode::empty();
    if open_flags.contains(OpenFlags::CREATE) {
        if open_flags.contains(OpenFlags::EXCLUSIVE) {
            options.create_new(true);
        } else {
            options.create(true);
        }
        options.write(true);
        mode |= OpenMode::WRITE;
    }
    if open_flags.contains(OpenFlags::TRUNCATE) {
        options.truncate(true).write(true);
        mode |= OpenMode::WRITE;
    }
    if flags.contains(DescriptorFlags::WRITE) {
        options.write(true);
        mode |= OpenMode::WRITE;
    }
    // Opened for reading unless only for writing: the OS then lets the
    // guest open anything readable, and its perms refuse what they must.
    if flags.contains(DescriptorFlags::READ) || !flags.contains(DescriptorFlags::WRITE) {
        options.read(true);
        mode |= OpenMode::READ;
    }
    // Windows opens a directory only with `FILE_FLAG_BACKUP_SEMANTICS`,
    // which cap-primitives sets for an open that may be of one (as
    // wasmtime-wasi's own `open-at` asks).
    #[cfg(windows)]
    options._cap_fs_ext_maybe_dir(true);
    // cap-primitives' public name for `follow` (the one cap-fs-ext uses).
    options._cap_fs_ext_follow(if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    });
    let syncs = DescriptorFlags::FILE_INTEGRITY_SYNC
        | DescriptorFlags::DATA_INTEGRITY_SYNC
        | DescriptorFlags::REQUESTED_WRITE_SYNC;
    if flags.intersects(syncs) {
        return Err(ErrorCode::Unsupported);
    }
    let not_for_a_directory = OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE;
    if open_flags.contains(OpenFlags::DIRECTORY) && open_flags.intersects(not_for_a_directory) {
        return Err(ErrorCode::Invalid);
    }
    if dir.perms.write_not_permitted() && mode.contains(OpenMode::WRITE) {
        return Err(ErrorCode::NotPermitted);
    }
    #[cfg(unix)]
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = cap_primitives::fs::open(&dir.dir, Path::new(path), &options).map_err(|e| match e.raw_os_error() {
        // What a non-blocking open answers for a FIFO without a reader
        // opened for writing, and for a socket.
        #[cfg(unix)]
        Some(libc::ENXIO) => ErrorCode::Unsupported,
        _ => code_of(&e),
    })?;
    let kind = file.metadata().map_err(|e| code_of(&e))?.file_type();
    if kind.is_dir() {
        return Ok(Descriptor::Dir(Dir::new(
            file,
            dir.perms,
            mode,
            BLOCKING_CURRENT_THREAD,
        )));
    }
    if open_flags.contains(OpenFlags::DIRECTORY) {
        return Err(ErrorCode::NotDirectory);
    }
    if !kind.is_file() {
        return Err(ErrorCode::Unsupported);
    }
    // Blocking again, as wasmtime-wasi's reads and streams expect (a regular
    // file never waits either way).
    #[cfg(unix)]
    let status = rustix::fs::fcntl_getfl(&file).map_err(|e| code_of(&e.into()))?;
    #[cfg(unix)]
    rustix::fs::fcntl_setfl(&file, status - rustix::fs::OFlags::NONBLOCK).map_err(|e| code_of(&e.into()))?;
    Ok(Descriptor::File(File::new(
        file,
        dir.perms,
        mode,
        BLOCKING_CURRENT_THREAD,
    )))
}

/// wasmtime-wasi's `set-times-at` through symlinks (same checks, times and
/// errors), except that the target is never opened to read or write: that
/// open (wasmtime-wasi tries write, then read) waits on a FIFO, or on a file
/// a command holds a lease on, where no epoch tick reaches. Here the target
/// is opened `O_PATH` beneath `dir`, which never waits and needs no access,
/// and its times are set through `/proc/self/fd`, as cap-primitives does
/// when neither open is allowed; the kernel checks ownership as `futimens`
/// would.
#[cfg(not(target_os = "linux"))]
fn set_times_following(dir: &Dir, _: &str, _: NewTimestamp, _: NewTimestamp) -> Result<(), ErrorCode> {
    // Every preopen is read-only; a writable one would need its own
    // no-waiting open here before this could be allowed.
    if dir.perms.write_not_permitted() {
        return Err(ErrorCode::NotPermitted);
    }
    Err(ErrorCode::Unsupported)
}

/// See the variant for other systems: times set through the target opened
/// `O_PATH` (Linux's).
#[cfg(target_os = "linux")]
fn set_times_following(dir: &Dir, path: &str, atime: NewTimestamp, mtime: NewTimestamp) -> Result<(), ErrorCode> {
    use std::os::fd::AsRawFd;
    let times = rustix::fs::Timestamps {
        last_access: timespec(atime)?,
        last_modification: timespec(mtime)?,
    };
    if dir.perms.write_not_permitted() {
        return Err(ErrorCode::NotPermitted);
    }
    let mut options = cap_primitives::fs::OpenOptions::new();
    options
        .read(true)
        ._cap_fs_ext_follow(FollowSymlinks::Yes)
        // Nothing else beside O_PATH: openat2 refuses other flags with it.
        .custom_flags(libc::O_PATH);
    let target = cap_primitives::fs::open(&dir.dir, Path::new(path), &options).map_err(|e| code_of(&e))?;
    let through = format!("/proc/self/fd/{}", target.as_raw_fd());
    rustix::fs::utimensat(rustix::fs::CWD, through.as_str(), &times, rustix::fs::AtFlags::empty())
        .map_err(|e| code_of(&e.into()))
}

/// A new timestamp as `utimensat` takes it; `now` is the host's clock read
/// here, and a time past what the kernel holds is `overflow`, as
/// wasmtime-wasi answers.
#[cfg(target_os = "linux")]
fn timespec(time: NewTimestamp) -> Result<rustix::fs::Timespec, ErrorCode> {
    let since_epoch = match time {
        NewTimestamp::NoChange => {
            return Ok(rustix::fs::Timespec {
                tv_sec: 0,
                tv_nsec: rustix::fs::UTIME_OMIT,
            });
        }
        NewTimestamp::Now => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| ErrorCode::Overflow)?,
        NewTimestamp::Timestamp(at) => {
            let seconds = at.seconds.checked_add(u64::from(at.nanoseconds / 1_000_000_000));
            std::time::Duration::new(seconds.ok_or(ErrorCode::Overflow)?, at.nanoseconds % 1_000_000_000)
        }
    };
    Ok(rustix::fs::Timespec {
        tv_sec: i64::try_from(since_epoch.as_secs()).map_err(|_| ErrorCode::Overflow)?,
        tv_nsec: since_epoch.subsec_nanos().into(),
    })
}

/// The WASI error for `err`, as wasmtime-wasi maps it (its mapping is
/// defined on the async bindings' type).
fn code_of(err: &std::io::Error) -> ErrorCode {
    wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode::from(err).into()
}

/// Writes `contents` if the stream permits that much now.
fn write_within_permit(
    table: &mut ResourceTable,
    stream: &Resource<DynOutputStream>,
    contents: Vec<u8>,
) -> Result<(), HostStreamError> {
    let stream = table.get_mut(stream)?;
    if contents.len() > stream.check_write()? {
        return Err(HostStreamError::Trap(BeyondPermit.into()));
    }
    stream.write(contents.into())
}

/// What listing the directory `dir` will hold, counted by reading its names
/// (nothing is kept), or `None` past `room` bytes: the count stops there, so
/// a directory of millions of names costs no more reading than `room`
/// allows. 0 for anything but a directory, which wasmtime-wasi then refuses
/// itself.
fn listed_bytes(table: &ResourceTable, dir: &Resource<Descriptor>, room: usize) -> Option<usize> {
    let Ok(Descriptor::Dir(dir)) = table.get(dir) else {
        return Some(0);
    };
    let Ok(entries) = cap_primitives::fs::read_base_dir(&dir.dir) else {
        return Some(0);
    };
    let mut bytes = 0usize;
    for entry in entries.filter_map(Result::ok) {
        bytes = bytes.saturating_add(LISTED_ENTRY_COST + entry.file_name().len());
        if bytes > room {
            return None;
        }
    }
    Some(bytes)
}
