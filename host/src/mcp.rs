//! `iota-host serve`: the agent's tools over MCP on stdio, with the official
//! Rust SDK (rmcp). One connection is one session: approvals, the read ledger
//! and background jobs live as long as it does, and its jobs are killed when
//! it closes. Logging goes to stderr only; stdout is the protocol.

use crate::agent::AgentTools;
use crate::caps::ui::elicitation::ElicitationUi;
use crate::caps::ui::{NoUi, Ui};
use crate::round::Call;
use crate::session::Session;
use crate::toolset::{Approval, Presentation};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use std::sync::Arc;

pub mod input;

/// The set that only exists where somebody can answer.
const ASK_SET: &str = "ask";

/// The MCP server of one connection (clones share its session).
#[derive(Clone)]
pub struct McpServer {
    tools: Arc<AgentTools>,
    session: Arc<Session>,
    /// Questions go here when given (`--answers`, `--non-interactive`);
    /// otherwise to the client, by elicitation, when it supports it.
    ui: Option<Arc<dyn Ui>>,
    /// The round rule across concurrent requests: calls that may run in
    /// parallel share it, every other call holds it alone.
    round: Arc<std::sync::RwLock<()>>,
    /// The sets' system-prompt text, computed before the async runtime starts
    /// (synchronous WASI must not run on it).
    instructions: String,
}

impl McpServer {
    /// A server for `tools`, with a fresh session whose questions go to `ui`
    /// (or, without one, to the client).
    pub fn new(tools: Arc<AgentTools>, ui: Option<Arc<dyn Ui>>) -> McpServer {
        let instructions = tools.prompt();
        McpServer {
            tools,
            session: Arc::new(Session::new()),
            ui,
            round: Arc::default(),
            instructions,
        }
    }

    /// The UI for a request from `peer`.
    fn ui_for(&self, peer: &Peer<RoleServer>) -> Arc<dyn Ui> {
        match &self.ui {
            Some(ui) => ui.clone(),
            None if ElicitationUi::supported(peer) => {
                Arc::new(ElicitationUi::new(peer.clone(), tokio::runtime::Handle::current()))
            }
            None => Arc::new(NoUi),
        }
    }

    /// The tools as MCP describes them: name, description, JSON Schema, and
    /// hints (readers read-only, writers destructive). Where nobody can be
    /// asked, `ask` contributes nothing.
    pub fn list(&self, interactive: bool) -> Vec<Tool> {
        self.tools
            .tools()
            .filter(|(set, _)| interactive || set.name() != ASK_SET)
            .map(|(_, spec)| {
                let schema: JsonObject = serde_json::from_str(&spec.parameters).unwrap_or_default();
                let mut hints = ToolAnnotations::new();
                hints.read_only_hint = Some(spec.read_only);
                hints.destructive_hint = Some(!spec.read_only && spec.presentation == Presentation::Expanded);
                hints.open_world_hint = Some(spec.name == crate::shell::NAME);
                if spec.approval == Approval::Required {
                    hints.title = Some(format!("{} (asks first)", spec.name));
                }
                Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(schema)).with_annotations(hints)
            })
            .collect()
    }

    /// Runs one call; notices of jobs that finished since the last result come first.
    pub fn call(&self, ui: &Arc<dyn Ui>, name: &str, arguments: Option<JsonObject>) -> (String, bool) {
        if !ui.interactive() && self.tools.find(name).is_some_and(|(set, _)| set.name() == ASK_SET) {
            return (format!("unknown tool: {name}"), true);
        }
        let args = serde_json::Value::Object(arguments.unwrap_or_default()).to_string();
        let call = Call {
            tool: name.to_string(),
            args,
        };
        let outcome = if self.tools.may_run_in_parallel(&self.session, &call) {
            let _shared = self.round.read().unwrap_or_else(|e| e.into_inner());
            self.tools.call(&self.session, ui, &call)
        } else {
            let _alone = self.round.write().unwrap_or_else(|e| e.into_inner());
            self.tools.call(&self.session, ui, &call)
        };
        let mut text = String::new();
        for notice in self.session.jobs().take_notices() {
            text.push_str(&notice);
            text.push_str("\n\n");
        }
        text.push_str(&outcome.result.text);
        (text, outcome.result.is_error)
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("iota-host", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let interactive = self.ui_for(&context.peer).interactive();
        Ok(ListToolsResult::with_all_items(self.list(interactive)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let server = self.clone();
        let name = request.name.to_string();
        let ui = self.ui_for(&context.peer);
        // Tool calls block (Wasm instances, child processes, questions to the
        // client): keep them off the reactor.
        let mut task = tokio::task::spawn_blocking(move || server.call(&ui, &name, request.arguments));
        let finished = tokio::select! {
            finished = &mut task => finished,
            () = context.ct.cancelled() => {
                // The client gave up on this call: stop its command, then let it wind down.
                self.session.cancel_foreground();
                task.await
            }
        };
        let (text, is_error) = finished.map_err(|e| McpError::internal_error(format!("the call failed: {e}"), None))?;
        let content = vec![ContentBlock::text(text)];
        Ok(if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

/// Serves `tools` on stdin/stdout until the client disconnects.
pub fn serve(tools: AgentTools, ui: Option<Arc<dyn Ui>>) -> anyhow::Result<()> {
    let server = McpServer::new(Arc::new(tools), ui);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let session = server.session.clone();
        let running = server
            .serve(input::guarded(tokio::io::stdin(), tokio::io::stdout()))
            .await?;
        // A finished job's notice also goes out at once, as a log message
        // (deprecated by SEP-2577 in the newest protocol, still what clients read).
        let (peer, runtime) = (running.peer().clone(), tokio::runtime::Handle::current());
        #[allow(deprecated)]
        session.jobs().listen(Box::new(move |notice| {
            use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
            let message = LoggingMessageNotificationParam::new(LoggingLevel::Info, notice.into());
            let peer = peer.clone();
            runtime.spawn(async move { peer.notify_logging_message(message.with_logger("iota-host")).await });
        }));
        running.waiting().await?;
        anyhow::Ok(())
    })
}
