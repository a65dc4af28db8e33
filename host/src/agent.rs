//! One agent's toolsets, loaded from config: which sets are enabled, where
//! their components come from, what they are granted, and the index from tool
//! name to set.

use crate::builtin_sets::{BUILTIN_SETS, Enabling, Runs, builtin_set};
use crate::capability::Capability;
use crate::caps::ui::Ui;
use crate::config::{Agent, Config, SetValue, Source};
use crate::description::Tool;
use crate::embedded;
use crate::engine::Engine;
use crate::project::ProjectRoot;
use crate::registry::Store;
use crate::shell::ShellToolset;
use crate::shell::config::ShellConfig;
use crate::toolset::Toolset;
use crate::wasm_toolset::{LoadError, LoadOptions, WasmToolset};
use anyhow::{Context as _, Result, bail};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The enabled toolsets of one agent.
pub struct AgentTools {
    sets: Vec<Arc<dyn Toolset>>,
    index: HashMap<String, usize>,
    audit: Option<Arc<crate::audit::AuditLog>>,
    /// The project root, pinned (the approval gate's protected paths live under it).
    root: Arc<ProjectRoot>,
}

/// Grants every third-party toolset has without asking: read the root, keep
/// session state. Anything more is listed under `grant:`.
pub fn default_grants() -> BTreeSet<Capability> {
    BTreeSet::from([Capability::FsRead, Capability::Session])
}

/// The startup warning for a set left out: `toolset "NAME": … (ignored)`.
pub fn ignored(set: &str, why: &str) -> String {
    format!("toolset {set:?}: {why} (ignored)")
}

impl AgentTools {
    /// Loads `agent`'s sets for the project at `root`. Returns the tools and
    /// the startup warnings (sets left out); a hard error fails the load.
    pub fn load(
        engine: &Engine,
        config: &Config,
        agent: &Agent,
        root: &Arc<ProjectRoot>,
        ui: &Arc<dyn Ui>,
    ) -> Result<(AgentTools, Vec<String>)> {
        let mut warnings = Vec::new();
        let mut sets: Vec<Arc<dyn Toolset>> = Vec::new();
        for (name, value) in enabled_sets(agent, ui.interactive()) {
            match load_set(engine, config, agent, &name, &value, root, ui)? {
                Ok(set) => {
                    warnings.extend(set.notices());
                    sets.push(set);
                }
                Err(why) => warnings.push(ignored(&name, &why)),
            }
        }
        let mut index = HashMap::new();
        for (i, set) in sets.iter().enumerate() {
            for tool in set.tools() {
                if let Some(&other) = index.get(&tool.name) {
                    let other: &Arc<dyn Toolset> = &sets[other];
                    bail!(
                        "tool {:?} is offered by both toolset {:?} and toolset {:?}: disable one of them",
                        tool.name,
                        other.name(),
                        set.name()
                    );
                }
                index.insert(tool.name.clone(), i);
            }
        }
        Ok((
            AgentTools {
                sets,
                index,
                audit: None,
                root: root.clone(),
            },
            warnings,
        ))
    }

    /// The project root's path.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Appends a line per call to `log`.
    pub fn with_audit(mut self, log: crate::audit::AuditLog) -> AgentTools {
        self.audit = Some(Arc::new(log));
        self
    }

    /// The audit log, when one is kept.
    pub fn audit(&self) -> Option<&crate::audit::AuditLog> {
        self.audit.as_deref()
    }

    /// The loaded sets, in config order.
    pub fn sets(&self) -> &[Arc<dyn Toolset>] {
        &self.sets
    }

    /// Every tool with the set that offers it, in config order.
    pub fn tools(&self) -> impl Iterator<Item = (&Arc<dyn Toolset>, &Tool)> {
        self.sets
            .iter()
            .flat_map(|set| set.tools().iter().map(move |tool| (set, tool)))
    }

    /// The set offering `tool` and the tool's spec.
    pub fn find(&self, tool: &str) -> Option<(&Arc<dyn Toolset>, &Tool)> {
        let set = &self.sets[*self.index.get(tool)?];
        set.tools().iter().find(|t| t.name == tool).map(|spec| (set, spec))
    }

    /// The system-prompt text the enabled sets contribute, in config order.
    pub fn prompt(&self) -> String {
        self.sets
            .iter()
            .filter_map(|set| set.prompt())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The sets to load, in order: the agent's enabled `tools:` entries, then
/// each built-in set its [`Enabling`] rule adds — `skills` when `mode: agent`
/// or `mode: bot` asks for it and it is not enabled already, `ask` in
/// interactive sessions unless the agent names it. Spec: skills is
/// "auto-enabled by mode: agent and mode: bot"; ask is "on by default in
/// interactive sessions — disable with ask: false".
pub fn enabled_sets(agent: &Agent, interactive: bool) -> Vec<(String, serde_json::Value)> {
    let named = agent.sets();
    let mut sets: Vec<(String, serde_json::Value)> = named
        .iter()
        .filter_map(|(name, value)| match value {
            SetValue::Enabled(v) => Some((name.clone(), v.clone())),
            SetValue::Disabled => None,
        })
        .collect();
    for builtin in &BUILTIN_SETS {
        let added = match builtin.enabling {
            Enabling::Named => false,
            Enabling::ByMode => agent.mode_enables_more_sets() && !sets.iter().any(|(name, _)| name == builtin.name),
            Enabling::WhenInteractive => interactive && !named.iter().any(|(name, _)| name == builtin.name),
        };
        if added {
            sets.push((builtin.name.into(), serde_json::Value::Null));
        }
    }
    sets
}

/// Loads one set: `Ok(Err(why))` leaves it out with a warning.
fn load_set(
    engine: &Engine,
    config: &Config,
    agent: &Agent,
    name: &str,
    value: &serde_json::Value,
    project: &Arc<ProjectRoot>,
    ui: &Arc<dyn Ui>,
) -> Result<Result<Arc<dyn Toolset>, String>> {
    let root = project.path();
    type Loaded = (
        std::borrow::Cow<'static, [u8]>,
        BTreeSet<Capability>,
        crate::config::Limits,
        Vec<PathBuf>,
    );
    let (wasm, grants, limits, read_dirs): Loaded = if let Some(decl) = config.toolsets.get(name) {
        let wasm = match &decl.source {
            Source::File(path) => {
                let wasm =
                    std::fs::read(path).with_context(|| format!("toolset {name:?}: cannot read {}", path.display()))?;
                crate::provenance::check(name, decl, path, None, &wasm)?;
                wasm
            }
            Source::Registry(reference) => {
                let store = Store::of(engine).with_context(|| format!("toolset {name:?}"))?;
                let found = crate::registry::locate(reference, &config.lock, &store)
                    .with_context(|| format!("toolset {name:?}"))?;
                crate::provenance::check(name, decl, &found.file, found.bundle.as_deref(), &found.wasm)?;
                found.wasm
            }
        };
        let mut grants = default_grants();
        grants.extend(decl.grant.iter().flatten().copied());
        (wasm.into(), grants, decl.limits, Vec::new())
    } else if builtin_set(name).is_some_and(|set| matches!(set.runs, Runs::Native)) {
        let home = crate::platform::home_dir();
        let cwd = std::env::current_dir().unwrap_or_else(|_| root.to_path_buf());
        return Ok(ShellConfig::decode(value, home.as_deref(), &cwd)
            .and_then(
                |config| match crate::shell::sandbox::refusal(&config, root, home.as_deref()) {
                    Some(why) => Err(why),
                    None => Ok(config),
                },
            )
            // Windows with no interpreter at all: the spec refuses the set.
            .and_then(|config| {
                crate::shell::Interpreter::from_env()
                    .map(|_| config)
                    .map_err(str::to_string)
            })
            .map(|config| Arc::new(ShellToolset::pinned(config, project)) as Arc<dyn Toolset>));
    } else if let Some(builtin) = builtin_set(name).and_then(embedded::builtin) {
        (
            builtin.wasm.into(),
            builtin.grants,
            Default::default(),
            builtin.read_dirs,
        )
    } else {
        return Ok(Err("not available in this build of iota-host yet".to_string()));
    };
    let process = grants
        .contains(&Capability::Process)
        .then(|| process_runner(agent, project) as Arc<dyn crate::caps::process::CommandRunner>);
    let options = LoadOptions {
        name: name.to_string(),
        wasm,
        granted: grants,
        limits,
        root: project.clone(),
        config: value.clone(),
        read_dirs,
        process,
    };
    match WasmToolset::load(engine, options, ui) {
        Ok(set) => Ok(Ok(set.into_arc())),
        Err(LoadError::Config(why)) => Ok(Err(why)),
        Err(LoadError::Fatal(why)) => bail!(why),
    }
}

/// The shell runner behind a granted `process` capability: the agent's own
/// `shell:` settings when it has a valid set, the defaults otherwise.
fn process_runner(agent: &Agent, project: &Arc<ProjectRoot>) -> Arc<ShellToolset> {
    let home = crate::platform::home_dir();
    let cwd = std::env::current_dir().unwrap_or_else(|_| project.path().to_path_buf());
    let config = agent
        .sets()
        .into_iter()
        .find_map(|(name, value)| match value {
            SetValue::Enabled(value) if name == crate::shell::NAME => {
                ShellConfig::decode(&value, home.as_deref(), &cwd).ok()
            }
            _ => None,
        })
        .unwrap_or_default();
    Arc::new(ShellToolset::pinned(config, project))
}
