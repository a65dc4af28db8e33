//! The embedding API: what the iota CLI (or any program) needs to run an
//! agent's tools — load them from a config, list them, and call them in a
//! session with questions going to a [`Ui`] the embedder implements.
//!
//! ```
//! use iota_host::{Host, NoUi};
//! use std::sync::Arc;
//!
//! let project = tempfile::tempdir()?;
//! std::fs::write(project.path().join("notes.txt"), "hello\n")?;
//! let host = Host::builder()
//!     .config_yaml("agents:\n  default:\n    tools:\n      code:\n")
//!     .root(project.path())
//!     .ui(Arc::new(NoUi))
//!     .build()?;
//! assert!(host.tools().iter().any(|t| t.name == "read_file" && t.read_only));
//! let session = host.session();
//! let result = session.call("read_file", serde_json::json!({"path": "notes.txt"}));
//! assert_eq!(result.text, "     1\thello");
//! assert!(!result.is_error);
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! The command line (`cli`) and the MCP server (`mcp`) are front ends over
//! this, each behind the cargo feature of the same name (both on by
//! default); an embedder that turns default features off gets neither, nor
//! clap, crossterm or rmcp.

use crate::admission::{Admission, InFlight, Ticket, Turn, Turns};
use crate::agent::AgentTools;
use crate::caps::ui::Ui;
use crate::description::Tool;
use crate::engine::Engine;
use crate::round::{Outcome, Round};
use crate::session::{CallCancel, Session};
use crate::shell::session::ShellSession;
use crate::toolset::{CallPlan, Cleared, Failure, Presentation, Toolset};
use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;

// What the front ends (`cli.rs`, `mcp.rs`) reach besides the public API,
// in one list: they import nothing else of the crate (tests/structure.rs).
pub(crate) use crate::admission::Busy;
pub(crate) use crate::config::Config;
#[cfg(feature = "cli")]
pub(crate) use crate::engine::Engine as SharedEngine;
pub(crate) use crate::project::ProjectRoot;
#[cfg(feature = "cli")]
pub(crate) use crate::protected::by_name as protected_by_name;
#[cfg(feature = "cli")]
pub(crate) use crate::shell::MODEL_ROOT_VAR;
#[cfg(feature = "mcp")]
pub(crate) use crate::shell::jobs::{Job, Jobs};
#[cfg(feature = "cli")]
pub(crate) use crate::shell::run::cancel_on_interrupt;
#[cfg(feature = "mcp")]
pub(crate) use crate::shell::run::duration;
pub(crate) use crate::toolset::{ApprovalRule, Arguments};
/// The command line's own commands: `inspect`, `push` and `pull`.
#[cfg(feature = "cli")]
pub(crate) use crate::{inspect, registry_client};

/// Makes, on another core, what the first call will need (the linker,
/// WASI's runtime) while the config and the sets load.
#[cfg(feature = "cli")]
pub(crate) fn warm_up(engine: &Engine) {
    crate::caps::warm_up(engine.wasmtime());
}

/// Where the config comes from.
#[derive(Debug, Clone)]
enum ConfigSource {
    /// `--config`-style discovery: the file given, else `$IOTA_CONFIG`,
    /// `./.iota/config.yaml` (restricted), `~/.iota/config.yaml`, else the
    /// embedded default.
    Discover(Option<PathBuf>),
    /// Config text (YAML), relative paths resolved against the root.
    Yaml(String),
    /// An already loaded config (the CLI discovers its own).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    Loaded(Config),
}

/// Builds a [`Host`]: config, agent, project root, the [`Ui`] questions go
/// to, an audit log, where compiled components are kept.
#[derive(Clone)]
pub struct HostBuilder {
    config: ConfigSource,
    agent: Option<String>,
    root: Option<PathBuf>,
    /// The root already opened ([`HostBuilder::pinned_root`]).
    pinned: Option<Arc<ProjectRoot>>,
    ui: Option<Arc<dyn Ui>>,
    audit: Option<PathBuf>,
    state_dir: Option<Option<PathBuf>>,
    engine: Option<Engine>,
}

impl HostBuilder {
    /// Reads the config from `path` (instead of discovering it).
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = ConfigSource::Discover(Some(path.into()));
        self
    }

    /// Uses this config text (YAML).
    pub fn config_yaml(mut self, yaml: impl Into<String>) -> Self {
        self.config = ConfigSource::Yaml(yaml.into());
        self
    }

    /// Uses a project root opened (and checked) already, instead of opening
    /// `root` when the host is built.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn pinned_root(mut self, root: Arc<ProjectRoot>) -> Self {
        self.pinned = Some(root);
        self
    }

    /// Uses an already loaded config.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn config(mut self, config: Config) -> Self {
        self.config = ConfigSource::Loaded(config);
        self
    }

    /// The agent whose tools to load (default: the only agent, or `default`).
    pub fn agent(mut self, name: impl Into<String>) -> Self {
        self.agent = Some(name.into());
        self
    }

    /// The project root (default: the git root of the working directory,
    /// or the working directory).
    pub fn root(mut self, dir: impl AsRef<Path>) -> Self {
        self.root = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where questions go: approvals, `choose`, `confirm`. Default: nobody
    /// ([`crate::NoUi`]), so gated calls are refused and `ask` offers nothing.
    pub fn ui(mut self, ui: Arc<dyn Ui>) -> Self {
        self.ui = Some(ui);
        self
    }

    /// Appends one JSON line per call to `path` (default: the config's `audit:`).
    pub fn audit(mut self, path: impl Into<PathBuf>) -> Self {
        self.audit = Some(path.into());
        self
    }

    /// Keeps compiled third-party components and remembered descriptions in
    /// `dir` (`None`: nowhere). Default: the host's state directory,
    /// `$IOTA_CACHE_DIR`, `$XDG_STATE_HOME/iota-host` or `~/.local/state/iota-host`.
    pub fn state_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.state_dir = Some(dir);
        self
    }

    /// Shares an engine made earlier (the CLI warms one up while it parses).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Loads the config and the agent's toolsets. A set that cannot load is
    /// left out with a warning ([`Host::warnings`]); a config or agent that
    /// cannot be used is an error.
    pub fn build(self) -> std::result::Result<Host, Error> {
        // What hosts killed earlier left in the temp directory (and the
        // write temporaries their journals name) goes at the next start.
        crate::scratch::sweep_soon(&std::env::temp_dir());
        let engine = match self.engine {
            Some(engine) => engine,
            None => match self.state_dir {
                Some(dir) => Engine::with_cache(dir).map_err(Error::Engine)?,
                None => Engine::new().map_err(Error::Engine)?,
            },
        };
        let project = match self.pinned {
            Some(project) => project,
            None => {
                let root = project_root(self.root.as_deref()).map_err(Error::Root)?;
                Arc::new(
                    ProjectRoot::open(&root)
                        .with_context(|| format!("cannot open the project root {}", root.display()))
                        .map_err(Error::Root)?,
                )
            }
        };
        let root = project.path().to_path_buf();
        let config = match self.config {
            ConfigSource::Discover(path) => Config::discover(path.as_deref()).map_err(Error::Config)?,
            ConfigSource::Yaml(text) => Config::parse(&text, "(given)", &root).map_err(Error::Config)?,
            ConfigSource::Loaded(config) => config,
        };
        let agent = config.agent(self.agent.as_deref()).map_err(Error::Agent)?;
        let ui = self.ui.unwrap_or_else(|| Arc::new(crate::caps::ui::NoUi));
        let (mut tools, warnings) =
            AgentTools::load(&engine, &config, agent, &project, &ui).map_err(Error::Toolsets)?;
        if let Some(path) = self.audit.as_ref().or(config.audit.as_ref()) {
            let log = crate::audit::AuditLog::open(path, &agent.name, &root)
                .with_context(|| format!("cannot open the audit log {}", path.display()))
                .map_err(Error::AuditLog)?;
            tools = tools.with_audit(log);
        }
        let warnings = config.warnings.iter().chain(&warnings).cloned().collect();
        Ok(Host {
            tools: Arc::new(tools),
            ui,
            warnings,
            engine,
        })
    }
}

/// Why a [`Host`] could not be built; its text says what to fix.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The engine could not start (its state directory, its compiler).
    Engine(anyhow::Error),
    /// The project root does not exist, is no directory, or cannot be opened.
    Root(anyhow::Error),
    /// The config cannot be read or used.
    Config(anyhow::Error),
    /// No agent of that name, or none to choose by default.
    Agent(anyhow::Error),
    /// A toolset that must load cannot (two sets offer one tool, a declared
    /// component is unreadable, unpinned or unsigned); a set that may be
    /// left out is a warning instead.
    Toolsets(anyhow::Error),
    /// The audit log cannot be opened where it was asked for.
    AuditLog(anyhow::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (Error::Engine(e)
        | Error::Root(e)
        | Error::Config(e)
        | Error::Agent(e)
        | Error::Toolsets(e)
        | Error::AuditLog(e)) = self;
        write!(f, "{e:#}")
    }
}

impl std::error::Error for Error {}

/// `root`, else the git root of the working directory, else the working
/// directory; canonical, so the jail and the preopens agree on one path.
pub(crate) fn project_root(explicit: Option<&Path>) -> Result<PathBuf> {
    let start = match explicit {
        Some(dir) => dir.to_path_buf(),
        None => {
            let cwd = std::env::current_dir().context("cannot read the working directory")?;
            cwd.ancestors()
                .find(|d| d.join(".git").exists())
                .map(Path::to_path_buf)
                .unwrap_or(cwd)
        }
    };
    let root = crate::platform::canonicalize(&start)
        .with_context(|| format!("project root {} does not exist", start.display()))?;
    if !root.is_dir() {
        bail!("project root {} is not a directory", root.display());
    }
    Ok(root)
}

/// An agent's tools, loaded and ready: sessions call them.
pub struct Host {
    tools: Arc<AgentTools>,
    ui: Arc<dyn Ui>,
    warnings: Vec<String>,
    /// Kept with the tools it compiled (its epoch ticker drives their
    /// deadlines); its admission bounds every session's calls.
    engine: Engine,
}

/// One tool as a model (or an MCP client) sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// Its name.
    pub name: String,
    /// The set that offers it.
    pub set: String,
    /// What the model reads about it.
    pub description: String,
    /// Its arguments' JSON Schema, parsed once when its set was loaded.
    pub parameters: Arc<serde_json::Map<String, serde_json::Value>>,
    /// It never changes anything.
    pub read_only: bool,
    /// It may replace what was there (the writers).
    pub destructive: bool,
    /// A second identical call changes nothing more.
    pub idempotent: bool,
    /// It may reach beyond the machine (a shell with the network or without a sandbox).
    pub open_world: bool,
    /// It asks the user before it runs (unless allowed for the session).
    pub asks_first: bool,
    /// It may run beside the round's other calls.
    pub parallel: bool,
    /// How a front end shows its calls.
    pub presentation: Presentation,
}

impl ToolInfo {
    /// What `set` says of its tool `spec`, hints derived in this one place
    /// (the MCP server's annotations read them too).
    pub(crate) fn of(set: &Arc<dyn Toolset>, spec: &Tool) -> ToolInfo {
        ToolInfo {
            name: spec.name.clone(),
            set: set.name().to_string(),
            description: spec.description.clone(),
            parameters: spec.schema.clone(),
            read_only: spec.read_only,
            destructive: !spec.read_only && spec.presentation == Presentation::Expanded,
            idempotent: spec.read_only || spec.presentation == Presentation::Expanded,
            open_world: set.open_world(),
            asks_first: spec.approval == ApprovalRule::Required,
            parallel: spec.parallel,
            presentation: spec.presentation,
        }
    }
}

impl Host {
    /// A builder with discovery defaults.
    pub fn builder() -> HostBuilder {
        HostBuilder {
            config: ConfigSource::Discover(None),
            agent: None,
            root: None,
            pinned: None,
            ui: None,
            audit: None,
            state_dir: None,
            engine: None,
        }
    }

    /// The tools, in the order the model sees them.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.tools.tools().map(|(set, spec)| ToolInfo::of(set, spec)).collect()
    }

    /// The system-prompt text the enabled sets contribute ("" without any).
    pub fn prompt(&self) -> String {
        self.tools.prompt()
    }

    /// What loading left out or ignored, one sentence each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The project root the tools are jailed to.
    pub fn root(&self) -> &Path {
        self.tools.root()
    }

    /// A new session: approvals "for this session", the read ledger and
    /// background jobs live as long as it does (its jobs are killed when it
    /// is dropped).
    pub fn session(&self) -> HostSession {
        HostSession {
            tools: self.tools.clone(),
            session: Arc::new(Session::new()),
            ui: self.ui.clone(),
            admission: self.engine.admission().clone(),
            turns: Turns::new(),
        }
    }

    /// The [`Ui`] the host was built with.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn ui(&self) -> &Arc<dyn Ui> {
        &self.ui
    }

    /// Whether the set called `name` is loaded.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn has_set(&self, name: &str) -> bool {
        self.tools.sets().iter().any(|set| set.name() == name)
    }
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The tool called.
    pub tool: String,
    /// Its header: `read_file src/a.rs`, `shell git status`.
    pub header: String,
    /// What the model reads.
    pub text: String,
    /// Whether it failed (or was refused).
    pub is_error: bool,
    /// What a writer changed, as a unified diff.
    pub diff: Option<String>,
    /// How a front end shows it: grouped with its neighbours, or expanded.
    pub presentation: Presentation,
    /// Whether the user was asked and allowed it (now or for the session).
    pub approved: bool,
    /// The background job the call became (`b1`), when it goes on running
    /// after this result (see [`HostSession::jobs`]).
    pub job: Option<String>,
    /// Why it failed, as data (`text` says it to the model); none when it
    /// did not.
    pub failure: Option<Failure>,
}

impl From<Outcome> for CallResult {
    fn from(outcome: Outcome) -> CallResult {
        CallResult {
            approved: outcome.decision.asked(),
            presentation: outcome.presentation,
            tool: outcome.tool,
            header: outcome.result.header,
            text: outcome.result.text,
            is_error: outcome.result.is_error,
            diff: outcome.result.diff,
            job: outcome.job,
            failure: outcome.failure,
        }
    }
}

/// A background job that is still running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// `b1`, `b2`, …
    pub id: String,
    /// The full command line.
    pub command: String,
    /// Its process id.
    pub pid: u32,
    /// Its output file.
    pub log: PathBuf,
    /// Seconds since it started.
    pub elapsed_secs: u64,
    /// The last lines of its output.
    pub last_lines: String,
}

/// One session of calls (see [`Host::session`]).
///
/// A session may be shared between threads: calls from several at once
/// follow the round rule — those that may run in parallel (and need no
/// question) run side by side, every other call runs alone.
pub struct HostSession {
    tools: Arc<AgentTools>,
    pub(crate) session: Arc<Session>,
    ui: Arc<dyn Ui>,
    /// The host's bound on calls in flight.
    admission: Arc<Admission>,
    /// The round rule across concurrent calls, in arrival order: parallel
    /// calls side by side, every other call alone (`admission/turns.rs`).
    turns: Arc<Turns>,
}

/// Calls a session accepted, waiting for their turn: the MCP server takes
/// one as a request is read, so its place in line is the request's.
pub(crate) struct Queued {
    in_flight: InFlight,
    ticket: Ticket,
    cancel: Arc<CallCancel>,
}

/// A call whose turn came: it runs now.
pub(crate) struct Admitted {
    _in_flight: InFlight,
    _turn: Turn,
    cancel: Arc<CallCancel>,
}

impl Admitted {
    /// What cancels the calls, now that they run (before, dropping the
    /// wait withdraws them).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn cancel(&self) -> &Arc<CallCancel> {
        &self.cancel
    }
}

impl Queued {
    /// Waits on this thread for the turn, beside other parallel calls when
    /// `parallel`, alone otherwise.
    fn wait(self, parallel: bool) -> Admitted {
        Admitted {
            _turn: self.ticket.wait(parallel),
            _in_flight: self.in_flight,
            cancel: self.cancel,
        }
    }

    /// The same, waited for by an async task without holding a thread;
    /// dropping the future gives the place up.
    #[cfg(feature = "mcp")]
    pub(crate) async fn turn(self, parallel: bool) -> Admitted {
        let turn = self.ticket.turn(parallel).await;
        Admitted {
            _turn: turn,
            _in_flight: self.in_flight,
            cancel: self.cancel,
        }
    }
}

impl HostSession {
    /// Runs one call through the approval gate and its toolset. `args` is
    /// the arguments object.
    pub fn call(&self, tool: &str, args: serde_json::Value) -> CallResult {
        self.call_as(&self.ui, tool, Arguments::from_value(args))
    }

    /// [`Self::call`] with the arguments as the model wrote them: JSON text,
    /// kept as it is in the audit log.
    pub fn call_json(&self, tool: &str, args: &str) -> CallResult {
        self.call_as(&self.ui, tool, Arguments::new(args.to_string()))
    }

    /// Runs the calls a model issued together: concurrently when every one
    /// may run in parallel and none needs asking, otherwise one after
    /// another. Results come back in call order.
    pub fn round(&self, calls: &[(&str, serde_json::Value)]) -> Vec<CallResult> {
        let calls = calls
            .iter()
            .map(|(tool, args)| (*tool, Arguments::from_value(args.clone())))
            .collect();
        self.round_of(calls)
    }

    /// [`Self::round`] with each call's arguments as JSON text.
    pub fn round_json(&self, calls: &[(&str, &str)]) -> Vec<CallResult> {
        let calls = calls
            .iter()
            .map(|(tool, args)| (*tool, Arguments::new(args.to_string())))
            .collect();
        self.round_of(calls)
    }

    fn round_of(&self, calls: Vec<(&str, Arguments)>) -> Vec<CallResult> {
        let queued = match self.queue(calls.len()) {
            Ok(queued) => queued,
            Err(busy) => {
                return calls
                    .iter()
                    .map(|(tool, _)| Outcome::not_run(tool, Failure::Busy, busy.to_string()).into())
                    .collect();
            }
        };
        let round = self.plan(calls);
        let admitted = queued.wait(round.parallel());
        self.run(admitted, &self.ui, round)
    }

    /// Accepts `calls` calls into the session's line, or says the host is
    /// busy (`admission.rs`).
    pub(crate) fn queue(&self, calls: usize) -> Result<Queued, Busy> {
        Ok(Queued {
            in_flight: self.admission.enter(calls)?,
            ticket: self.turns.ticket(),
            cancel: Arc::default(),
        })
    }

    /// Plans `calls` (tool name, arguments as JSON text), once: what the
    /// round rule reads before their turn, and what they run with after.
    pub(crate) fn plan(&self, calls: Vec<(&str, Arguments)>) -> Round {
        Round::plan(&self.tools, &self.session, calls)
    }

    /// Runs one call with its questions going to `ui` instead of the
    /// session's, once its turn comes.
    pub(crate) fn call_as(&self, ui: &Arc<dyn Ui>, tool: &str, args: Arguments) -> CallResult {
        match self.queue(1) {
            Ok(queued) => {
                let round = self.plan(vec![(tool, args)]);
                let admitted = queued.wait(round.parallel());
                self.call_admitted(admitted, ui, round)
            }
            Err(busy) => Outcome::not_run(tool, Failure::Busy, busy.to_string()).into(),
        }
    }

    /// Runs a planned call whose turn came, its questions going to `ui`
    /// (the MCP server asks the client of each request).
    pub(crate) fn call_admitted(&self, admitted: Admitted, ui: &Arc<dyn Ui>, round: Round) -> CallResult {
        self.run(admitted, ui, round)
            .pop()
            .expect("a round of one call has one outcome")
    }

    /// Runs a round whose turn came; the turn ends with it.
    fn run(&self, admitted: Admitted, ui: &Arc<dyn Ui>, round: Round) -> Vec<CallResult> {
        let outcomes = round.run(&self.tools, &self.session, ui, &admitted.cancel);
        drop(admitted);
        outcomes.into_iter().map(CallResult::from).collect()
    }

    /// Calls the internal entry point `entry` of the set called `set` (the
    /// MCP server's Skills extension asks the `skills` set through
    /// `skills/list` and the like): no model's tool call, so nothing is
    /// asked and nothing may be written. Its text, or why it failed.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn call_entry(&self, set: &str, entry: &str, args: serde_json::Value) -> Result<String, String> {
        let set = self
            .tools
            .sets()
            .iter()
            .find(|s| s.name() == set)
            .ok_or_else(|| format!("no toolset {set:?} is loaded"))?;
        let nobody: Arc<dyn Ui> = Arc::new(crate::caps::ui::NoUi);
        let plan = CallPlan::host_entry(entry, Arguments::from_value(args));
        let result = set.invoke(&self.session, &nobody, &plan, &Cleared::host_entry());
        match result.failure {
            Some(_) => Err(result.result.text),
            None => Ok(result.result.text),
        }
    }

    /// The session's background jobs (MCP's tasks follow them).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn job_table(&self) -> Arc<crate::shell::jobs::Jobs> {
        ShellSession::of(&self.session).jobs().clone()
    }

    /// The background job `id`, running or ended.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn job(&self, id: &str) -> Option<Arc<crate::shell::jobs::Job>> {
        ShellSession::of(&self.session).jobs().find(id)
    }

    /// The notices of background jobs that finished since the last take:
    /// `[background job b1 finished: exit 0 after 42s] make test` and the
    /// output. The model should read them at its next round.
    pub fn take_notices(&self) -> Vec<String> {
        ShellSession::of(&self.session).jobs().take_notices()
    }

    /// Also hands every notice to `listener` the moment its job finishes
    /// (on the job's own thread); it is still queued for [`Self::take_notices`].
    pub fn on_notice(&self, listener: impl Fn(&str) + Send + Sync + 'static) {
        ShellSession::of(&self.session).jobs().listen(Box::new(listener));
    }

    /// The background jobs still running.
    pub fn jobs(&self) -> Vec<JobInfo> {
        ShellSession::of(&self.session)
            .jobs()
            .list()
            .into_iter()
            .map(|job| JobInfo {
                id: job.id,
                command: job.command,
                pid: job.pid,
                log: job.log,
                elapsed_secs: job.elapsed.as_secs(),
                last_lines: job.last_lines,
            })
            .collect()
    }

    /// Kills job `id` and its process tree; false when no such job runs.
    pub fn kill_job(&self, id: &str) -> bool {
        ShellSession::of(&self.session).jobs().kill(id)
    }

    /// Waits until every background job has ended and queued its notice.
    pub fn wait_for_jobs(&self) {
        ShellSession::of(&self.session).jobs().wait_all();
    }

    /// Stops the call running now in this session: a shell command's whole
    /// tree, or a component at its next epoch tick (Esc, Ctrl+C).
    pub fn cancel(&self) {
        self.session.cancel_foreground();
    }
}
