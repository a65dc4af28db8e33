//! The contract's host-side bindings, generated from `wit/toolset.wit`, and
//! the names the host gives its shared types. A leaf: every layer that
//! speaks the contract (the capabilities, the toolsets, the descriptions,
//! the front ends' questions) imports it, and it imports nothing of the
//! crate.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolset-host",
    // A question left for a retry of the call (MCP's multi round-trip
    // requests) stops the component where it asked.
    imports: {
        "iota:toolset/ui.choose": trappable,
        "iota:toolset/ui.confirm": trappable,
        "iota:toolset/process.run": trappable,
        // A set past its session state cap is stopped.
        "iota:toolset/session.set": trappable,
        // A call out of time stops while it waits for a task.
        "iota:toolset/workers.wait": trappable,
    },
});

/// Whether a tool asks before it runs (WIT `types.approval`; named for
/// what it is here, beside the user's answer, `caps::ui::Approval`).
pub use iota::toolset::types::Approval as ApprovalRule;
pub use iota::toolset::types::{Presentation, ToolResult, ToolSpec};

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
