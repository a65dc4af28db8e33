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
//!   `insufficient-memory`.

use super::{CallState, Stopper};
use std::collections::HashMap;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    ComponentNamedList, Lift, Linker, LinkerInstance, Lower, Resource, ResourceTable, ResourceType,
};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{self as fs_types, ErrorCode, HostDescriptor};
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
            let bytes = listed_bytes(&state.table, &dir);
            if state.listings.total.saturating_add(bytes) > MAX_LISTED_BYTES {
                return Ok((Err(ErrorCode::InsufficientMemory),));
            }
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
/// (nothing is kept); 0 for anything but a directory, which wasmtime-wasi
/// then refuses itself.
fn listed_bytes(table: &ResourceTable, dir: &Resource<Descriptor>) -> usize {
    let Ok(Descriptor::Dir(dir)) = table.get(dir) else {
        return 0;
    };
    let Ok(entries) = cap_primitives::fs::read_base_dir(&dir.dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| LISTED_ENTRY_COST + entry.file_name().len())
        .fold(0, usize::saturating_add)
}
