//! The `ask` toolset: the model puts a decision to the user on an interactive
//! selector instead of asking in prose, without ending its turn. Two tools,
//! `choose` and `confirm`; no side effects, no approval, no configuration.
//! In a session where nobody can be asked it offers no tools at all.
//!
//! The validation (`choose.rs`, `confirm.rs`) is plain Rust; `component.rs`
//! puts the questions through the host's `ui` import.

#![deny(missing_docs)]

pub mod choose;
pub mod confirm;

#[cfg(target_arch = "wasm32")]
mod component;

use iota_toolset::{Presentation, ToolSpec};

/// What the model reads when the user declines (Esc).
pub const DECLINED: &str = "The user declined to answer.";

/// The tools, when somebody can be asked.
pub fn describe(interactive: bool) -> Vec<ToolSpec> {
    if !interactive {
        return Vec::new();
    }
    // Surface presentation, never in parallel: the user answers one surface at a time.
    let surface = |spec: ToolSpec| ToolSpec {
        parallel: false,
        presentation: Presentation::Surface,
        ..spec
    };
    vec![
        surface(ToolSpec::reader::<choose::Args>(choose::NAME)),
        surface(ToolSpec::reader::<confirm::Args>(confirm::NAME)),
    ]
}
