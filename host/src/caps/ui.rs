//! The `ui` capability: the person at the keyboard.
//!
//! One trait, [`Ui`], with a backend chosen per session: [`NoUi`] where
//! nobody can be asked (non-interactive runs), [`ScriptedUi`] for tests and
//! demos (`--answers FILE`), and [`terminal::TerminalUi`] on a real terminal.
//! The approval gate uses the same trait, so every question a session asks
//! goes through one place.

#[cfg(feature = "mcp")]
pub mod elicitation;
pub mod scripted;
#[cfg(feature = "cli")]
pub mod terminal;

use super::CallState;
use super::bindings::iota::toolset::ui::{Answer, Host, Question};
pub use scripted::ScriptedUi;

/// The answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    Once,
    /// Run this call and every later call of the same tool in this session.
    Session,
    /// Do not run it.
    Deny,
}

/// What the user is asked to approve.
#[derive(Debug, Clone)]
pub struct ApprovalRequest<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The call's header, e.g. `write_file src/a.rs`.
    pub header: &'a str,
    /// What the call would change, when the toolset can say.
    pub diff: Option<&'a str>,
}

/// Questions to the user, however they reach them.
pub trait Ui: Send + Sync {
    /// Whether anybody can be asked.
    fn interactive(&self) -> bool;
    /// Asks allow once / allow for this session / deny.
    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval;
    /// Asks 1–4 questions; `None` when declined.
    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>>;
    /// Asks yes or no; `None` when declined.
    fn confirm(&self, question: &str, yes_label: &str, no_label: &str) -> Option<bool>;
    /// Whether a question was left for later: its answer arrives with a
    /// retry of the whole call (MCP 2026-07-28's multi round-trip
    /// requests). The call must then stop where it asked — nothing after
    /// the question may run on the placeholder answer it got.
    fn suspended(&self) -> bool {
        false
    }
}

/// The trap a component meets when its question was left for a retry.
pub fn suspension() -> wasmtime::Error {
    wasmtime::Error::msg("the call stops here: the question is answered when the client retries it")
}

/// Nobody to ask: every question is declined, every approval denied.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUi;

impl Ui for NoUi {
    fn interactive(&self) -> bool {
        false
    }
    fn approve(&self, _: &ApprovalRequest<'_>) -> Approval {
        Approval::Deny
    }
    fn choose(&self, _: &[Question]) -> Option<Vec<Answer>> {
        None
    }
    fn confirm(&self, _: &str, _: &str, _: &str) -> Option<bool> {
        None
    }
}

impl Host for CallState {
    fn interactive(&mut self) -> bool {
        self.ui.interactive()
    }

    fn choose(&mut self, questions: Vec<Question>) -> wasmtime::Result<Option<Vec<Answer>>> {
        self.asked = true;
        let answers = self.ui.choose(&questions);
        if self.ui.suspended() {
            return Err(suspension());
        }
        Ok(answers)
    }

    fn confirm(&mut self, question: String, yes_label: String, no_label: String) -> wasmtime::Result<Option<bool>> {
        self.asked = true;
        let answer = self.ui.confirm(&question, &yes_label, &no_label);
        if self.ui.suspended() {
            return Err(suspension());
        }
        Ok(answer)
    }
}
