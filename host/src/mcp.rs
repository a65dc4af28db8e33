//! `iota-host serve`: the agent's tools over MCP on stdio, with the official
//! Rust SDK (rmcp). One connection is one session: approvals, the read ledger
//! and background jobs live as long as it does, and its jobs are killed when
//! it closes. Logging goes to stderr only; stdout is the protocol.
//!
//! Both protocol eras are served. Up to 2025-11-25 (the `initialize`
//! handshake) questions are elicitation requests sent while the call waits;
//! from 2026-07-28 (`server/discover`, metadata on every request) they are
//! multi round-trip requests ([`rounds`]): the call answers
//! `InputRequiredResult` and the client's retry carries the answer. One
//! decision path serves both — the approval gate and the components ask a
//! [`Ui`]; only how a form reaches the client differs.

use crate::api::Arguments;
use crate::api::{CallResult, Host, HostSession};
use crate::builtin_sets::needs_someone_to_answer;
use crate::{NoUi, Ui};
use arrivals::Arrivals;
use elicitation::{FormUi, PeerCarrier};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, GetSkillRequestParams,
    GetSkillResult, GetTaskParams, GetTaskResult, Implementation, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use rounds::{Replay, Rounds, Stop};
use skills::Skills;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tasks::Tasks;

mod arrivals;
pub mod elicitation;
pub mod input;
pub mod rounds;
pub mod skills;
pub mod tasks;

/// How often a call whose request carries a progress token reports it.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The MCP server of one connection (clones share its session).
#[derive(Clone)]
pub struct McpServer {
    host: Arc<Host>,
    /// The connection's session; concurrent requests follow its round rule.
    session: Arc<HostSession>,
    /// Call requests' places in the session's line, taken as they are read.
    arrivals: Arc<Arrivals>,
    /// Questions go here when given (`--answers`, `--non-interactive`);
    /// otherwise to the client, when it can answer forms.
    ui: Option<Arc<dyn Ui>>,
    /// The sets' system-prompt text, computed before the async runtime starts
    /// (synchronous WASI must not run on it).
    instructions: String,
    /// Multi round-trip state: the sealing key and spent states.
    rounds: Arc<Rounds>,
    /// Background jobs handed to the client as tasks.
    tasks: Arc<Tasks>,
    /// Logging as the client asked for it (see [`LogGate`]).
    logs: Arc<LogGate>,
    /// The Skills extension, when the agent has the `skills` set.
    skills: Option<Arc<Skills>>,
}

/// When a finished job's notice also goes out as a log message: always to
/// a handshake-era client, and to a 2026-07-28 client only while a request
/// that opted in (`io.modelcontextprotocol/logLevel`, SEP-2577) runs.
#[derive(Default)]
struct LogGate {
    modern: AtomicBool,
    opted_in: AtomicUsize,
}

impl LogGate {
    fn open(&self) -> bool {
        !self.modern.load(Ordering::Relaxed) || self.opted_in.load(Ordering::Relaxed) > 0
    }
}

/// Whether a request speaks the 2026-07-28 protocol or newer.
fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Whether the request's client answers elicitation forms.
fn answers_forms(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|c| c.elicitation.is_some())
}

impl McpServer {
    /// A server for `host`'s tools, with a fresh session whose questions go
    /// to `ui` (or, without one, to the client).
    pub fn new(host: Arc<Host>, ui: Option<Arc<dyn Ui>>) -> McpServer {
        let instructions = host.prompt();
        let session = Arc::new(host.session());
        let skills = host
            .has_set(skills::SET)
            .then(|| Arc::new(Skills::new(session.clone())));
        McpServer {
            host,
            arrivals: Arrivals::new(session.clone()),
            session,
            skills,
            ui,
            instructions,
            rounds: Arc::default(),
            tasks: Arc::default(),
            logs: Arc::default(),
        }
    }

    /// Whether anybody can be asked on behalf of this request.
    fn interactive(&self, context: &RequestContext<RoleServer>) -> bool {
        match &self.ui {
            Some(ui) => ui.interactive(),
            None => answers_forms(context),
        }
    }

    /// The tools as MCP describes them: name, description, JSON Schema, and
    /// hints true to each tool — read-only, destructive (writers that replace
    /// what was there), idempotent (the same call twice changes nothing more)
    /// and open-world (the shell only, and only with the network). Where
    /// nobody can be asked, `ask` contributes nothing.
    pub fn list(&self, interactive: bool) -> Vec<Tool> {
        self.host
            .tools()
            .into_iter()
            .filter(|info| interactive || !needs_someone_to_answer(&info.set))
            .map(|info| {
                let mut hints = ToolAnnotations::new();
                hints.read_only_hint = Some(info.read_only);
                hints.destructive_hint = Some(info.destructive);
                hints.idempotent_hint = Some(info.idempotent);
                hints.open_world_hint = Some(info.open_world);
                if info.asks_first {
                    hints.title = Some(format!("{} (asks first)", info.name));
                }
                Tool::new(info.name, info.description, info.parameters).with_annotations(hints)
            })
            .collect()
    }

    /// What the model reads of a call: the notices of jobs that finished
    /// since the last result first, then the result.
    fn reply(&self, result: &CallResult) -> (String, bool) {
        let mut text = String::new();
        for notice in self.session.take_notices() {
            text.push_str(&notice);
            text.push_str("\n\n");
        }
        text.push_str(&result.text);
        (text, result.is_error)
    }

    /// Runs `answer` on the Skills extension off the reactor (it calls the
    /// `skills` component); its error text becomes an invalid-params error.
    async fn with_skills<T: Send + 'static>(
        &self,
        answer: impl FnOnce(&Skills) -> Result<T, String> + Send + 'static,
    ) -> Result<T, McpError> {
        let skills = self
            .skills
            .clone()
            .ok_or_else(|| McpError::invalid_params("this agent has no skills set: no skills are served", None))?;
        tokio::task::spawn_blocking(move || answer(&skills))
            .await
            .map_err(|e| McpError::internal_error(format!("the skills set failed: {e}"), None))?
            .map_err(|e| McpError::invalid_params(e, None))
    }
}

/// The text a retry gets when the question it answers is not the one the
/// call asks now.
fn changed_since_asked(tool: &str) -> String {
    format!(
        "{tool} was not executed: what it would do changed after the question was answered (the file or the question is not the one shown); nothing ran. Call it again to be asked anew."
    )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tasks();
        let capabilities = match self.skills {
            Some(_) => capabilities.enable_resources().enable_skills().build(),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("iota-host", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.list(self.interactive(&context))))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let queued = match self.arrivals.claim(&context.id) {
            Ok(queued) => queued,
            Err(busy) => return Ok(CallToolResult::error(vec![ContentBlock::text(busy.to_string())]).into()),
        };
        let name = request.name.to_string();
        let arguments = Arguments::from_value(serde_json::Value::Object(request.arguments.unwrap_or_default()));
        let args = arguments.text().to_string();
        let modern = modern(&context);
        if modern {
            self.logs.modern.store(true, Ordering::Relaxed);
        }
        // 2026-07-28: the call is replayed with the answers of earlier rounds.
        let replay = if self.ui.is_none() && modern && answers_forms(&context) {
            let answered = self
                .rounds
                .resume(
                    &name,
                    &args,
                    request.request_state.as_deref(),
                    request.input_responses.as_ref(),
                )
                .map_err(|e| McpError::invalid_params(e, None))?;
            Some(Arc::new(FormUi::new(Replay::new(answered))))
        } else if request.request_state.is_some() || request.input_responses.is_some() {
            return Err(McpError::invalid_params(
                "requestState and inputResponses answer an input request of protocol 2026-07-28; this server asked none in this session's protocol",
                None,
            ));
        } else {
            None
        };
        let ui: Arc<dyn Ui> = match (&self.ui, &replay) {
            (Some(ui), _) => ui.clone(),
            (None, Some(replay)) => replay.clone(),
            (None, None) if answers_forms(&context) => Arc::new(FormUi::new(PeerCarrier::new(
                context.clone(),
                tokio::runtime::Handle::current(),
            ))),
            (None, None) => Arc::new(NoUi),
        };
        let opted_in = modern && context.meta.log_level().is_some();
        let _logging = opted_in.then(|| OptIn::new(&self.logs));
        let progress = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                loop {
                    tokio::time::sleep(PROGRESS_EVERY).await;
                    let elapsed = started.elapsed();
                    let report = ProgressNotificationParam::new(token.clone(), elapsed.as_secs_f64().floor())
                        .with_message(format!("running for {}", crate::api::duration(elapsed)));
                    if peer.notify_progress(report).await.is_err() {
                        break;
                    }
                }
            })
        });
        let server = self.clone();
        // Tool calls block (Wasm instances, child processes, questions to the
        // client): keep them off the reactor. The wait for the call's turn
        // stays on it, holding no thread (`admission.rs`).
        let waited = async {
            // Planned once, off the reactor (the shell looks its command up
            // on PATH); the plan decides the call's place beside others and
            // is what runs at its turn.
            let session = self.session.clone();
            let tool = name.clone();
            let round = tokio::task::spawn_blocking(move || session.plan(vec![(&tool, arguments)]))
                .await
                .map_err(|e| McpError::internal_error(format!("the call could not be planned: {e}"), None))?;
            Ok::<_, McpError>((queued.turn(round.parallel()).await, round))
        };
        let admitted = tokio::select! {
            admitted = waited => admitted?,
            () = context.ct.cancelled() => {
                if let Some(progress) = progress {
                    progress.abort();
                }
                let text = format!("{name} was not run: its request was cancelled before its turn came");
                return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
            }
        };
        let (admitted, round) = admitted;
        let cancel = admitted.cancel().clone();
        let mut call = tokio::task::spawn_blocking(move || server.session.call_admitted(admitted, &ui, round));
        let finished = tokio::select! {
            finished = &mut call => finished,
            () = context.ct.cancelled() => {
                // The client gave up on this call: stop it (its command, its
                // component), then let it wind down; the session's other
                // calls go on.
                cancel.cancel();
                call.await
            }
        };
        if let Some(progress) = progress {
            progress.abort();
        }
        let result = finished.map_err(|e| McpError::internal_error(format!("the call failed: {e}"), None))?;
        match replay.as_ref().and_then(|r| r.carrier().stop()) {
            Some(Stop::Open(form, answered)) => {
                let asked = self
                    .rounds
                    .ask(&name, &args, answered, &form)
                    .map_err(|e| McpError::internal_error(e, None))?;
                return Ok(asked.into());
            }
            Some(Stop::Changed) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(changed_since_asked(&name))]).into());
            }
            None => {}
        }
        let (text, is_error) = self.reply(&result);
        if let Some(job) = result.job.as_deref().and_then(|id| self.session.job(id))
            && context.client_capabilities().is_some_and(|c| c.supports_tasks())
        {
            return Ok(self.tasks.create(job, &text).into());
        }
        let content = vec![ContentBlock::text(text)];
        Ok(if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        self.with_skills(|skills| skills.list()).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        self.with_skills(move |skills| skills.get(&request.uri).map(GetSkillResult::new))
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.with_skills(|skills| skills.resources()).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.with_skills(move |skills| skills.read(&request.uri).map(ReadResourceResponse::from))
            .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.tasks
            .get(&request.task_id)
            .map(GetTaskResult::new)
            .ok_or_else(|| McpError::invalid_params(format!("no task {} in this session", request.task_id), None))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match self.tasks.cancel(&request.task_id, &self.session.job_table()) {
            Some(_) => Ok(()),
            None => Err(McpError::invalid_params(
                format!("no task {} in this session", request.task_id),
                None,
            )),
        }
    }
}

/// A running request that opted in to log messages (2026-07-28).
struct OptIn(Arc<LogGate>);

impl OptIn {
    fn new(logs: &Arc<LogGate>) -> OptIn {
        logs.opted_in.fetch_add(1, Ordering::Relaxed);
        OptIn(logs.clone())
    }
}

impl Drop for OptIn {
    fn drop(&mut self) {
        self.0.opted_in.fetch_sub(1, Ordering::Relaxed);
    }
}

// The facade's MCP entry lives with the server, so the facade never
// imports its front end.
impl Host {
    /// Serves the tools over MCP on stdin/stdout until the client
    /// disconnects (the connection is one session). With `ask_client`,
    /// questions go to the client (elicitation, or 2026-07-28's multi
    /// round-trip requests) and `ask` is offered only to clients that can
    /// answer (build the host with an interactive [`Ui`] for `ask` to be
    /// loaded at all); otherwise to the [`Ui`] this host was built with.
    pub fn serve_mcp(self, ask_client: bool) -> anyhow::Result<()> {
        let ui = (!ask_client).then(|| self.ui().clone());
        serve(self, ui)
    }
}

/// Serves `host`'s tools on stdin/stdout until the client disconnects.
pub fn serve(host: Host, ui: Option<Arc<dyn Ui>>) -> anyhow::Result<()> {
    let server = McpServer::new(Arc::new(host), ui);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let (session, server_logs) = (server.session.clone(), server.logs.clone());
        let requests: Arc<dyn input::Requests> = server.arrivals.clone();
        let running = server
            .serve(input::guarded(tokio::io::stdin(), tokio::io::stdout(), requests))
            .await?;
        // A finished job's notice also goes out at once, as a log message
        // where the client asked for logs (see `LogGate`).
        let (peer, runtime) = (running.peer().clone(), tokio::runtime::Handle::current());
        let logs = server_logs;
        #[allow(deprecated)]
        session.on_notice(move |notice| {
            if !logs.open() {
                return;
            }
            use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
            let message = LoggingMessageNotificationParam::new(LoggingLevel::Info, notice.into());
            let peer = peer.clone();
            runtime.spawn(async move { peer.notify_logging_message(message.with_logger("iota-host")).await });
        });
        // SIGTERM, SIGINT and SIGHUP end the session as the client's leaving
        // does (jobs killed, placeholders and scratch removed), then the
        // process, with 128 + the signal's number.
        let signalled = tokio::select! {
            ended = running.waiting() => {
                ended?;
                None
            }
            number = ending_signal() => Some(number?),
        };
        if let Some(number) = signalled {
            tokio::task::spawn_blocking(move || session.session.end()).await?;
            std::process::exit(128 + number);
        }
        anyhow::Ok(())
    })
}

/// The number of the first of SIGTERM, SIGINT and SIGHUP this process gets.
#[cfg(unix)]
async fn ending_signal() -> std::io::Result<i32> {
    use nix::sys::signal::Signal;
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut int, mut hup) = (
        signal(SignalKind::terminate())?,
        signal(SignalKind::interrupt())?,
        signal(SignalKind::hangup())?,
    );
    let signal = tokio::select! {
        _ = term.recv() => Signal::SIGTERM,
        _ = int.recv() => Signal::SIGINT,
        _ = hup.recv() => Signal::SIGHUP,
    };
    Ok(signal as i32)
}

/// Windows' console events, numbered as the C runtime numbers the signals
/// they raise: Ctrl+C is SIGINT (2); Ctrl+Break, closing the console, logoff
/// and shutdown are SIGTERM's 15, as each asks the process to end.
#[cfg(windows)]
async fn ending_signal() -> std::io::Result<i32> {
    use tokio::signal::windows;
    let (mut c, mut brk, mut close, mut shutdown) = (
        windows::ctrl_c()?,
        windows::ctrl_break()?,
        windows::ctrl_close()?,
        windows::ctrl_shutdown()?,
    );
    Ok(tokio::select! {
        _ = c.recv() => 2,
        _ = brk.recv() => 15,
        _ = close.recv() => 15,
        _ = shutdown.recv() => 15,
    })
}
