//! The `ui` capability: the person at the keyboard.
//!
//! One trait, [`Ui`], with a backend chosen per session: [`NoUi`] where
//! nobody can be asked (non-interactive runs), [`ScriptedUi`] for tests and
//! demos (`--answers FILE`), and the command line's terminal (`cli/terminal.rs`) and the MCP
//! server's forms (`mcp/elicitation.rs`), which live with their front ends.
//! The approval gate uses the same trait, so every question a session asks
//! goes through one place.

pub mod scripted;

use super::CallState;
use crate::wit::iota::toolset::ui::{Answer, Host, Question};
pub use scripted::ScriptedUi;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// Questions one `choose` puts at most (the spec's `choose` takes 1–4).
pub const MAX_QUESTIONS: usize = 4;
/// Choices one question offers at most.
pub const MAX_CHOICES: usize = 64;
/// Bytes of text one question to the person holds at most (headers,
/// questions, labels and descriptions together).
pub const MAX_QUESTION_BYTES: usize = 64 << 10;

/// A question past what the host puts to a person at once: a component's
/// memory limit bounds what it hands over, not what a terminal or an MCP form
/// would make of a million choices.
#[derive(Debug)]
pub struct TooMuchToAsk;

impl std::fmt::Display for TooMuchToAsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "asked more than a person is asked at once ({MAX_QUESTIONS} questions of at most {MAX_CHOICES} choices, {} KiB of text)",
            MAX_QUESTION_BYTES >> 10
        )
    }
}

impl std::error::Error for TooMuchToAsk {}

/// `Ok` when `questions` are within the bounds, looked at before anything
/// is shown.
fn within_bounds(questions: &[Question]) -> Result<(), TooMuchToAsk> {
    if questions.len() > MAX_QUESTIONS || questions.iter().any(|q| q.choices.len() > MAX_CHOICES) {
        return Err(TooMuchToAsk);
    }
    let text: usize = questions
        .iter()
        .map(|q| {
            q.header.len()
                + q.question.len()
                + q.choices
                    .iter()
                    .map(|c| c.label.len() + c.description.as_ref().map_or(0, String::len))
                    .sum::<usize>()
        })
        .sum();
    if text > MAX_QUESTION_BYTES {
        return Err(TooMuchToAsk);
    }
    Ok(())
}

impl Host for CallState {
    fn interactive(&mut self) -> bool {
        self.ui.interactive()
    }

    fn choose(&mut self, questions: Vec<Question>) -> wasmtime::Result<Option<Vec<Answer>>> {
        within_bounds(&questions)?;
        self.asked = true;
        let answers = self.ui.choose(&questions);
        self.answered();
        if self.ui.suspended() {
            return Err(suspension());
        }
        Ok(answers)
    }

    fn confirm(&mut self, question: String, yes_label: String, no_label: String) -> wasmtime::Result<Option<bool>> {
        if question.len() + yes_label.len() + no_label.len() > MAX_QUESTION_BYTES {
            return Err(TooMuchToAsk.into());
        }
        self.asked = true;
        let answer = self.ui.confirm(&question, &yes_label, &no_label);
        self.answered();
        if self.ui.suspended() {
            return Err(suspension());
        }
        Ok(answer)
    }
}

impl CallState {
    /// Moves the call's deadline by the time the user took to answer since
    /// the last time: that time is theirs, not the call's.
    pub(crate) fn answered(&mut self) {
        self.stop.deadline += self.ui.take_answer_time();
    }
}

/// A call's questions to the user, timed: every question of `inner` (an
/// approval of a command too) adds the time it took to answer.
pub struct Timed {
    inner: Arc<dyn Ui>,
    answer_time_ns: AtomicU64,
}

impl Timed {
    /// Times the questions put through `inner`.
    pub fn new(inner: Arc<dyn Ui>) -> Arc<Timed> {
        Arc::new(Timed {
            inner,
            answer_time_ns: AtomicU64::new(0),
        })
    }

    /// The time spent answering since the last take.
    pub fn take_answer_time(&self) -> Duration {
        Duration::from_nanos(self.answer_time_ns.swap(0, Ordering::Relaxed))
    }

    fn timed<T>(&self, ask: impl FnOnce(&dyn Ui) -> T) -> T {
        let asked_at = Instant::now();
        let answer = ask(self.inner.as_ref());
        let took = u64::try_from(asked_at.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.answer_time_ns.fetch_add(took, Ordering::Relaxed);
        answer
    }
}

impl Ui for Timed {
    fn interactive(&self) -> bool {
        self.inner.interactive()
    }
    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        self.timed(|ui| ui.approve(request))
    }
    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>> {
        self.timed(|ui| ui.choose(questions))
    }
    fn confirm(&self, question: &str, yes_label: &str, no_label: &str) -> Option<bool> {
        self.timed(|ui| ui.confirm(question, yes_label, no_label))
    }
    fn suspended(&self) -> bool {
        self.inner.suspended()
    }
}
