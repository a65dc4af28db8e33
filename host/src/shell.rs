//! The native `shell` toolset: one tool, `shell`, that runs a command line in a
//! fresh interpreter — sandboxed where the OS has a sandbox, with approval
//! where it has none — and returns its combined output under the spec's caps.
//!
//! `config.rs` decodes `tools.shell`; `sandbox.rs` builds the bubblewrap
//! command line or Seatbelt profile; `run.rs` spawns, streams and kills;
//! `output.rs` is the cap; `jobs.rs` the background jobs; `iota.rs` the one
//! command line that may leave the sandbox.

pub mod config;
#[cfg(unix)]
pub mod credentials;
pub mod dialect;
pub mod environment;
pub mod home;
pub mod iota;
pub mod jobs;
pub mod output;
#[cfg(unix)]
pub mod placeholders;
#[cfg(unix)]
pub mod processes;
pub mod redirect;
pub mod run;
pub mod sandbox;
#[cfg(unix)]
mod sandboxed;
#[cfg(target_os = "linux")]
pub mod seccomp;
pub mod session;

use crate::caps::ui::Ui;
use crate::project::ProjectRoot;
use crate::session::Session;
use crate::toolset::{
    ApprovalRule, Arguments, CallPlan, Cleared, Failure, Presentation, Ran, Resolved, ToolResult, ToolSpec, Toolset,
};
use config::{SandboxMode, ShellConfig};
use dialect::Dialect;
use iota_toolset::args::decode;
use run::{Ending, Launch, Running};
use sandbox::Sandbox;
use schemars::JsonSchema;
use serde::Deserialize;
use session::ShellSession;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The tool's name, on every platform and under every interpreter.
pub const NAME: &str = "shell";
/// A foreground call waits this long, then continues as a background job.
pub const YIELD_AFTER: Duration = Duration::from_secs(20);

/// `timeout` refusal.
pub const BAD_TIMEOUT: &str = "timeout must be a positive number of seconds";

/// Set in the environment of an iota exception's process to the project
/// root: that process runs a command line a model wrote, so it refuses the
/// options that would let that line loosen what it may do (`cli.rs`).
pub const MODEL_ROOT_VAR: &str = "IOTA_MODEL_ROOT";

/// How one call's command runs.
#[derive(Debug)]
pub enum Regime {
    /// Inside the OS sandbox.
    Sandboxed,
    /// As the user: an unsandboxed set (after approval, or `auto_run`).
    Unsandboxed,
    /// The iota exception: this very binary, as the user, with these words,
    /// in the directory held when the line was resolved.
    Iota(Box<IotaLine>),
}

/// An iota line as resolved: its words and redirections, and the directory
/// it runs in, reached from the pinned root with no link on the way and held
/// from the decision to the spawn.
#[derive(Debug)]
pub struct IotaLine {
    /// The words and redirections the grammar proved.
    pub command: iota::SimpleCommand,
    /// Its directory relative to the root, `..` folded.
    cwd_beneath: PathBuf,
    /// The same directory, held (the child starts in it by descriptor).
    #[cfg(unix)]
    cwd: std::os::fd::OwnedFd,
}

/// The shell's reading of a call's arguments ([`CallPlan::detail`]).
struct Planned {
    args: Args,
    /// The directory it runs in: the root joined with `cwd`.
    cwd: PathBuf,
    /// The iota call it would make (`ShellToolset::iota_candidate`).
    iota: Option<iota::SimpleCommand>,
}

/// The interpreter that runs every call (`dialect.rs`): `$IOTA_SHELL`, else
/// bash (on Windows the first of Git Bash, pwsh, powershell, cmd).
#[derive(Debug, Clone)]
pub struct Interpreter {
    /// As named (a path or a name on PATH).
    pub program: String,
    /// Its family: its flags and every idiom the model reads.
    pub dialect: Dialect,
    /// `program` found on a trusted PATH entry, for unsandboxed runs.
    pub resolved: Option<PathBuf>,
}

impl Interpreter {
    /// The interpreter this machine runs calls with, or why it has none
    /// (on Windows only: the set is refused with it).
    pub fn from_env() -> Result<Interpreter, &'static str> {
        let program = dialect::discover(&dialect::Machine::here())?;
        Ok(Interpreter {
            dialect: Dialect::of(&program),
            program,
            resolved: None,
        })
    }

    /// The same with a bare program name resolved now, on PATH, outside the
    /// directories sandboxed commands may write, so that an unsandboxed run
    /// never starts a `bash` a sandboxed one planted. (Inside the sandbox
    /// the name is looked up there, where a planted one runs sandboxed.)
    fn resolved(mut self, writable: &[PathBuf]) -> Interpreter {
        if !self.program.contains('/')
            && let Some(found) = sandbox::find_trusted(&self.program, writable)
        {
            self.resolved = Some(found);
        }
        self
    }

    fn argv(&self, line: &str) -> Vec<OsString> {
        let mut argv = vec![OsString::from(&self.program)];
        argv.extend(self.dialect.flags().iter().map(OsString::from));
        argv.push(line.into());
        argv
    }
}

/// The shell set, configured.
pub struct ShellToolset {
    config: ShellConfig,
    sandbox: Sandbox,
    root: PathBuf,
    /// `root` with its links resolved, for telling whether a directory is in it.
    canonical_root: PathBuf,
    /// The root, pinned: what the sandbox binds and walks, whatever the
    /// root's path has become (`project.rs`).
    project: Arc<ProjectRoot>,
    interpreter: Interpreter,
    running_binary: Option<PathBuf>,
    /// Why sandboxed commands cannot run with this root and config
    /// (`sandbox::refusal`); checked again for every sandboxed command, so
    /// the `process` runner, which is built without the set's load checks,
    /// obeys it too.
    #[cfg_attr(windows, allow(dead_code))]
    refused: Option<String>,
    spec: Vec<crate::description::Tool>,
    /// Whether sandboxed commands get the cache as an overlay (decided
    /// once, with the sandbox).
    cache_overlay: bool,
    /// The credentials found under the home directory, kept until a
    /// directory the search read moves (`credentials.rs`).
    #[cfg(unix)]
    credentials: std::sync::Mutex<credentials::Discovered>,
}

impl ShellToolset {
    /// The set for `config` at `root`, which it opens and holds (see
    /// [`ShellToolset::pinned`]); panics where `root` cannot be opened.
    pub fn new(config: ShellConfig, root: &Path) -> ShellToolset {
        let project = ProjectRoot::open(root).unwrap_or_else(|e| panic!("cannot open {}: {e}", root.display()));
        ShellToolset::pinned(config, &Arc::new(project))
    }

    /// The set for `config` at the pinned root `project`; the sandbox is
    /// detected here, once, never from a directory sandboxed commands may
    /// write.
    pub fn pinned(config: ShellConfig, project: &Arc<ProjectRoot>) -> ShellToolset {
        let root = project.path();
        let sandbox = if config.sandbox == SandboxMode::Off {
            Sandbox::Unavailable
        } else {
            Sandbox::detect(&sandbox::writable_dirs(&config, root))
        };
        ShellToolset::with_sandbox(config, project, sandbox)
    }

    /// The same with an explicit sandbox (tests, embedders that decided already).
    pub fn with_sandbox(config: ShellConfig, project: &Arc<ProjectRoot>, sandbox: Sandbox) -> ShellToolset {
        let root = project.path();
        // Where it has none (Windows) the set was refused at load; `cmd` then
        // stands in for the process runner, which never runs without one.
        let interpreter = Interpreter::from_env()
            .unwrap_or_else(|_| Interpreter {
                program: "cmd.exe".into(),
                dialect: Dialect::Cmd,
                resolved: None,
            })
            .resolved(&sandbox::writable_dirs(&config, root));
        let sandboxed = config.sandbox == SandboxMode::Auto && sandbox.is_available();
        let spec = ToolSpec {
            name: NAME.into(),
            description: description(&interpreter, sandboxed, config.network),
            parameters: parameters(interpreter.dialect),
            approval: if config.auto_run || sandboxed {
                ApprovalRule::Never
            } else {
                ApprovalRule::Required
            },
            parallel: true,
            presentation: Presentation::Group,
            read_only: false,
        };
        let running_binary = std::env::current_exe()
            .ok()
            .and_then(|p| crate::platform::canonicalize(&p).ok());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let refused = sandbox::refusal(&config, root, home.as_deref());
        let cache_overlay = sandboxed && sandbox::overlay_available(&sandbox);
        ShellToolset {
            refused,
            cache_overlay,
            #[cfg(unix)]
            credentials: Default::default(),
            config,
            sandbox,
            root: root.to_path_buf(),
            canonical_root: crate::platform::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
            project: project.clone(),
            interpreter,
            running_binary,
            spec: crate::description::check(NAME, vec![spec]).expect("the shell's own description is within bounds"),
        }
    }

    /// Whether calls of this set are sandboxed (the iota exception aside).
    pub fn sandboxed(&self) -> bool {
        self.config.sandbox == SandboxMode::Auto && self.sandbox.is_available()
    }

    /// The iota call `line` run in `cwd` would make, when the set is
    /// sandboxed: one simple command whose program is this very binary on
    /// PATH now. Found once, when the call is planned: whatever PATH says
    /// later, what such a call runs is this process's own binary.
    fn iota_candidate(&self, line: &str, cwd: &Path) -> Option<iota::SimpleCommand> {
        if !self.sandboxed() {
            return None;
        }
        iota::iota_call(
            line,
            self.running_binary.as_deref(),
            cwd,
            std::env::var("PATH").ok().as_deref(),
        )
    }

    /// How a call runs, decided at its turn: a sandboxed set's iota
    /// candidate leaves the sandbox from a directory of the project reached
    /// with no link on the way (held from now to the spawn; outside it the
    /// child's relative paths, its config's `write:` entries say, would
    /// resolve elsewhere), its redirections all allowed.
    fn regime(&self, candidate: Option<&iota::SimpleCommand>, cwd: &Path) -> Regime {
        if !self.sandboxed() {
            return Regime::Unsandboxed;
        }
        let Some(command) = candidate else {
            return Regime::Sandboxed;
        };
        let Some(cwd_beneath) = crate::project::fold_beneath(self.project.path(), cwd) else {
            return Regime::Sandboxed;
        };
        let Ok(held) = self.pin_dir(&cwd_beneath) else {
            return Regime::Sandboxed;
        };
        if !redirect::allowed(&command.redirections, &self.project, &cwd_beneath) {
            return Regime::Sandboxed;
        }
        #[cfg(windows)]
        let () = held;
        Regime::Iota(Box::new(IotaLine {
            command: command.clone(),
            cwd_beneath,
            #[cfg(unix)]
            cwd: held,
        }))
    }

    /// The directory `relative` beneath the pinned root, opened with no link
    /// followed on the way: what an iota line's child starts in.
    #[cfg(unix)]
    fn pin_dir(&self, relative: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
        use rustix::fs::OFlags;
        self.project
            .open_beneath(relative, crate::platform::O_PATH | OFlags::DIRECTORY)
    }

    /// Windows never leaves a sandbox: nothing is started by descriptor.
    #[cfg(windows)]
    fn pin_dir(&self, _relative: &Path) -> std::io::Result<()> {
        Ok(())
    }

    /// The command as the header and a background job's label show it:
    /// `cd DIR && LINE`, marked when it runs outside the sandbox.
    fn shown(&self, args: &Args, regime: &Regime) -> String {
        let line = &args.command;
        let mut shown = match &args.cwd {
            Some(cwd) => self.interpreter.dialect.in_directory(cwd, line),
            None => line.clone(),
        };
        if matches!(regime, Regime::Iota(_)) {
            shown.push_str(" (outside the sandbox)");
        }
        shown
    }

    /// Starts `line` in `cwd` under `regime`, writing its output to a log
    /// named after the session's next job id: the one start path of the
    /// model's commands and a component's.
    fn start(
        &self,
        session: &Session,
        line: &str,
        cwd: &Path,
        regime: &Regime,
        timeout: Option<Duration>,
    ) -> Result<Started, String> {
        if !cwd.is_dir() {
            let why = std::fs::metadata(cwd)
                .err()
                .map_or("Not a directory".to_string(), |e| e.kind().to_string());
            return Err(format!(
                "failed to run: cannot use {} as the working directory: {why}",
                cwd.display()
            ));
        }
        // What an iota child killed by its timeout left (its scratch
        // directory, with whatever its sandbox wrote to /tmp) goes now, not
        // at the next start of a host.
        crate::scratch::sweep_soon(&std::env::temp_dir());
        // The log directory first: the sandbox shows it only if it exists.
        let commands = ShellSession::of(session);
        let id = commands.jobs().next_id();
        let log = session
            .jobs_dir()
            .map_err(|e| format!("failed to run: {e}"))?
            .join(format!("{id}.log"));
        let (launch, contained) = self
            .launch(line, cwd, session, regime)
            .map_err(|e| format!("failed to run: {e}"))?;
        let log_cap = run::LogCap {
            own: self.config.max_log,
            session: commands.log_budget(self.config.max_log),
        };
        let running = Running::start(launch, cwd, log.clone(), log_cap, timeout, contained)
            .map_err(|e| format!("failed to run: {e}"))?;
        Ok(Started { running, log, id })
    }

    /// What to start for `line` in `regime`, and whether a PID namespace
    /// contains everything it starts.
    // On Windows `Launch` has no more fields than the iota line's sets.
    #[cfg_attr(windows, allow(clippy::needless_update))]
    fn launch(&self, line: &str, cwd: &Path, session: &Session, regime: &Regime) -> std::io::Result<(Launch, bool)> {
        let argv = self.interpreter.argv(line);
        let command = match regime {
            Regime::Unsandboxed => {
                let mut argv = argv;
                if let Some(resolved) = &self.interpreter.resolved {
                    argv[0] = resolved.clone().into_os_string();
                }
                return Ok((
                    Launch {
                        argv,
                        ..Launch::default()
                    },
                    false,
                ));
            }
            Regime::Iota(line) => line,
            Regime::Sandboxed => return self.sandboxed_launch(argv, cwd, session),
        };
        // Not bash: the words the parser proved, run by this process's own
        // binary (through /proc/self/exe, so a file swapped in at its path
        // after the check is not what runs), with the whole environment (a
        // child agent needs its API key) and the model-root mark.
        let program: OsString = if cfg!(target_os = "linux") {
            "/proc/self/exe".into()
        } else {
            self.running_binary.clone().unwrap_or_default().into()
        };
        // A relative $IOTA_CONFIG is made absolute here: in the child it would
        // be read from the directory the model chose, which the sandbox writes.
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| k != MODEL_ROOT_VAR)
            .map(|(k, v)| {
                if k == "IOTA_CONFIG" && !v.is_empty() {
                    let absolute = std::path::absolute(&v).unwrap_or_else(|_| PathBuf::from(&v));
                    (k, absolute.into_os_string())
                } else {
                    (k, v)
                }
            })
            .collect();
        env.push((MODEL_ROOT_VAR.into(), self.root.clone().into_os_string()));
        let mut argv = vec![program];
        argv.extend(command.command.words[1..].iter().map(OsString::from));
        // Performed now, in bash's order, each file checked again as it is
        // opened (`redirect.rs`: beneath the pinned root along the
        // directory's path as resolved, no link followed, nothing
        // protected): one that fails ends the call here. The child starts
        // in the directory held since the line was resolved, by its
        // descriptor, whatever its path has become since.
        let streams = redirect::perform(&command.command.redirections, &self.project, &command.cwd_beneath)
            .map_err(std::io::Error::other)?;
        #[cfg(unix)]
        let pinned = command.cwd.try_clone()?;
        Ok((
            Launch {
                argv,
                arg0: Some(command.command.words[0].clone().into()),
                env: Some(env),
                streams,
                #[cfg(unix)]
                cwd: Some(pinned),
                ..Launch::default()
            },
            false,
        ))
    }

    /// No sandbox exists on Windows: nothing is ever sandboxed there.
    #[cfg(windows)]
    fn sandboxed_launch(&self, _: Vec<OsString>, _: &Path, _: &Session) -> std::io::Result<(Launch, bool)> {
        Err(std::io::Error::other("no sandbox exists on Windows"))
    }

    fn run(&self, session: &Arc<Session>, planned: &Planned, regime: &Regime, call: &Cleared) -> Result<String, Ran> {
        let args = &planned.args;
        let shown = self.shown(args, regime);
        let header = headed(args, &shown);
        let failed = |failure: Failure| {
            let header = header.clone();
            move |text: String| Ran::failed(failure, ToolResult::failure(&header, text))
        };
        let line = args.command.as_str();
        let timeout = parse_timeout(args).map_err(failed(Failure::InvalidArguments))?;
        let background = args.background.unwrap_or(false);
        let cwd = &planned.cwd;
        let commands = ShellSession::of(session);
        let jobs = commands.jobs();
        if background && !jobs.has_room() {
            return Err(failed(Failure::Tool)(format!(
                "too many background jobs running ({}); wait for one to finish",
                jobs::MAX_JOBS
            )));
        }
        let Started { running, log, id } = self
            .start(session, line, cwd, regime, timeout)
            .map_err(failed(Failure::Host))?;
        let label = jobs::label(&shown);
        if background {
            jobs.adopt(id.clone(), label, line.to_string(), running.clone());
            call.became_job(&id);
            return Ok(format!(
                "Started background job {id} (pid {}). Output: {}\nA notice with its exit status and output arrives when it finishes; run `{}` to see progress meanwhile.",
                running.pid,
                log.display(),
                self.interpreter.dialect.tail(&log)
            ));
        }
        let room = jobs.has_room();
        commands.track_foreground(&running);
        call.cancel().track(&running);
        let ending = running.wait(if room { Some(YIELD_AFTER) } else { None });
        let Some(ending) = ending else {
            let so_far = running.output();
            jobs.adopt(id.clone(), label, line.to_string(), running.clone());
            call.became_job(&id);
            return Ok(format!(
                "Still running after {} as background job {id} (pid {}). Output so far:\n{}\nA notice with its exit status and output arrives when it finishes; do not poll (`{}` only if you need progress).",
                run::duration(YIELD_AFTER),
                running.pid,
                so_far.strip_suffix('\n').unwrap_or(&so_far),
                self.interpreter.dialect.follow(&log)
            ));
        };
        let _ = std::fs::remove_file(&log);
        if matches!(regime, Regime::Iota(_)) {
            // An iota child stopped by its timeout could not remove its
            // scratch directory: it goes now (the child has exited).
            crate::scratch::sweep(&std::env::temp_dir());
        }
        let mut text = outcome(&running.output(), &ending).map_err(|(failure, text)| failed(failure)(text))?;
        if !room {
            text.push_str(&format!(
                "\n[waited to the end instead of moving to the background: too many background jobs running ({})]",
                jobs::MAX_JOBS
            ));
        }
        Ok(text)
    }
}

impl crate::caps::process::CommandRunner for ShellToolset {
    /// Runs a command line for a component granted `process`: the shell set's
    /// sandbox and approval rules, waited for to the end (never a background
    /// job). The iota exception is the model's alone: a component's command
    /// never leaves the sandbox.
    fn run_for_component(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        line: &str,
        cwd: Option<&str>,
        timeout: Option<Duration>,
        cancel: Option<&crate::session::CallCancel>,
    ) -> Result<(String, Option<i32>), String> {
        let header = format!("{NAME} {line}");
        crate::approval::gate_component_command(
            session,
            ui,
            NAME,
            &header,
            !self.config.auto_run && !self.sandboxed(),
        )?;
        let cwd = cwd.map_or_else(|| self.root.clone(), |c| self.root.join(c));
        let regime = if self.sandboxed() {
            Regime::Sandboxed
        } else {
            Regime::Unsandboxed
        };
        let Started { running, log, .. } = self.start(session, line, &cwd, &regime, timeout)?;
        ShellSession::of(session).track_foreground(&running);
        if let Some(cancel) = cancel {
            cancel.track(&running);
        }
        let ending = running.wait(None);
        let _ = std::fs::remove_file(&log);
        let exit = match ending {
            Some(Ending::Exit(code)) => Some(code),
            _ => None,
        };
        Ok((running.output(), exit))
    }
}

/// The spec's outcome table, after the command ran: `Err` for the error rows.
pub fn outcome(output: &str, ending: &Ending) -> Result<String, (Failure, String)> {
    let with = |note: String| {
        if output.is_empty() {
            note
        } else if output.ends_with('\n') {
            format!("{output}{note}")
        } else {
            format!("{output}\n{note}")
        }
    };
    // bubblewrap could not start the interpreter inside the sandbox: the
    // spec's "could not start", not the command's exit.
    let exec_failed = output
        .strip_suffix('\n')
        .unwrap_or(output)
        .strip_prefix("bwrap: execvp ")
        .filter(|why| !why.contains('\n'));
    if let (Ending::Exit(1), Some(why)) = (ending, exec_failed) {
        return Err((Failure::Host, format!("failed to run: {why}")));
    }
    match ending {
        Ending::TimedOut(after) => Err((
            Failure::TimeLimit,
            with(format!("[command timed out after {}]", run::duration(*after))),
        )),
        Ending::Cancelled | Ending::Killed => Err((Failure::Cancelled, with("[command cancelled]".to_string()))),
        Ending::Exit(0) if output.is_empty() => Ok("[command produced no output]".to_string()),
        Ending::Exit(0) => Ok(output.strip_suffix('\n').unwrap_or(output).to_string()),
        Ending::Exit(code) => Err((Failure::Tool, with(format!("[exit code {code}]")))),
    }
}

/// `shell [(background)] SHOWN`.
fn headed(args: &Args, shown: &str) -> String {
    let background = if args.background == Some(true) {
        " (background)"
    } else {
        ""
    };
    format!("{NAME}{background} {shown}")
}

/// A command [`ShellToolset::start`] started.
struct Started {
    /// The running process tree.
    running: Arc<Running>,
    /// The log its output goes to.
    log: PathBuf,
    /// The job id the log is named after (`b3`).
    id: String,
}

fn parse_timeout(args: &Args) -> Result<Option<Duration>, String> {
    let Some(value) = &args.timeout else {
        return Ok(None);
    };
    let secs = match value {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match secs {
        Some(s) if s > 0.0 && s.is_finite() && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(BAD_TIMEOUT.to_string()),
    }
}

/// The home directory, when there is one.
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// `$XDG_CACHE_HOME`, else `~/.cache`: the spec's cache directory.
pub fn cache_dir_path() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
}

/// The arguments of a shell call. (The tool's description is [`description`]:
/// it depends on the interpreter and the sandbox.)
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The command line, e.g. go test ./... 2>&1 | tail -20
    pub command: String,
    /// Working directory; relative paths are resolved against the project root. Default: the project root.
    pub cwd: Option<String>,
    /// Kill the command after this many seconds. Default: none.
    // Decoded by `parse_timeout`, so a bad value gets the spec's own text.
    #[schemars(with = "Option<f64>")]
    pub timeout: Option<serde_json::Value>,
    /// Start the command and return at once with a job id (servers, watchers, child agents). Default false.
    pub background: Option<bool>,
}

/// The description the model reads: the interpreter in its first sentence,
/// then the regime it runs in.
pub fn description(interpreter: &Interpreter, sandboxed: bool, network: bool) -> String {
    let name = Path::new(&interpreter.program)
        .file_name()
        .map_or(interpreter.program.clone(), |n| n.to_string_lossy().into_owned());
    let regime = if !sandboxed {
        "Commands run WITHOUT a sandbox on this system, with the user's full permissions — be conservative.".to_string()
    } else if network {
        "Commands run inside an OS sandbox: file writes are confined to the project root and temp/cache directories (writes elsewhere fail with permission errors), and network access is allowed.".to_string()
    } else {
        "Commands run inside an OS sandbox: file writes are confined to the project root and temp/cache directories (writes elsewhere fail with permission errors), and network access is BLOCKED.".to_string()
    };
    let dialect = interpreter.dialect;
    format!(
        "Runs one command line with {name} ({} {} \"<command>\") and returns its combined stdout and stderr. {regime} \
Nothing carries over between calls — environment variables, functions, aliases and cd all reset — so repeat what a command depends on. \
Output is capped at 32 KB and 512 lines; {} \
A command still running after 20 s continues as a background job and its result arrives later as a notice; \
set background: true for servers, watchers and child agents (a job that must outlive the session detaches itself with {}). \
Never poll a job.",
        interpreter.program,
        dialect.flags().join(" "),
        dialect.advice(),
        dialect.detach()
    )
}

/// The parameters' schema (JSON), the command's example in `dialect`.
fn parameters(dialect: Dialect) -> String {
    let schema = iota_toolset::tool::describe::<Args>().1;
    if dialect == Dialect::Posix {
        return schema;
    }
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&schema) else {
        return schema;
    };
    if let Some(serde_json::Value::String(text)) = value.pointer_mut("/properties/command/description") {
        *text = text.replace(Dialect::Posix.example(), dialect.example());
    }
    value.to_string()
}

impl Toolset for ShellToolset {
    fn name(&self) -> &str {
        NAME
    }

    fn tools(&self) -> &[crate::description::Tool] {
        &self.spec
    }

    fn prompt(&self) -> Option<String> {
        None
    }

    fn notices(&self) -> Vec<String> {
        if self.config.sandbox == SandboxMode::Auto && !self.sandbox.is_available() {
            let failed = Sandbox::failed_bwrap(&sandbox::writable_dirs(&self.config, &self.root));
            return failed
                .map(|bwrap| {
                    format!(
                        "toolset \"shell\": {} is installed but cannot make a sandbox here (run `{} --unshare-user --unshare-pid --ro-bind / / --proc /proc --dev /dev true` to see why); commands run WITHOUT a sandbox, with your permissions{}",
                        bwrap.display(),
                        bwrap.display(),
                        if self.config.auto_run {
                            ", and without asking: auto_run is on"
                        } else {
                            ", and each asks first"
                        }
                    )
                })
                .into_iter()
                .collect();
        }
        if !self.sandboxed() {
            return Vec::new();
        }
        let Some(cache) = cache_dir_path() else {
            return Vec::new();
        };
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if self.cache_overlay || self.config.write.iter().any(|w| canonical(w) == canonical(&cache)) {
            return Vec::new();
        }
        let why = match &self.sandbox {
            Sandbox::Bubblewrap(_) => format!(
                "sandboxed commands write a cache directory of this project's own instead of {}: this machine's bubblewrap cannot mount an overlay (bubblewrap 0.9 or later can), so they neither see what is in it nor change it",
                cache.display()
            ),
            _ => format!(
                "{} is read-only to sandboxed commands: the sandbox cannot give them a cache of their own here",
                cache.display()
            ),
        };
        let notice = format!("toolset \"shell\": {why}; name it under write: to let them write the real one");
        // Said once for a project (remembered in the host's state), not at
        // every start.
        let memo = crate::engine::sha256_hex(format!("{notice}|{}", self.canonical_root.display()).as_bytes());
        let memo = format!("said-{}", &memo[..32]);
        match crate::host_state::StateDir::open_default() {
            Ok(state) if state.read(&memo).is_some() => Vec::new(),
            Ok(state) => {
                let _ = state.write(&memo, b"said\n");
                vec![notice]
            }
            Err(_) => vec![notice],
        }
    }

    fn open_world(&self) -> bool {
        self.config.network || !self.sandboxed()
    }

    fn plan(&self, spec: &crate::description::Tool, args: Arguments) -> Result<CallPlan, String> {
        let decoded = decode::<Args>(args.text())?;
        let cwd = match &decoded.cwd {
            Some(cwd) => self.root.join(cwd),
            None => self.root.clone(),
        };
        let iota = self.iota_candidate(&decoded.command, &cwd);
        let may_leave = iota.is_some();
        // "Allow for this session" of an iota call allows that exact line in
        // that directory, never the next line that happens to qualify.
        let scope = if may_leave {
            format!("{}\n{}\n{}", spec.name, cwd.display(), decoded.command)
        } else {
            spec.name.clone()
        };
        Ok(CallPlan {
            may_write: true,
            may_ask: !self.config.auto_run && (!self.sandboxed() || may_leave),
            scope,
            detail: Box::new(Planned {
                args: decoded,
                cwd,
                iota,
            }),
            ..CallPlan::of(spec, args)
        })
    }

    fn resolve(&self, plan: &CallPlan) -> Resolved {
        let planned = plan.detail::<Planned>().expect("a shell call's plan is the shell's");
        let regime = self.regime(planned.iota.as_ref(), &planned.cwd);
        let header = headed(&planned.args, &self.shown(&planned.args, &regime));
        let question = match &planned.args.cwd {
            Some(cwd) => crate::approval::annotate_cwd(&header, &self.root, cwd),
            None => header.clone(),
        };
        let approval = match regime {
            _ if self.config.auto_run => ApprovalRule::Never,
            Regime::Unsandboxed | Regime::Iota(_) => ApprovalRule::Required,
            Regime::Sandboxed => ApprovalRule::Never,
        };
        Resolved {
            header,
            question,
            approval,
            write: Default::default(),
            detail: Box::new(regime),
        }
    }

    fn preview(&self, _: &Arc<Session>, _: &CallPlan, _: &Resolved) -> Option<String> {
        None
    }

    fn invoke(&self, session: &Arc<Session>, _ui: &Arc<dyn Ui>, plan: &CallPlan, call: &Cleared) -> Ran {
        let planned = plan.detail::<Planned>().expect("a shell call's plan is the shell's");
        let regime = call
            .resolved()
            .detail::<Regime>()
            .expect("a shell call's resolution is the shell's");
        match self.run(session, planned, regime, call) {
            Ok(text) => Ran::from_tool(ToolResult {
                text,
                is_error: false,
                header: call.resolved().header.clone(),
                diff: None,
            }),
            Err(failed) => failed,
        }
    }
}
