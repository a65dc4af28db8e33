//! The wasmtime engine: one per process, epoch interruption for per-call
//! deadlines, and an on-disk cache of compiled components.
//!
//! Compiling a component takes about a second; loading a cached one takes
//! milliseconds. The built-in components come compiled ahead of time, at
//! build time, with the same settings (`engine/settings.rs`). The cache key is sha256 of the Wasm bytes plus wasmtime's
//! precompile-compatibility hash, so a new wasmtime or different settings
//! never load a stale artifact. The cache is host state (`host_state.rs`):
//! kept out of every sandboxed command's reach and sealed, because a
//! compiled component is native code the host runs.

use crate::admission::Admission;
use crate::host_state::StateDir;
use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Component;

mod settings;

/// How often the epoch advances: the resolution of every deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The engine and what it needs around it.
#[derive(Clone)]
pub struct Engine {
    inner: wasmtime::Engine,
    state: Option<StateDir>,
    /// The bounds every call of this engine's components waits within.
    admission: Arc<Admission>,
    _ticker: Arc<Ticker>,
}

/// Stops the epoch thread when the last engine handle goes.
struct Ticker {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Engine {
    /// An engine with epoch interruption on, a ticker thread driving it, and
    /// the host's state directory (see [`crate::host_state::default_dir`]).
    pub fn new() -> Result<Engine> {
        Engine::with_cache(crate::host_state::default_dir())
    }

    /// The same with an explicit state directory (`None`: compile every
    /// time). One that cannot be used safely is left out with a warning.
    pub fn with_cache(cache_dir: Option<PathBuf>) -> Result<Engine> {
        let mut config = wasmtime::Config::new();
        settings::compiler_settings(&mut config);
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool()));
        // The pool reserves its address space up front; where that is refused
        // (a `ulimit -v`), every instance is mapped on its own instead.
        let inner = wasmtime::Engine::new(&config).or_else(|_| {
            config.allocation_strategy(wasmtime::InstanceAllocationStrategy::OnDemand);
            wasmtime::Engine::new(&config)
        })?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let weak = inner.weak();
        let thread_stop = stop.clone();
        std::thread::Builder::new().name("iota-epoch".into()).spawn(move || {
            // Holding a weak handle lets the engine drop while the thread sleeps.
            while !thread_stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })?;
        let state = cache_dir.and_then(|dir| {
            StateDir::open(&dir)
                .inspect_err(|why| eprintln!("iota-host: warning: {why}; compiled components are not kept"))
                .ok()
        });
        Ok(Engine {
            inner,
            state,
            admission: Admission::new(),
            _ticker: Arc::new(Ticker { stop }),
        })
    }

    /// The calls in flight and the instance slots (`admission.rs`).
    pub(crate) fn admission(&self) -> &Arc<Admission> {
        &self.admission
    }

    /// The wasmtime engine.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner
    }

    /// The state directory compiled components (and describe answers) are
    /// kept in, sealed, when there is one.
    pub fn state(&self) -> Option<&StateDir> {
        self.state.as_ref()
    }

    /// Compiles `wasm` (named `name` in messages), or loads the cached result.
    #[cfg(feature = "cli")]
    pub fn component(&self, name: &str, wasm: &[u8]) -> Result<Component> {
        self.component_with_digest(name, &digest(wasm), wasm)
    }

    /// The same for bytes whose [`digest`] the caller already has.
    pub fn component_with_digest(&self, name: &str, digest: &str, wasm: &[u8]) -> Result<Component> {
        let key = self.cache_key(digest);
        // SAFETY: the file is exactly what this host wrote (its keyed tag
        // matches) from `Component::serialize` of this engine configuration
        // (the name includes its compatibility hash), in a directory no
        // sandboxed command can see and only the user can write.
        if let Some(state) = &self.state
            && let Some(Ok(component)) =
                state.with_verified_file(&key, |file| unsafe { Component::deserialize_file(&self.inner, file) })
        {
            mark_used(&state.dir().join(&key));
            return Ok(component);
        }
        // A built-in comes compiled in the binary. It is loaded from there
        // once and kept in the state directory too: mapping a file faults in
        // only the pages a call touches, where loading from memory copies
        // all of it (5.7 ms against 9.4 ms per `call read_file`, measured).
        // SAFETY: build.rs wrote these bytes with `precompile_component` of
        // this very engine configuration, and they are part of this binary;
        // wasmtime still refuses them if its version, the settings or the
        // CPU's features differ, and then the component is compiled below.
        if let Some(precompiled) = crate::embedded::precompiled(wasm)
            && let Ok(component) = unsafe { Component::deserialize(&self.inner, precompiled) }
        {
            if let Some(state) = &self.state {
                let _ = state.write(&key, precompiled);
            }
            return Ok(component);
        }
        let component = {
            let _spinning = spinner(name);
            Component::new(&self.inner, wasm)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("toolset {name:?}: not a valid component"))
        };
        let component = component?;
        if let Some(state) = &self.state {
            // A cache that cannot be written only costs the next start a compile.
            let _ = state.write(&key, &component.serialize()?);
            prune(state.dir());
        }
        Ok(component)
    }

    fn cache_key(&self, digest: &str) -> String {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.inner.precompile_compatibility_hash().hash(&mut hasher);
        format!("{digest}-{:016x}.cwasm", hasher.finish())
    }
}

/// A spinner on a terminal while a component compiles (about a second);
/// it clears itself when dropped.
#[cfg(feature = "cli")]
fn spinner(name: &str) -> Option<impl Drop> {
    struct Clears(indicatif::ProgressBar);
    impl Drop for Clears {
        fn drop(&mut self) {
            self.0.finish_and_clear();
        }
    }
    use std::io::IsTerminal;
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(format!("compiling toolset {name} (first run; cached after)"));
        bar.enable_steady_tick(Duration::from_millis(100));
        Clears(bar)
    })
}

/// Without the command line, nobody watches stderr for a spinner.
#[cfg(not(feature = "cli"))]
fn spinner(_name: &str) -> Option<()> {
    None
}

/// Component instances alive at once. A tool call instantiates its component
/// afresh, and so does each of a call's workers (one per core, at most 8);
/// this is room for several such calls at once. A call that finds every slot
/// taken waits for one until its deadline (`WasmToolset::instantiate`).
pub const POOLED_INSTANCES: u32 = 64;

// The pool has room for the admission's call and task slots, and to spare
// for components with more than one memory or table per instance.
const _: () =
    assert!(crate::admission::slots::CALL_SLOTS + crate::admission::slots::TASK_SLOTS <= POOLED_INSTANCES as usize);

/// Instances come from slots that are reused rather than mapped and unmapped
/// per call: a fresh mapping of linear memory costs a dozen page faults, an
/// `mmap`, an `mprotect` and a `munmap` every call, over a third of a small
/// read_file (89 µs on demand, 33 µs pooled, on the 2-core bench machine).
/// The pool reserves address space, not memory: 64 linear memories of 4 GiB
/// plus guards, untouched until used.
fn pool() -> wasmtime::PoolingAllocationConfig {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(POOLED_INSTANCES)
        .total_memories(POOLED_INSTANCES)
        .total_tables(2 * POOLED_INSTANCES)
        .total_core_instances(8 * POOLED_INSTANCES)
        // Calls are synchronous: no fiber stacks beyond a token few (each is
        // an `mprotect` at start-up).
        .total_stacks(4)
        // Generous per-module shapes, so what runs on demand fits a slot too:
        // multi-memory modules, CPython-sized function tables.
        .max_memories_per_module(4)
        .max_tables_per_module(4)
        .table_elements(100_000);
    // With the kernel's page map (Linux 6.7+) a slot's dirty pages are found
    // and reset in place, so they stay mapped for the next instance; without
    // it, keeping pages resident would mean clearing all of them every time.
    if wasmtime::PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(wasmtime::Enabled::Auto)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT);
    }
    pool
}

/// How much of a slot's memory (and of its tables) stays mapped between
/// instances: more than a small call dirties.
const KEEP_RESIDENT: usize = 1 << 20;

/// A component's identity: the hex sha256 of its bytes (computed at build
/// time for the embedded ones).
pub fn digest(wasm: &[u8]) -> String {
    crate::embedded::known_sha256(wasm).map_or_else(|| sha256_hex(wasm), str::to_string)
}

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Compiled components kept in the cache: the most recently used ones. Every
/// build of a component (each upgrade, each change while developing one) is a
/// new file, and nothing else ever removes the old ones.
pub const KEEP_COMPILED: usize = 24;
/// Remembered descriptions kept: one per component, config and root in use.
pub const KEEP_DESCRIBED: usize = 64;

/// How old a use mark may get before a load renews it: pruning ranks files
/// by days of disuse, and renewing the mark at every start would write the
/// file's inode at every start.
const USE_MARK_RESOLUTION: Duration = Duration::from_secs(24 * 3600);

/// Notes that a cache file was just used (its modification time is the last
/// use, to within a day), so pruning removes the least recently used first.
pub(crate) fn mark_used(path: &Path) {
    let recent = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|at| at.elapsed().is_ok_and(|age| age < USE_MARK_RESOLUTION));
    if !recent && let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Removes all but the [`KEEP_COMPILED`] most recently used compiled
/// components and [`KEEP_DESCRIBED`] descriptions from the cache `dir`. Runs
/// after a compile, which is rare, so a start never pays for it. A file
/// another process still maps stays valid for it until unmapped.
pub(crate) fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let (mut compiled, mut described, mut memos) = (Vec::new(), Vec::new(), Vec::new());
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(crate::host_state::VERIFIED_SUFFIX) {
            memos.push(entry.path());
            continue;
        }
        let Some(used) = entry.metadata().ok().and_then(|m| m.modified().ok()) else {
            continue;
        };
        if name.ends_with(".cwasm") {
            compiled.push((used, entry.path()));
        } else if name.starts_with("describe-") && name.ends_with(".json") {
            described.push((used, entry.path()));
        }
    }
    for (mut files, keep) in [(compiled, KEEP_COMPILED), (described, KEEP_DESCRIBED)] {
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        for (_, path) in files.into_iter().skip(keep) {
            let _ = std::fs::remove_file(path);
        }
    }
    // A remembered verification goes with its file.
    for memo in memos {
        let file = memo.with_extension("");
        if !file.exists() {
            let _ = std::fs::remove_file(memo);
        }
    }
}
