//! What the host knows of a toolset, whatever runs it: its tools and how to
//! call them. Wasm components ([`crate::wasm_toolset`]) implement it; the
//! native shell set will too.

use crate::caps::ui::Ui;
use crate::caps::writes::CallWrite;
use crate::description::Tool;
use crate::session::{CallCancel, Session};
use std::sync::Arc;

/// Whether a tool asks before it runs (WIT `types.approval`; named for
/// what it is here, beside the user's answer, [`crate::caps::ui::Approval`]).
pub use crate::caps::bindings::iota::toolset::types::Approval as ApprovalRule;
pub use crate::caps::bindings::iota::toolset::types::{Presentation, ToolResult, ToolSpec};

/// A loaded, configured toolset.
pub trait Toolset: Send + Sync {
    /// The set's name under `tools:`.
    fn name(&self) -> &str;
    /// The tools it offers with this configuration, checked and parsed
    /// when it was loaded.
    fn tools(&self) -> &[Tool];
    /// What it adds to the system prompt.
    fn prompt(&self) -> Option<String>;
    /// What a call would change, computed without changing anything; `write`
    /// is the file it would write, held (read-only until decided).
    fn preview(&self, session: &Arc<Session>, tool: &str, args: &str, write: &CallWrite) -> Option<String>;
    /// Whether calls of its writing tools write a file through
    /// `iota:toolset/writes`, so the gate resolves and holds their `path`.
    fn writes_files(&self) -> bool {
        false
    }
    /// Whether [`Self::approval`] looks at the machine (files, PATH) for a
    /// call, rather than at the tool's spec alone: then an async front end
    /// asks it off the reactor.
    fn approval_looks_at_the_machine(&self) -> bool {
        false
    }
    /// Whether this call needs approval; by default the tool's spec decides.
    fn approval(&self, tool: &str, _args: &str) -> ApprovalRule {
        self.tools()
            .iter()
            .find(|t| t.name == tool)
            .map_or(ApprovalRule::Required, |t| t.approval)
    }
    /// What "allow for this session" of this call covers: by default the
    /// tool, every later call of it.
    fn session_scope(&self, tool: &str, _args: &str) -> String {
        tool.to_string()
    }
    /// The call's header before it runs (for the approval question), when the
    /// toolset can say without running it.
    fn header(&self, _tool: &str, _args: &str) -> Option<String> {
        None
    }
    /// What the person should know about how it will run, said once at
    /// start (a startup warning).
    fn notices(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether its calls may reach beyond the machine (MCP's `openWorldHint`):
    /// only a shell with the network, or without a sandbox.
    fn open_world(&self) -> bool {
        false
    }
    /// Runs one call that has passed the approval gate, with what the gate
    /// decided ([`Decided`]).
    fn invoke(&self, session: &Arc<Session>, ui: &Arc<dyn Ui>, tool: &str, args: &str, decided: &Decided)
    -> ToolResult;
}

/// What the gate decided about a call that runs, carried to the run so the
/// run acts on the decision and decides nothing anew.
#[derive(Debug, Clone, Default)]
pub struct Decided {
    /// Whether the gate asked the user (or found the call allowed for the
    /// session): a set whose approval depends on the moment (the shell's
    /// iota exception) runs under the regime the gate saw.
    pub asked: bool,
    /// The file the call may write, held since the gate resolved it.
    pub write: CallWrite,
    /// The call's own cancellation.
    pub cancel: Arc<CallCancel>,
}

impl ToolResult {
    /// A failed call whose header is the tool's name.
    pub fn failure(tool: &str, text: impl Into<String>) -> ToolResult {
        ToolResult {
            text: text.into(),
            is_error: true,
            header: tool.to_string(),
            diff: None,
        }
    }
}

impl Presentation {
    /// The word used in `--json` output and docs.
    pub fn word(self) -> &'static str {
        match self {
            Presentation::Group => "group",
            Presentation::Expanded => "expanded",
            Presentation::Surface => "surface",
        }
    }
}

impl ApprovalRule {
    /// The word used in `--json` output and docs.
    pub fn word(self) -> &'static str {
        match self {
            ApprovalRule::Never => "never",
            ApprovalRule::Required => "required",
        }
    }
}
