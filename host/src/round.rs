//! A round: the calls a model issues together. Spec: "the calls a round issues
//! together run concurrently only when every one of them says it may; results
//! come back in call order regardless."

use crate::agent::AgentTools;
use crate::approval::{self, Decision};
use crate::caps::ui::Ui;
use crate::caps::writes::CallWrite;
use crate::session::{CallCancel, Session};
use crate::toolset::{ApprovalRule, Decided, Presentation, ToolResult};
use std::sync::Arc;

/// One call: a tool name and its JSON arguments text.
#[derive(Debug, Clone)]
pub struct Call {
    /// The tool's name.
    pub tool: String,
    /// The arguments object, as JSON text.
    pub args: String,
}

/// One call's outcome, in the round's call order.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The tool called.
    pub tool: String,
    /// The set that offers it (none for an unknown tool).
    pub set: Option<String>,
    /// How it is shown.
    pub presentation: Presentation,
    /// What the gate decided.
    pub decision: Decision,
    /// The result.
    pub result: ToolResult,
}

impl Outcome {
    /// The outcome of calling a tool nobody offers.
    pub fn unknown_tool(tool: &str) -> Outcome {
        Outcome::not_run(tool, format!("unknown tool: {tool}"))
    }

    /// The outcome of a call that never reached its tool, and why.
    pub fn not_run(tool: &str, why: String) -> Outcome {
        Outcome {
            tool: tool.to_string(),
            set: None,
            presentation: Presentation::Group,
            decision: Decision::NotNeeded,
            result: ToolResult::failure(tool, why),
        }
    }
}

impl AgentTools {
    /// Runs one call through the gate and its toolset, and audits it;
    /// `cancel` stops it alone.
    pub fn call(&self, session: &Arc<Session>, ui: &Arc<dyn Ui>, call: &Call, cancel: &Arc<CallCancel>) -> Outcome {
        let started = std::time::Instant::now();
        let outcome = self.call_unaudited(session, ui, call, cancel);
        if let Some(log) = self.audit() {
            log.record(&outcome, &call.args, started.elapsed());
        }
        outcome
    }

    fn call_unaudited(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        call: &Call,
        cancel: &Arc<CallCancel>,
    ) -> Outcome {
        let Some((set, spec)) = self.find(&call.tool) else {
            return Outcome::unknown_tool(&call.tool);
        };
        let header = set
            .header(&call.tool, &call.args)
            .unwrap_or_else(|| header_guess(&call.tool, &call.args));
        // A writing call's file is resolved once, here, and held open: the
        // preview reads it, the question names it, the write goes through it,
        // so no link changed in between moves the write (caps/writes.rs).
        let write = match serde_json::from_str(&call.args) {
            Ok(args) if !spec.read_only && set.writes_files() => CallWrite::resolve(self.project(), &args),
            _ => CallWrite::Nothing,
        };
        let decision = approval::gate(set, spec, session, ui, &call.args, &header, &write, self.root());
        let result = match &decision {
            Decision::Refused(text) => ToolResult {
                text: text.clone(),
                is_error: true,
                header,
                diff: None,
            },
            Decision::Awaiting => ToolResult {
                text: approval::awaiting(&call.tool),
                is_error: true,
                header,
                diff: None,
            },
            _ => {
                let decided = Decided {
                    asked: decision.asked(),
                    write: write.decided(),
                    cancel: cancel.clone(),
                };
                set.invoke(session, ui, &call.tool, &call.args, &decided)
            }
        };
        // A call that may have written (a writer, any shell command): the
        // session's warm tree starts again rather than trusting inotify alone.
        if !spec.read_only || set.name() == crate::shell::NAME {
            session.warm_tree().clear();
        }
        Outcome {
            tool: call.tool.clone(),
            set: Some(set.name().to_string()),
            presentation: spec.presentation,
            decision,
            result,
        }
    }

    /// Whether `call` may run beside others: its tool is parallel and needs
    /// no question asked.
    pub fn may_run_in_parallel(&self, session: &Arc<Session>, call: &Call) -> bool {
        self.find(&call.tool).is_some_and(|(set, spec)| {
            spec.parallel
                && (set.approval(&call.tool, &call.args) == ApprovalRule::Never
                    || session.is_approved(set.name(), &set.session_scope(&spec.name, &call.args)))
        })
    }

    /// Runs a round: concurrently when every call may run in parallel and
    /// none needs asking, otherwise one after another (each gated just before
    /// it runs). Outcomes are in call order either way. `all_parallel` is
    /// the caller's [`Self::may_run_in_parallel`] of every call, decided once
    /// where it also takes its place under the round rule.
    pub fn round(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        calls: &[Call],
        all_parallel: bool,
        cancel: &Arc<CallCancel>,
    ) -> Vec<Outcome> {
        let concurrent = calls.len() > 1 && all_parallel;
        if !concurrent {
            return calls.iter().map(|c| self.call(session, ui, c, cancel)).collect();
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = calls
                .iter()
                .map(|c| scope.spawn(move || self.call(session, ui, c, cancel)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a call thread panicked"))
                .collect()
        })
    }
}

/// The header shown in an approval question before the call has run: the
/// tool and its `path` (or `pattern`) argument, as the file tools head their
/// results.
fn header_guess(tool: &str, args: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(args).unwrap_or_default();
    match ["path", "pattern", "command"]
        .iter()
        .find_map(|k| value.get(k).and_then(|v| v.as_str()))
    {
        Some(subject) => format!("{tool} {subject}"),
        None => tool.to_string(),
    }
}
