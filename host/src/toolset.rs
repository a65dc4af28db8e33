//! What the host knows of a toolset, whatever runs it: its tools and how to
//! call them. Wasm components ([`crate::wasm_toolset`]) implement it; the
//! native shell set will too.

use crate::caps::ui::Ui;
use crate::session::Session;
use std::sync::Arc;

/// Whether a tool asks before it runs (WIT `types.approval`; named for
/// what it is here, beside the user's answer, [`crate::caps::ui::Approval`]).
pub use crate::caps::bindings::iota::toolset::types::Approval as ApprovalRule;
pub use crate::caps::bindings::iota::toolset::types::{Presentation, ToolResult, ToolSpec};

/// A loaded, configured toolset.
pub trait Toolset: Send + Sync {
    /// The set's name under `tools:`.
    fn name(&self) -> &str;
    /// The tools it offers with this configuration.
    fn tools(&self) -> &[ToolSpec];
    /// What it adds to the system prompt.
    fn prompt(&self) -> Option<String>;
    /// What a call would change, computed without changing anything.
    fn preview(&self, session: &Arc<Session>, tool: &str, args: &str) -> Option<String>;
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
    /// Whether its calls may reach beyond the machine (MCP's `openWorldHint`):
    /// only a shell with the network, or without a sandbox.
    fn open_world(&self) -> bool {
        false
    }
    /// Runs one call that has passed the approval gate; `asked` says whether
    /// the gate asked the user (or found it allowed for the session), so
    /// that a set whose approval depends on the moment (the shell's iota
    /// exception) runs under the regime the gate saw, not one decided anew.
    fn invoke(&self, session: &Arc<Session>, ui: &Arc<dyn Ui>, tool: &str, args: &str, asked: bool) -> ToolResult;
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
