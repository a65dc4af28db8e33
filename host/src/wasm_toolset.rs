//! A toolset that is a WebAssembly component: checked against its grants,
//! pre-instantiated once (at load, or at its first call when its description
//! was remembered), then a fresh store and instance per call, so calls are
//! isolated and parallel-safe and all state lives in the host.

use crate::admission::{Slot, SlotKind};
use crate::capability::Capability;
use crate::caps::fs::{self, FsAccess};
use crate::caps::process::CommandRunner;
use crate::caps::ui::Ui;
use crate::caps::workers::{NewWorker, Workers};
use crate::caps::writes::CallWrite;
use crate::caps::{self, CallState, Cancelled, MemoryLimiter};
use crate::config::Limits;
use crate::describe_cache;
use crate::description::{self, Tool};
use crate::engine::Engine;
use crate::project::ProjectRoot;
use crate::session::{CallCancel, Session, StateFull};
use crate::toolset::{ApprovalRule, Arguments, CallPlan, Cleared, Failure, Ran, Resolved, ToolResult, Toolset};
use crate::wit::ToolsetHostPre;
use crate::wit::iota::toolset::types::Context;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;
use wasmtime::{Store, Trap};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

/// Why a toolset could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The component is unusable (not a component, ungranted imports, a
    /// crash while describing itself): the load fails.
    Fatal(String),
    /// The toolset refused its configuration: a startup warning, the set is left out.
    Config(String),
}

/// A loaded Wasm toolset.
pub struct WasmToolset {
    /// This set, once it is shared ([`WasmToolset::into_arc`]): what a call's
    /// worker threads run.
    me: Weak<WasmToolset>,
    name: String,
    /// The component pre-instantiated, made on first use when the
    /// description was remembered ([`crate::describe_cache`]).
    pre: OnceLock<Result<ToolsetHostPre<CallState>, String>>,
    /// The component's bytes until `pre` is made.
    wasm: Mutex<Option<Cow<'static, [u8]>>>,
    digest: String,
    engine: Engine,
    root: Arc<ProjectRoot>,
    granted: BTreeSet<Capability>,
    requested: BTreeSet<Capability>,
    limits: Limits,
    config: String,
    tools: Vec<Tool>,
    process: Option<Arc<dyn CommandRunner>>,
    read_dirs: Vec<PathBuf>,
}

/// Everything a Wasm toolset is loaded with.
pub struct LoadOptions {
    /// Its name under `tools:`.
    pub name: String,
    /// The component.
    pub wasm: Cow<'static, [u8]>,
    /// What its config grants.
    pub granted: BTreeSet<Capability>,
    /// Its calls' limits.
    pub limits: Limits,
    /// The project root, pinned (preopened at its own path).
    pub root: Arc<ProjectRoot>,
    /// Its configuration value, as JSON.
    pub config: serde_json::Value,
    /// Directories beyond the root it may read (preopened read-only).
    pub read_dirs: Vec<PathBuf>,
    /// The runner behind `process`; used only when it is granted.
    pub process: Option<Arc<dyn CommandRunner>>,
}

impl WasmToolset {
    /// Learns what the component imports and offers for its configuration
    /// in a session whose questions go to `ui` (so a set like `ask` can offer
    /// nothing where nobody can answer), and checks the imports against the
    /// grants. Everything a call will see — read directories, the process
    /// runner — is in `options` before the component describes itself, and
    /// in the remembered description's key. A description remembered from an
    /// earlier run is used as is and the component is compiled (or loaded)
    /// and pre-instantiated on its first call; otherwise that happens now.
    pub fn load(engine: &Engine, options: LoadOptions, ui: &Arc<dyn Ui>) -> Result<WasmToolset, LoadError> {
        let LoadOptions {
            name,
            wasm,
            granted,
            limits,
            root,
            config,
            read_dirs,
            process,
        } = options;
        let name = name.as_str();
        let mut toolset = WasmToolset {
            me: Weak::new(),
            name: name.to_string(),
            pre: OnceLock::new(),
            digest: crate::engine::digest(&wasm),
            wasm: Mutex::new(Some(wasm)),
            engine: engine.clone(),
            root,
            requested: BTreeSet::new(),
            process: process.filter(|_| granted.contains(&Capability::Process)),
            granted,
            limits,
            config: config.to_string(),
            tools: Vec::new(),
            read_dirs,
        };
        let remembered = engine.state().map(|state| {
            (
                state,
                describe_cache::name(&toolset.digest, &toolset.context(), ui.interactive()),
            )
        });
        if let Some((imports, tools)) = remembered
            .as_ref()
            .and_then(|(state, name)| describe_cache::load(state, name))
        {
            let imports = caps::classify_all(&imports);
            caps::check_grants(name, &imports, &toolset.granted).map_err(LoadError::Fatal)?;
            toolset.requested = caps::requested(&imports);
            toolset.tools = description::check(name, tools).map_err(LoadError::Fatal)?;
        } else {
            let (pre, imports) = toolset.prepare()?;
            toolset.requested = caps::requested(&imports);
            let _ = toolset.pre.set(Ok(pre));
            let session = Arc::new(Session::new());
            let (described, asked) = toolset
                .run(
                    &session,
                    ui,
                    FsAccess::None,
                    Role::Other(CallWrite::Nothing),
                    |bindings, store, ctx| {
                        let described = bindings.iota_toolset_toolset().call_describe(&mut *store, ctx)?;
                        Ok((described, store.data().asked))
                    },
                )
                .map_err(|stop| LoadError::Fatal(stop.text))?;
            let specs = described.map_err(LoadError::Config)?;
            toolset.tools = description::check(name, specs).map_err(LoadError::Fatal)?;
            if let Some((state, file)) = remembered.filter(|_| !asked) {
                let names: Vec<String> = imports.iter().map(|i| i.name().to_string()).collect();
                describe_cache::store(state, &file, &names, toolset.tools.iter().map(|t| &t.spec));
            }
        }
        Ok(toolset)
    }

    /// Compiles (or loads from cache) the component, checks its imports
    /// against the grants and pre-instantiates it. Takes the bytes.
    fn prepare(&self) -> Result<(ToolsetHostPre<CallState>, Vec<caps::Import>), LoadError> {
        let fatal = |e: anyhow::Error| LoadError::Fatal(format!("{e:#}"));
        let name = &self.name;
        let wasm = self.wasm.lock().unwrap_or_else(|e| e.into_inner()).take();
        let wasm =
            wasm.ok_or_else(|| LoadError::Fatal(format!("toolset {name:?}: its component was already taken")))?;
        let component = self
            .engine
            .component_with_digest(name, &self.digest, &wasm)
            .map_err(fatal)?;
        let imports = caps::imports(self.engine.wasmtime(), &component);
        caps::check_grants(name, &imports, &self.granted).map_err(LoadError::Fatal)?;
        let linker = caps::linker(self.engine.wasmtime()).map_err(fatal)?;
        let pre = linker.instantiate_pre(&component).map_err(|e| fatal(e.into()))?;
        let pre = ToolsetHostPre::new(pre).map_err(|e| {
            LoadError::Fatal(format!(
                "toolset {name:?} does not export iota:toolset/toolset@0.1.3: {e:#}"
            ))
        })?;
        Ok((pre, imports))
    }

    /// The pre-instantiated component, made on first use.
    fn pre(&self) -> Result<&ToolsetHostPre<CallState>, String> {
        self.pre
            .get_or_init(|| {
                self.prepare()
                    .map(|(pre, _)| pre)
                    .map_err(|(LoadError::Fatal(why) | LoadError::Config(why))| why)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// What the toolset is told about every call.
    fn context(&self) -> Context {
        Context {
            config: self.config.clone(),
            root: self.root.path().to_string_lossy().into_owned(),
            read_dirs: self
                .read_dirs
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// The set, shared: from here on its calls can have workers.
    pub fn into_arc(self) -> Arc<WasmToolset> {
        Arc::new_cyclic(|me| WasmToolset { me: me.clone(), ..self })
    }

    /// The filesystem view of every call: read-only, when the component
    /// reads files at all (a write goes through `writes`, [`CallWrite`]).
    fn access(&self) -> FsAccess {
        if self.requested.contains(&Capability::FsRead) {
            FsAccess::ReadOnly
        } else {
            FsAccess::None
        }
    }

    /// The queue a tool call's tasks go to: each worker thread invokes this
    /// set with the caller's `access`, session and `deadline`, and nobody to
    /// ask, keeping its instance from task to task of this call (a fresh
    /// one after a task fails).
    fn workers(&self, session: &Arc<Session>, access: FsAccess, deadline: Instant) -> Result<Workers, &'static str> {
        if !self.requested.contains(&Capability::Parallel) {
            return Err("this toolset does not import iota:toolset/workers");
        }
        let toolset = self.me.upgrade().ok_or("this host has no workers for this toolset")?;
        let session = session.clone();
        let new_worker: NewWorker = Arc::new(move |abandoned: &Arc<AtomicBool>| {
            let toolset = toolset.clone();
            let session = session.clone();
            let abandoned = abandoned.clone();
            let mut kept: Option<Instance> = None;
            Box::new(move |tool: &str, input: &str| {
                let mut instance = match kept.take() {
                    Some(instance) => instance,
                    None => {
                        let nobody: Arc<dyn Ui> = Arc::new(crate::caps::ui::NoUi);
                        let role = Role::Task {
                            deadline,
                            abandoned: abandoned.clone(),
                        };
                        toolset.instantiate(&session, &nobody, access, role)?
                    }
                };
                let result = toolset.call(&mut instance, |b, store, ctx| {
                    b.iota_toolset_toolset().call_invoke(store, ctx, tool, input)
                })?;
                kept = Some(instance);
                if result.is_error {
                    Err(result.text)
                } else {
                    Ok(result.text)
                }
            }) as Box<dyn FnMut(&str, &str) -> Result<String, String> + Send>
        });
        Ok(Workers::new(new_worker))
    }

    /// Runs `f` against a fresh instance in a fresh store with the limits and
    /// `access`; any trap, panic, timeout or limit hit becomes an error text.
    fn run<R>(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        access: FsAccess,
        role: Role,
        f: impl FnOnce(&crate::wit::ToolsetHost, &mut Store<CallState>, &Context) -> wasmtime::Result<R>,
    ) -> Result<R, Stop> {
        let mut instance = self.instantiate(session, ui, access, role)?;
        self.call(&mut instance, f)
    }

    /// A fresh store with the limits, `access` and deadline, and the
    /// component instantiated in it, in a slot of its kind waited for in
    /// turn (`admission/slots.rs`). A call's time starts once it has its
    /// slot; a task waits no longer than its call's deadline.
    fn instantiate(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        access: FsAccess,
        role: Role,
    ) -> Result<Instance, Stop> {
        let pre = self.pre()?;
        let slots = self.engine.admission().slots();
        let (slot, deadline) = match &role {
            Role::Task { deadline, abandoned } => {
                let deadline = *deadline;
                let give_up = || abandoned.load(Ordering::Relaxed) || Instant::now() >= deadline;
                let slot = slots.acquire(SlotKind::Task, session.id(), &give_up);
                let slot = slot.ok_or_else(|| "the task's call ended before the task could start".to_string())?;
                (slot, deadline)
            }
            _ => {
                let cancellations = session.cancellations();
                let cancel = match &role {
                    Role::Call { cancel, .. } => Some(cancel),
                    _ => None,
                };
                let give_up = || session.cancellations() != cancellations || cancel.is_some_and(|c| c.is_cancelled());
                let slot = slots.acquire(SlotKind::Call, session.id(), &give_up);
                let slot = slot.ok_or_else(|| Stop {
                    failure: Failure::Cancelled,
                    text: format!("toolset {:?} was cancelled", self.name),
                })?;
                (slot, Instant::now() + self.limits.timeout)
            }
        };
        loop {
            let (mut store, stdout, stderr) = self.store(session, ui, access, &role, deadline)?;
            match pre.instantiate(&mut store) {
                Ok(bindings) => {
                    return Ok(Instance {
                        store,
                        bindings,
                        stdout,
                        stderr,
                        _slot: slot,
                    });
                }
                // The slots keep within the pool, unless a component has more
                // memories or tables than the pool planned per instance: then it
                // waits for others to end, as long as its time allows.
                Err(err) if err.is::<wasmtime::PoolConcurrencyLimitError>() && Instant::now() < deadline => {
                    drop(store);
                    std::thread::sleep(POOL_RETRY);
                }
                Err(err) => return Err(self.failure(&err, &store, &stdout, &stderr)),
            }
        }
    }

    /// A store for one instance of the component: its WASI context (preopens
    /// per `access`), limits and capabilities, and the deadline and
    /// cancellation checks on every epoch tick.
    fn store(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        access: FsAccess,
        role: &Role,
        deadline: Instant,
    ) -> Result<(Store<CallState>, MemoryOutputPipe, MemoryOutputPipe), String> {
        let (workers, abandoned, write, cancel) = match role {
            Role::Call { write, cancel } => (
                self.workers(session, access, deadline),
                None,
                write.clone(),
                Some(cancel.clone()),
            ),
            Role::Task { abandoned, .. } => (
                Err("a task cannot submit tasks"),
                Some(abandoned.clone()),
                CallWrite::Nothing,
                None,
            ),
            Role::Other(write) => (Err("only a tool call can have workers"), None, write.clone(), None),
        };
        let (stdout, stderr) = (caps::stdio_pipe(), caps::stdio_pipe());
        let mut builder = WasiCtxBuilder::new();
        builder
            .allow_blocking_current_thread(caps::wasi_bounds::BLOCKING_CURRENT_THREAD)
            // What one `get-random-bytes` may ask the host to make (its
            // default is 64 MiB, whatever the set's memory limit).
            .max_random_size(MAX_RANDOM_BYTES)
            .stdout(stdout.clone())
            .stderr(stderr.clone());
        caps::disable_network(&mut builder);
        let mut files = fs::preopen(&mut builder, &self.root, &self.read_dirs, access).map_err(|e| format!("{e:#}"))?;
        if matches!(role, Role::Call { .. }) {
            files.expect_walk_start();
        }
        let state = CallState {
            wasi: builder.build(),
            table: Default::default(),
            limiter: MemoryLimiter::new(usize::try_from(self.limits.memory).unwrap_or(usize::MAX)),
            set: self.name.clone(),
            session: session.clone(),
            ui: crate::caps::ui::Timed::new(ui.clone()),
            process: self.process.clone(),
            files,
            asked: false,
            workers,
            stop: caps::Stopper::new(session, deadline, abandoned, cancel),
            listings: Default::default(),
            write,
            warm: Default::default(),
        };
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|s| &mut s.limiter);
        // Each call into the host may copy out what the memory limit leaves
        // room for now: aliased strings, each copied, cannot make the host
        // hold more for the component than its limit.
        let cap = self.crossing_cap();
        store.set_hostcall_fuel(cap);
        store.call_hook(move |mut store, hook| {
            if matches!(hook, wasmtime::CallHook::CallingHost) {
                let room = store.data().limiter.crossing_room(cap);
                store.set_hostcall_fuel(room);
            }
            Ok(())
        });
        store.set_max_component_handles(MAX_HANDLES);
        // Every tick checks for a cancellation of the session's calls (and for
        // a task, of the call it is part of) and for the deadline, so a call
        // stops at whichever comes first. The deadline is read from the
        // clock, not counted in ticks: no tick reaches a call waiting in the
        // host (a command, a WASI wait), and that time counts; the time a
        // person takes to answer a question does not (caps/ui.rs).
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|store| match store.data().stop.reason() {
            Some(stop) => Err(stop),
            None => Ok(wasmtime::UpdateDeadline::Continue(1)),
        });
        Ok((store, stdout, stderr))
    }

    /// Calls into `instance`; a failure is an error text naming its cause,
    /// after which the instance must not be used again.
    fn call<R>(
        &self,
        instance: &mut Instance,
        f: impl FnOnce(&crate::wit::ToolsetHost, &mut Store<CallState>, &Context) -> wasmtime::Result<R>,
    ) -> Result<R, Stop> {
        let ctx = self.context();
        f(&instance.bindings, &mut instance.store, &ctx)
            .map_err(|err| self.failure(&err, &instance.store, &instance.stdout, &instance.stderr))
    }

    fn failure(
        &self,
        err: &wasmtime::Error,
        store: &Store<CallState>,
        stdout: &MemoryOutputPipe,
        stderr: &MemoryOutputPipe,
    ) -> Stop {
        let flooded = stdout.contents().len() >= caps::STDIO_CAP || stderr.contents().len() >= caps::STDIO_CAP;
        self.describe_failure(err, store.data().limiter.hit, flooded, &stderr.contents())
    }

    /// The result, unless it is larger than the set's output limit. A call
    /// that `wrote` its file is never answered as failed for that: its
    /// text is cut to the limit, with a note, and its diff left out.
    fn within_output_limit(&self, result: ToolResult, wrote: bool) -> Result<ToolResult, Stop> {
        let size = (result.text.len() + result.diff.as_ref().map_or(0, String::len)) as u64;
        if size <= self.limits.output {
            return Ok(result);
        }
        let over = format!(
            "toolset {:?} returned {} KiB, over its output limit ({} KiB)",
            self.name,
            size.div_ceil(1024),
            self.limits.output >> 10
        );
        if !wrote {
            return Err(Stop {
                failure: Failure::OutputLimit,
                text: format!("{over}; the result was dropped"),
            });
        }
        let note = format!("\n[{over}; cut here, and the diff left out — the file was written]");
        let keep = usize::try_from(self.limits.output)
            .unwrap_or(usize::MAX)
            .saturating_sub(note.len());
        let mut text = result.text;
        let mut end = keep.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&note);
        Ok(ToolResult {
            text,
            diff: None,
            ..result
        })
    }

    /// Bytes one crossing may copy out of the component: the arguments of
    /// one import call, or one export's results. Lists of strings are copied
    /// entry by entry, and entries may all point at one buffer, so without a
    /// cap a component could make the host hold many times its own memory.
    /// Never more than the component's memory limit, nor wasmtime's default.
    fn crossing_cap(&self) -> usize {
        usize::try_from(self.limits.memory)
            .unwrap_or(usize::MAX)
            .min(CROSSING_CAP)
    }

    fn describe_failure(&self, err: &wasmtime::Error, memory_hit: bool, flooded: bool, stderr: &[u8]) -> Stop {
        let (failure, text) = self.what_stopped(err, memory_hit, flooded, stderr);
        Stop { failure, text }
    }

    fn what_stopped(&self, err: &wasmtime::Error, memory_hit: bool, flooded: bool, stderr: &[u8]) -> (Failure, String) {
        let name = &self.name;
        if err.downcast_ref::<Cancelled>().is_some() {
            return (Failure::Cancelled, format!("toolset {name:?} was cancelled"));
        }
        if let Some(too_much) = err.downcast_ref::<crate::caps::ui::TooMuchToAsk>() {
            return (Failure::Trapped, format!("toolset {name:?} {too_much} and was stopped"));
        }
        if err.downcast_ref::<StateFull>().is_some() {
            let text = format!(
                "toolset {name:?} kept more than {} MiB in its session state and was stopped",
                crate::session::STATE_CAP >> 20
            );
            return (Failure::Trapped, text);
        }
        // wasmtime's error types for these are private; their texts are
        // checked by the limit tests.
        if err.downcast_ref::<caps::wasi_bounds::BeyondPermit>().is_some() {
            let text = format!(
                "toolset {name:?} wrote more at once than its output stream permitted (check-write) and was stopped"
            );
            return (Failure::Trapped, text);
        }
        if err
            .chain()
            .any(|e| e.to_string().contains("store handle limit exceeded"))
        {
            let text = format!(
                "toolset {name:?} held more than {MAX_HANDLES} handles (open files, streams) at once and was stopped"
            );
            return (Failure::Trapped, text);
        }
        if err.chain().any(|e| {
            e.to_string()
                .contains("fuel allocated for hostcalls has been exhausted")
        }) {
            let text = format!(
                "toolset {name:?} handed the host more in one crossing than its memory limit ({} MiB) left room for beside its memory, and was stopped",
                self.limits.memory >> 20
            );
            return (Failure::MemoryLimit, text);
        }
        if err.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            let text = format!(
                "toolset {name:?} ran past its time limit ({:?}) and was stopped",
                self.limits.timeout
            );
            return (Failure::TimeLimit, text);
        }
        if memory_hit {
            let text = format!(
                "toolset {name:?} ran past its memory limit ({} MiB) and was stopped",
                self.limits.memory >> 20
            );
            return (Failure::MemoryLimit, text);
        }
        if flooded {
            let text = format!(
                "toolset {name:?} wrote more than {} KiB to stdout/stderr and was stopped",
                caps::STDIO_CAP >> 10
            );
            return (Failure::OutputLimit, text);
        }
        // A Rust guest's panic message is the most useful line it printed.
        let printed = String::from_utf8_lossy(stderr);
        let mut lines = printed.lines().skip_while(|l| !l.contains("panicked at"));
        let panic = lines.next().map(|at| {
            let location = at.split("panicked at ").nth(1).unwrap_or("").trim_end_matches(':');
            let message: Vec<&str> = lines.take_while(|l| !l.starts_with("note:")).collect();
            format!("{} (panicked at {location})", message.join(" "))
        });
        let text = format!("toolset {name:?} crashed: {}", panic.unwrap_or_else(|| err.to_string()));
        (Failure::Trapped, text)
    }
}

/// The most one crossing may copy (wasmtime's own default).
const CROSSING_CAP: usize = 128 << 20;

/// Bytes of randomness one WASI call may ask for.
const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// Handles (open files and directories, streams, pollables) one instance's
/// store may hold at once; wasmtime's default is 100,000. Each open file is
/// a descriptor of the host process, which all its sessions share, so a
/// call holds at most this many per instance (the caller and its workers)
/// rather than the process's whole allowance.
const MAX_HANDLES: usize = 256;

/// A component instance in its store, with the pipes its stdout and
/// stderr go to.
struct Instance {
    store: Store<CallState>,
    bindings: crate::wit::ToolsetHost,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    /// Given back after the store (and its pooled instance) is gone.
    _slot: Slot,
}

/// What a store is made for.
enum Role {
    /// A tool call: it may submit tasks (`iota:toolset/workers`) and write
    /// what the gate decided it may; `cancel` stops it alone.
    Call { write: CallWrite, cancel: Arc<CallCancel> },
    /// A task of a tool call, bound by the call's deadline and stopped when
    /// the call no longer waits for it.
    Task {
        deadline: Instant,
        abandoned: Arc<AtomicBool>,
    },
    /// Describe, prompt, preview (which reads the file a call would write).
    Other(CallWrite),
}

/// How long a call waits before it asks again for a pooled instance, when
/// the pool itself (not the slots) had none.
const POOL_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Why a call stopped when its session cancelled it.
impl Toolset for WasmToolset {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> &[Tool] {
        &self.tools
    }

    fn prompt(&self) -> Option<String> {
        let session = Arc::new(Session::new());
        let ui: Arc<dyn Ui> = Arc::new(crate::caps::ui::NoUi);
        self.run(
            &session,
            &ui,
            self.access(),
            Role::Other(CallWrite::Nothing),
            |b, store, ctx| b.iota_toolset_toolset().call_prompt(store, ctx),
        )
        .ok()
        .flatten()
    }

    fn plan(&self, spec: &Tool, args: Arguments) -> Result<CallPlan, String> {
        let plan = CallPlan::of(spec, args);
        // A writer may land on a protected file, which asks every time,
        // whatever its spec says: it never runs beside other calls.
        let writes = plan.may_write && self.requested.contains(&Capability::FsWrite);
        Ok(CallPlan {
            parallel: plan.parallel && !writes,
            ..plan
        })
    }

    fn resolve(&self, plan: &CallPlan) -> Resolved {
        let value = plan.args.value();
        // A writing call's file is resolved once, here, and held open: the
        // preview reads it, the question names it, the write goes through it,
        // so no link changed in between moves the write (caps/writes.rs).
        let write = match value {
            Some(args) if plan.may_write && self.requested.contains(&Capability::FsWrite) => {
                CallWrite::resolve(&self.root, args)
            }
            _ => CallWrite::Nothing,
        };
        let header = header_before_running(&plan.tool, value);
        let question = match write.held() {
            Some(held) => crate::approval::annotate(&header, held.given(), held.lands(), held.protected()),
            None => header.clone(),
        };
        let approval = self
            .tools
            .iter()
            .find(|t| t.name == plan.tool)
            .map_or(ApprovalRule::Required, |t| t.approval);
        Resolved {
            header,
            question,
            approval,
            write,
            detail: Box::new(()),
        }
    }

    fn preview(&self, session: &Arc<Session>, plan: &CallPlan, resolved: &Resolved) -> Option<String> {
        let ui: Arc<dyn Ui> = Arc::new(crate::caps::ui::NoUi);
        self.run(
            session,
            &ui,
            self.access(),
            Role::Other(resolved.write.clone()),
            |b, store, ctx| {
                b.iota_toolset_toolset()
                    .call_preview(store, ctx, &plan.tool, plan.args.text())
            },
        )
        .ok()
        .flatten()
    }

    fn invoke(&self, session: &Arc<Session>, ui: &Arc<dyn Ui>, plan: &CallPlan, call: &Cleared) -> Ran {
        self.run(
            session,
            ui,
            self.access(),
            Role::Call {
                write: call.write().clone(),
                cancel: call.cancel().clone(),
            },
            |b, store, ctx| {
                b.iota_toolset_toolset()
                    .call_invoke(store, ctx, &plan.tool, plan.args.text())
            },
        )
        .and_then(|result| self.within_output_limit(result, call.write().held().is_some_and(|file| file.wrote())))
        .map_or_else(
            |stop| Ran::failed(stop.failure, ToolResult::failure(&plan.tool, stop.text)),
            Ran::from_tool,
        )
    }
}

/// Why a component's run stopped: the failure and the text the model reads.
struct Stop {
    failure: Failure,
    text: String,
}

/// A worker task's failure is its text (its call decides what it means).
impl From<Stop> for String {
    fn from(stop: Stop) -> String {
        stop.text
    }
}

/// A failure of the host's own (no slot, no instance): the text is said.
impl From<String> for Stop {
    fn from(text: String) -> Stop {
        Stop {
            failure: Failure::Host,
            text,
        }
    }
}

/// A component's call as its header reads before the call has run (for the
/// approval question): the tool and its `path` (or `pattern`, `command`)
/// argument, as the file tools head their results. The component's own
/// header replaces it once the call has run.
fn header_before_running(tool: &str, args: Option<&serde_json::Value>) -> String {
    match ["path", "pattern", "command"]
        .iter()
        .find_map(|k| args?.get(k).and_then(|v| v.as_str()))
    {
        Some(subject) => format!("{tool} {subject}"),
        None => tool.to_string(),
    }
}
