//! Host capabilities a component can import, and the one place that decides
//! whether it may.
//!
//! A component's imports are its requested capabilities. [`requested`] reads
//! them; [`check_grants`] refuses a component that asks for more than its
//! config grants — before it is ever instantiated. Each capability's host side
//! is one module: `fs` (WASI preopens of the project root, whole-file reads of `iota:toolset/files`),
//! `writes` (the one file an approved call may change, held open), `ui`, `session`,
//! `process`, `workers`; `wasi_bounds` holds a few of WASI's calls to bounds
//! wasmtime-wasi leaves open.

pub mod fs;
pub mod process;
pub mod session;
pub mod ui;
pub mod wasi_bounds;
pub mod workers;
pub mod writes;

use crate::capability::Capability;
use crate::session::Session;
use std::collections::BTreeSet;
use std::sync::Arc;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// What a store holds for one call.
pub struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) set: String,
    pub(crate) session: Arc<Session>,
    /// The user, with the time they take to answer kept apart.
    pub(crate) ui: Arc<ui::Timed>,
    /// The sandbox runner behind `process`, when granted.
    pub(crate) process: Option<Arc<dyn process::CommandRunner>>,
    /// The preopens `files` reads through (none without access).
    pub(crate) files: fs::Files,
    /// Whether the component asked the user anything in this call (a
    /// description given after a question is never remembered).
    pub(crate) asked: bool,
    /// This call's tasks, or why it cannot have any.
    pub(crate) workers: Result<workers::Workers, &'static str>,
    /// When the call must stop: cancelled, or at its deadline.
    pub(crate) stop: Stopper,
    /// The directory listings its WASI `read-directory` streams hold.
    pub(crate) listings: wasi_bounds::Listings,
    /// The file the call may change, decided before it ran.
    pub(crate) write: writes::CallWrite,
    /// The session's warm tree, looked up once per instance (listings are
    /// the walk's hot path).
    pub(crate) warm: std::cell::OnceCell<Arc<fs::WarmTree>>,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl crate::wit::iota::toolset::types::Host for CallState {}

/// Whether a call must stop: cancelled (its session's calls, or a task's
/// call no longer waiting) or out of time. Checked at every epoch tick, and
/// every [`Stopper::EVERY`] while the call waits in the host (a copy, apart
/// from the store the wait borrows).
#[derive(Clone)]
pub(crate) struct Stopper {
    session: Arc<Session>,
    /// The session's cancellation count when the call began: another count
    /// means its calls were cancelled.
    cancellations_at_start: u64,
    /// For a task: set when its call no longer waits for it.
    abandoned: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// For a tool call: its own cancellation.
    cancel: Option<Arc<crate::session::CallCancel>>,
    /// When the call's time runs out: a command it runs (`process`) is
    /// killed then too, however long a timeout it asked for, and a WASI
    /// wait ends. Moved on by the time the user takes to answer a question.
    pub(crate) deadline: std::time::Instant,
}

impl Stopper {
    /// A call of `session` that began now, until `deadline`; for a task,
    /// also until `abandoned` is set; for a tool call, until `cancel`.
    pub(crate) fn new(
        session: &Arc<Session>,
        deadline: std::time::Instant,
        abandoned: Option<Arc<std::sync::atomic::AtomicBool>>,
        cancel: Option<Arc<crate::session::CallCancel>>,
    ) -> Stopper {
        Stopper {
            session: session.clone(),
            cancellations_at_start: session.cancellations(),
            abandoned,
            cancel,
            deadline,
        }
    }

    /// A tool call's own cancellation (none for a task or a description).
    pub(crate) fn cancel(&self) -> Option<&Arc<crate::session::CallCancel>> {
        self.cancel.as_ref()
    }

    /// How often a wait in the host looks again.
    pub(crate) const EVERY: std::time::Duration = std::time::Duration::from_millis(50);

    /// Why the call must stop now, if it must.
    pub(crate) fn reason(&self) -> Option<wasmtime::Error> {
        let abandoned = self
            .abandoned
            .as_ref()
            .is_some_and(|a| a.load(std::sync::atomic::Ordering::Relaxed));
        let cancelled = self.cancel.as_ref().is_some_and(|c| c.is_cancelled());
        if abandoned || cancelled || self.session.cancellations() != self.cancellations_at_start {
            return Some(Cancelled.into());
        }
        (std::time::Instant::now() >= self.deadline).then(|| wasmtime::Trap::Interrupt.into())
    }
}

/// A call stopped because it was cancelled.
#[derive(Debug)]
pub(crate) struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Caps a store's linear memory; remembers whether the cap was hit so the
/// error names the limit rather than a bare trap, and how much the store's
/// memories hold, so a crossing is held to the room left
/// ([`MemoryLimiter::crossing_room`]).
pub struct MemoryLimiter {
    pub(crate) max: usize,
    pub(crate) hit: bool,
    /// Bytes the store's linear memories have grown to.
    pub(crate) used: usize,
}

impl MemoryLimiter {
    /// A limiter of `max` bytes, nothing used yet.
    pub(crate) fn new(max: usize) -> MemoryLimiter {
        MemoryLimiter {
            max,
            hit: false,
            used: 0,
        }
    }

    /// What one call into the host may copy out of the component: the room
    /// its memory limit leaves beside what its memory holds now (at least
    /// [`MIN_CROSSING`], at most `cap`). A component's data is then in its
    /// memory or in the host's copy of one crossing, never both past the
    /// limit: the host holds at most the limit, plus its base, for it.
    pub(crate) fn crossing_room(&self, cap: usize) -> usize {
        self.max.saturating_sub(self.used).clamp(MIN_CROSSING.min(cap), cap)
    }
}

/// What a crossing may copy even when the component's memory is at its limit:
/// a call with a path or two must still work.
pub const MIN_CROSSING: usize = 1 << 20;

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.max {
            self.hit = true;
            wasmtime::bail!("memory limit reached");
        }
        self.used = self.used.saturating_add(desired.saturating_sub(current));
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// Bytes a component may write to its stdout or stderr in one call.
pub const STDIO_CAP: usize = 1 << 20;

/// The linker every toolset is instantiated with: WASI preview 2 plus the
/// iota interfaces. Linking is not granting: [`check_grants`] has already
/// refused any component whose imports exceed its grants.
///
/// Built once per engine and shared by every set (defining a few hundred
/// functions takes a few hundred microseconds of every start otherwise).
pub fn linker(engine: &wasmtime::Engine) -> anyhow::Result<Arc<Linker<CallState>>> {
    type Built = Vec<(wasmtime::EngineWeak, Arc<Linker<CallState>>)>;
    static LINKERS: std::sync::Mutex<Built> = std::sync::Mutex::new(Vec::new());
    // Held while building, so a second caller waits for the first's linker.
    let mut built = LINKERS.lock().unwrap_or_else(|e| e.into_inner());
    built.retain(|(weak, _)| weak.upgrade().is_some());
    if let Some((_, linker)) = built
        .iter()
        .find(|(weak, _)| weak.upgrade().is_some_and(|e| wasmtime::Engine::same(&e, engine)))
    {
        return Ok(linker.clone());
    }
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    wasi_bounds::add_to_linker(&mut linker)?;
    crate::wit::ToolsetHost::add_to_linker::<_, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)?;
    let linker = Arc::new(linker);
    built.push((engine.weak(), linker.clone()));
    Ok(linker)
}

/// Builds the engine's linker and starts wasmtime-wasi's runtime on another
/// thread, so a start that is about to call a component finds both ready.
#[cfg(feature = "cli")]
pub fn warm_up(engine: &wasmtime::Engine) {
    let engine = engine.clone();
    let _ = std::thread::Builder::new().name("iota-warm-up".into()).spawn(move || {
        let _ = linker(&engine);
        // Synchronous WASI calls run on this runtime; it starts threads.
        wasmtime_wasi::runtime::in_tokio(async {});
    });
}

/// One import of a component, read as a capability request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Import {
    /// Always available: WASI clocks, random, I/O streams, cli stdio, and
    /// the shared `iota:toolset/types`.
    Baseline(String),
    /// A grantable capability.
    Capability(Capability, String),
    /// Linked but inert: `wasi:sockets`, which language runtimes import
    /// whether or not they network (CPython's socket module). Every socket
    /// operation fails: no TCP, no UDP, no name lookup, no address allowed.
    Disabled(String),
    /// Something no toolset may have (sockets, HTTP, unknown interfaces).
    Forbidden(String),
}

impl Import {
    /// The import's full name, e.g. `wasi:cli/stdout@0.2.6`.
    pub fn name(&self) -> &str {
        match self {
            Import::Baseline(n) | Import::Capability(_, n) | Import::Forbidden(n) | Import::Disabled(n) => n,
        }
    }
}

/// Reads a component's imports.
pub fn imports(engine: &wasmtime::Engine, component: &Component) -> Vec<Import> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| classify(name))
        .collect()
}

/// Reads a component's imports from its bytes alone: nothing compiled, no
/// instance made (what `pull` reports of a component before, or without,
/// trusting it). Only the outer component's imports, not those of the
/// modules and components nested in it.
#[cfg(feature = "cli")]
pub fn parsed_imports(wasm: &[u8]) -> Result<Vec<Import>, String> {
    use wasmparser::{Encoding, Parser, Payload};
    let mut depth = 0usize;
    let mut imports = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| format!("not a component: {e}"))? {
            Payload::Version {
                encoding: Encoding::Module,
                ..
            } if depth == 0 => return Err("a core module, not a component".to_string()),
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.map_err(|e| format!("not a component: {e}"))?;
                    imports.push(classify(import.name.name));
                }
            }
            _ => {}
        }
    }
    Ok(imports)
}

/// Reads import names remembered from an earlier load.
pub fn classify_all(names: &[String]) -> Vec<Import> {
    names.iter().map(|name| classify(name)).collect()
}

fn classify(name: &str) -> Import {
    let interface = name.split('@').next().unwrap_or(name);
    let owned = name.to_string();
    if let Some(capability) = Capability::of_import(interface) {
        return Import::Capability(capability, owned);
    }
    match interface {
        "iota:toolset/types" => Import::Baseline(owned),
        i if ["wasi:io/", "wasi:clocks/", "wasi:random/", "wasi:cli/"]
            .iter()
            .any(|p| i.starts_with(p)) =>
        {
            Import::Baseline(owned)
        }
        i if i.starts_with("wasi:sockets/") => Import::Disabled(owned),
        _ => Import::Forbidden(owned),
    }
}

/// The capabilities a component asks for.
pub fn requested(imports: &[Import]) -> BTreeSet<Capability> {
    imports
        .iter()
        .filter_map(|i| match i {
            Import::Capability(c, _) => Some(*c),
            _ => None,
        })
        .collect()
}

/// The single yes-or-no for a component: every import must be baseline or
/// granted. The error names the toolset, the import, and how to grant it.
pub fn check_grants(set: &str, imports: &[Import], granted: &BTreeSet<Capability>) -> Result<(), String> {
    for import in imports {
        match import {
            Import::Baseline(_) | Import::Disabled(_) => {}
            Import::Forbidden(name) => {
                return Err(format!(
                    "toolset {set:?} imports {name}, which iota-host never provides to a toolset"
                ));
            }
            Import::Capability(cap, name) if !granted.contains(cap) => {
                return Err(format!(
                    "toolset {set:?} imports {name} ({}), which its config does not grant: add it with `toolsets: {{ {set}: {{ path: ..., grant: [{}] }} }}`",
                    cap.meaning(),
                    cap.word()
                ));
            }
            Import::Capability(..) => {}
        }
    }
    Ok(())
}

/// Turns off everything `wasi:sockets` could do: no TCP or UDP sockets, no
/// name lookup, and (wasmtime's default) no address passes the check.
pub fn disable_network(builder: &mut wasmtime_wasi::WasiCtxBuilder) {
    builder.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    builder.socket_addr_check(|_, _| Box::pin(async { false }));
}

/// A bounded pipe for a component's stdout or stderr.
pub fn stdio_pipe() -> MemoryOutputPipe {
    MemoryOutputPipe::new(STDIO_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_classified() {
        assert_eq!(
            classify("wasi:filesystem/types@0.2.6"),
            Import::Capability(Capability::FsRead, "wasi:filesystem/types@0.2.6".into())
        );
        assert!(matches!(classify("wasi:sockets/tcp@0.2.6"), Import::Disabled(_)));
        assert!(matches!(
            classify("wasi:http/outgoing-handler@0.2.6"),
            Import::Forbidden(_)
        ));
        assert!(matches!(classify("wasi:cli/stderr@0.2.6"), Import::Baseline(_)));
        assert!(matches!(
            classify("iota:toolset/process@0.1.0"),
            Import::Capability(Capability::Process, _)
        ));
        assert!(matches!(
            classify("iota:toolset/files@0.1.0"),
            Import::Capability(Capability::FsRead, _)
        ));
        assert!(matches!(
            classify("iota:toolset/workers@0.1.0"),
            Import::Capability(Capability::Parallel, _)
        ));
    }

    #[test]
    fn ungranted_imports_are_refused_by_name() {
        let imports = vec![classify("iota:toolset/process@0.1.0")];
        let granted = BTreeSet::from([Capability::FsRead, Capability::Session]);
        let err = check_grants("jq", &imports, &granted).unwrap_err();
        assert!(err.starts_with("toolset \"jq\" imports iota:toolset/process@0.1.0 (run commands in the shell sandbox), which its config does not grant"), "{err}");
        assert!(err.contains("grant: [process]"));
        let granted = BTreeSet::from([Capability::Process]);
        assert!(check_grants("jq", &imports, &granted).is_ok());
        let http = vec![classify("wasi:http/outgoing-handler@0.2.6")];
        assert!(
            check_grants("jq", &http, &granted)
                .unwrap_err()
                .contains("never provides")
        );
        let sockets = vec![classify("wasi:sockets/tcp@0.2.6")];
        assert!(
            check_grants("jq", &sockets, &granted).is_ok(),
            "linked, and disabled at run time"
        );
    }
}
