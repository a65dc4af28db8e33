//! The command line: parse, load the config and the agent's toolsets, run the
//! command. Exit codes: 0 all results ok, 1 some result is an error, 2 usage
//! or config error (message on stderr).

mod terminal;

use crate::api::{ApprovalRule, Config, SharedEngine as Engine};
use crate::api::{CallResult, Host, ToolInfo};
use crate::present;
use crate::{NoUi, ScriptedUi, Ui};
use anyhow::{Result, bail};
use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use terminal::TerminalUi;

/// Runs iota's toolsets: WebAssembly components behind a capability jail.
#[derive(Debug, Parser)]
#[command(name = "iota-host", version, about)]
pub struct Cli {
    /// Config file [default: $IOTA_CONFIG, ./.iota/config.yaml, the embedded default].
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The agent whose tools to use [default: the only agent, or `default`].
    #[arg(long, global = true, value_name = "NAME")]
    pub agent: Option<String>,
    /// Project root [default: the git root of the working directory, or the working directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Nobody is asked: gated calls are refused.
    #[arg(long, global = true, conflicts_with = "interactive")]
    pub non_interactive: bool,
    /// Ask on the terminal even when stdin or stderr is not one.
    #[arg(long, global = true)]
    pub interactive: bool,
    /// Answer every question from a JSON list (approvals, choose, confirm), in order.
    #[arg(long, global = true, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Append one JSON line per call to FILE [default: the config's audit: key].
    #[arg(long, global = true, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the agent's tools: name, set, description, schema, approval, parallel, presentation.
    Tools {
        /// One JSON object per tool.
        #[arg(long)]
        json: bool,
    },
    /// Call tools in order in one session: TOOL ARGS [TOOL ARGS ...], ARGS a JSON object.
    Call {
        /// One JSON object per result, then one per background-job notice.
        #[arg(long)]
        json: bool,
        /// Run the calls as one round: concurrently where every call allows it.
        #[arg(long)]
        round: bool,
        /// TOOL ARGS pairs.
        #[arg(required = true, num_args = 2.., value_name = "TOOL ARGS")]
        calls: Vec<String>,
    },
    /// Show a component's capabilities, exports, tools and sha256.
    Inspect {
        /// The component.
        file: PathBuf,
        /// Machine-readable output.
        #[arg(long, conflicts_with = "policy")]
        json: bool,
        /// Print its least-privilege declaration (path, sha256 pin, grant:) for a config.
        #[arg(long)]
        policy: bool,
    },
    /// Print the system-prompt text the enabled sets contribute.
    Prompt,
    /// Fetch oci:// toolsets into the local store and record their digests in the lock beside the config.
    Pull {
        /// Re-resolve tags, show what changed (digests, what the new version asks for) and follow them.
        #[arg(long)]
        update: bool,
        /// The largest blob (component or signature) to fetch, in MiB: a larger one is refused by the size its
        /// manifest declares, before any of it is fetched, and one that runs past its declared size is cut off.
        #[arg(long, value_name = "MIB", default_value_t = crate::api::registry_client::DEFAULT_MAX_BLOB >> 20)]
        max_size: u64,
        /// REGISTRY/REPOSITORY:TAG or @sha256:DIGEST [default: every oci:// toolset of the config].
        #[arg(value_name = "REF")]
        references: Vec<String>,
    },
    /// Push a component (and FILE.sigstore.json, if beside it) to a registry as a Wasm OCI artifact.
    Push {
        /// The component.
        file: PathBuf,
        /// REGISTRY/REPOSITORY:TAG.
        #[arg(value_name = "REF")]
        reference: String,
    },
    /// Serve the agent's tools over MCP on stdio (the main long-running job).
    Serve,
}

/// A failure that exits with status 2.
struct UsageError(anyhow::Error);

/// Runs the CLI; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    raise_open_files_limit();
    match run(cli) {
        Ok(code) => code,
        Err(UsageError(err)) => {
            eprintln!("iota-host: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Raises this process's soft limit of open files to its hard limit. The
/// files components hold open are the process's, shared by every session and
/// call; each store is held to `MAX_HANDLES`, and a soft limit of 1,024 (a
/// common default) is less than one parallel call may hold on a machine of
/// four cores or more. The hard limit is the administrator's and stays.
#[cfg(unix)]
fn raise_open_files_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// Windows keeps no per-process limit of open handles short of memory.
#[cfg(windows)]
fn raise_open_files_limit() {}

/// The project root of the session whose model wrote this command line, when
/// this process is an iota exception (the shell tool sets it); after checking
/// that the line asks for nothing a model may not: no config, answers, audit
/// log or forced terminal of its own choosing.
fn model_root(cli: &Cli) -> Result<Option<PathBuf>> {
    let Some(root) = std::env::var_os(crate::api::MODEL_ROOT_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let refused = [
        ("--config", cli.config.is_some()),
        ("--answers", cli.answers.is_some()),
        ("--audit", cli.audit.is_some()),
        ("--interactive", cli.interactive),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
        bail!(
            "{flag} is refused: this iota-host runs a command line a model wrote (the shell tool's iota exception, {} is set), which may not choose it",
            crate::api::MODEL_ROOT_VAR
        );
    }
    Ok(Some(
        crate::platform::canonicalize(Path::new(&root)).unwrap_or_else(|_| PathBuf::from(root)),
    ))
}

fn run(cli: Cli) -> Result<ExitCode, UsageError> {
    let model_root = model_root(&cli).map_err(UsageError)?;
    let engine = Engine::new().map_err(UsageError)?;
    // A call will need the linker and WASI's runtime: made on another core
    // while the config and the sets load.
    if matches!(cli.command, Command::Call { .. }) {
        crate::api::warm_up(&engine);
    }
    if let (Command::Inspect { file, .. }, Some(model_root)) = (&cli.command, &model_root)
        && !crate::platform::canonicalize(file).is_ok_and(|f| f.starts_with(model_root))
    {
        return Err(UsageError(anyhow::anyhow!(
            "inspect reads only files inside {} here: a command line a model wrote (the shell tool's iota exception) may not read files outside its project",
            model_root.display()
        )));
    }
    if let Some(model_root) = &model_root
        && matches!(cli.command, Command::Pull { .. } | Command::Push { .. })
    {
        return Err(UsageError(anyhow::anyhow!(
            "pull and push are refused here: a command line a model wrote (the shell tool's iota exception, project {}) may not change which components the host runs, nor publish any",
            model_root.display()
        )));
    }
    if let Command::Push { file, reference } = &cli.command {
        print!(
            "{}",
            crate::api::registry_client::push(&engine, file, reference).map_err(UsageError)?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Pull {
        update,
        max_size,
        references,
    } = &cli.command
    {
        let config = Config::discover(cli.config.as_deref()).map_err(UsageError)?;
        let references = if references.is_empty() {
            crate::api::registry_client::references(&config)
                .into_iter()
                .map(|(_, reference)| reference)
                .collect()
        } else {
            references.clone()
        };
        if references.is_empty() {
            return Err(UsageError(anyhow::anyhow!(
                "nothing to pull: config {} declares no oci:// toolset; name a REF",
                config.origin
            )));
        }
        let max_blob = max_size.saturating_mul(1 << 20);
        let (said, warnings) =
            crate::api::registry_client::pull(&engine, &config, &references, *update, max_blob).map_err(UsageError)?;
        for warning in warnings {
            eprintln!("iota-host: warning: {warning}");
        }
        print!("{said}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Inspect { file, json, policy } = &cli.command {
        let config = Config::discover(cli.config.as_deref()).ok();
        let report = crate::api::inspect::inspect(&engine, file, config.as_ref()).map_err(UsageError)?;
        if *policy {
            print!("{}", crate::api::inspect::policy(&report).map_err(UsageError)?);
        } else if *json {
            println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
        } else {
            print!("{}", crate::api::inspect::render(&report));
        }
        return Ok(ExitCode::SUCCESS);
    }

    let config = Config::discover_from(cli.config.as_deref(), model_root.is_none()).map_err(UsageError)?;
    let root = crate::api::project_root(cli.root.as_deref()).map_err(UsageError)?;
    // The root is opened once, here, and used through that handle from then
    // on; an iota line's root is checked on the handle, where it is now, so
    // no link swapped in for its path afterwards changes what it is.
    let project = crate::api::ProjectRoot::open(&root)
        .map(Arc::new)
        .map_err(|e| UsageError(anyhow::anyhow!("cannot open the project root {}: {e}", root.display())))?;
    let inside_protected = |root: &Path, model_root: &Path| {
        root.strip_prefix(model_root)
            .is_ok_and(|inside| crate::api::protected_by_name(&inside.iter().collect::<Vec<_>>()))
    };
    if let Some(model_root) = &model_root
        && !project
            .current_path()
            .is_some_and(|r| r == root && r.starts_with(model_root) && !inside_protected(&r, model_root))
    {
        return Err(UsageError(anyhow::anyhow!(
            "the project root {} is outside {} or inside its .git, .iota or HEAD: a command line a model wrote (the shell tool's iota exception) stays in its session's project, out of what git and iota-host trust",
            root.display(),
            model_root.display()
        )));
    }
    // `serve` asks its client (elicitation) unless told otherwise; its sets are
    // loaded as for a session that can answer, and `ask` is hidden per client.
    // A command line a model wrote has nobody to ask: whatever could answer
    // (its stdin, the client `serve` would ask) is the model's own, so its
    // gated calls are refused as in a non-interactive run.
    let nobody_asked = cli.non_interactive || model_root.is_some();
    let client_asks = matches!(cli.command, Command::Serve) && cli.answers.is_none() && !nobody_asked;
    let ui = if client_asks {
        Arc::new(ScriptedUi::parse("[]").map_err(UsageError)?)
    } else if nobody_asked {
        Arc::new(NoUi)
    } else {
        choose_ui(&cli).map_err(UsageError)?
    };
    let mut builder = Host::builder()
        .config(config)
        .pinned_root(project)
        .ui(ui)
        .engine(engine.clone());
    if let Some(agent) = &cli.agent {
        builder = builder.agent(agent);
    }
    if let Some(audit) = &cli.audit {
        builder = builder.audit(audit);
    }
    let host = builder.build().map_err(|e| UsageError(e.into()))?;
    for warning in host.warnings() {
        eprintln!("iota-host: warning: {warning}");
    }

    match cli.command {
        Command::Tools { json } => {
            print_tools(&host.tools(), json);
            Ok(ExitCode::SUCCESS)
        }
        Command::Prompt => {
            let prompt = host.prompt();
            if !prompt.is_empty() {
                println!("{prompt}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { json, round, calls } => {
            let calls = parse_calls(&calls).map_err(UsageError)?;
            crate::api::cancel_on_interrupt();
            let session = host.session();
            let results = if round {
                session.round_json(&calls)
            } else {
                calls.iter().map(|(tool, args)| session.call_json(tool, args)).collect()
            };
            print_results(&results, json);
            // `call` waits for the session's background jobs, then prints their notices.
            session.wait_for_jobs();
            print_notices(&session.take_notices(), json);
            let failed = results.iter().any(|r| r.is_error);
            drop(session);
            // The process ends here: unmapping every loaded component and
            // freeing the engine would only delay the exit.
            std::mem::forget(host);
            std::mem::forget(engine);
            Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Serve => {
            host.serve_mcp(client_asks).map_err(UsageError)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect { .. } | Command::Pull { .. } | Command::Push { .. } => unreachable!("handled above"),
    }
}

/// Scripted answers when given; else the terminal when interactive (stdin and
/// stderr are terminals, unless forced); else nobody.
fn choose_ui(cli: &Cli) -> Result<Arc<dyn Ui>> {
    if cli.non_interactive {
        return Ok(Arc::new(NoUi));
    }
    if let Some(path) = &cli.answers {
        return Ok(Arc::new(ScriptedUi::from_file(path)?));
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if cli.interactive || terminal {
        Ok(Arc::new(TerminalUi::new()))
    } else {
        Ok(Arc::new(NoUi))
    }
}

/// TOOL ARGS pairs, each ARGS checked to be a JSON object.
fn parse_calls(words: &[String]) -> Result<Vec<(&str, &str)>> {
    if !words.len().is_multiple_of(2) {
        bail!(
            "call takes TOOL ARGS pairs, ARGS a JSON object (e.g. read_file '{{\"path\":\"README.md\"}}'); got an odd number of words"
        );
    }
    words
        .chunks(2)
        .map(|pair| {
            let (tool, args) = (&pair[0], &pair[1]);
            match serde_json::from_str::<serde_json::Value>(args) {
                Ok(serde_json::Value::Object(_)) => Ok((tool.as_str(), args.as_str())),
                _ => bail!("the arguments of {tool} must be a JSON object, got: {args}"),
            }
        })
        .collect()
}

fn print_tools(tools: &[ToolInfo], json: bool) {
    let mut out = std::io::stdout().lock();
    for tool in tools {
        let approval = if tool.asks_first {
            ApprovalRule::Required
        } else {
            ApprovalRule::Never
        }
        .word();
        if json {
            let value = serde_json::json!({
                "name": tool.name, "set": tool.set, "description": tool.description,
                "parameters": tool.parameters, "approval": approval, "parallel": tool.parallel,
                "presentation": tool.presentation.word(), "read_only": tool.read_only,
            });
            let _ = writeln!(out, "{value}");
        } else {
            let _ = writeln!(
                out,
                "{} ({}): approval {approval}, {}, {}\n  {}\n  parameters: {}",
                tool.name,
                tool.set,
                if tool.parallel { "parallel" } else { "serial" },
                tool.presentation.word(),
                tool.description,
                serde_json::to_string(&*tool.parameters).unwrap_or_default()
            );
        }
    }
}

/// Text mode: stdout is exactly what the model reads; the header (and a
/// writer's diff) go to stderr when it is a terminal. JSON mode: one object
/// per result.
fn print_results(results: &[CallResult], json: bool) {
    let mut out = std::io::stdout().lock();
    let stderr_terminal = std::io::stderr().is_terminal();
    let stdout_terminal = std::io::stdout().is_terminal();
    for result in results {
        if json {
            let mut value = serde_json::json!({
                "tool": result.tool, "header": result.header, "presentation": result.presentation.word(),
                "text": result.text, "is_error": result.is_error,
            });
            if let Some(diff) = &result.diff {
                value["diff"] = diff.clone().into();
            }
            let _ = writeln!(out, "{value}");
            continue;
        }
        if stderr_terminal {
            eprintln!("{}", present::header(&result.header, present::colour(true)));
            if let Some(diff) = &result.diff {
                eprintln!("{}", present::inert(diff));
            }
        }
        // On a terminal the reader is a person, not the model.
        let text = if stdout_terminal {
            present::inert(&result.text)
        } else {
            result.text.as_str().into()
        };
        let _ = out.write_all(text.as_bytes());
        if !result.text.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
    }
    let _ = out.flush();
}

/// Background-job notices: text, or one `{"notice": "..."}` object each.
fn print_notices(notices: &[String], json: bool) {
    let terminal = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    for notice in notices {
        if json {
            let _ = writeln!(out, "{}", serde_json::json!({ "notice": notice }));
        } else if terminal {
            let _ = writeln!(out, "{}", present::inert(notice));
        } else {
            let _ = writeln!(out, "{notice}");
        }
    }
}
