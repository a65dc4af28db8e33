//! A round: the calls a model issues together, each planned once. Spec: "the
//! calls a round issues together run concurrently only when every one of
//! them says it may; results come back in call order regardless."
//!
//! The round rule lives here alone: [`Round::parallel`] decides, once, when
//! the round is planned, whether it may run beside other parallel calls (its
//! place in the session's line, `admission/turns.rs`) and whether its own
//! calls run side by side.

use crate::agent::AgentTools;
use crate::approval::{self, Decision};
use crate::audit;
use crate::builtin_sets::needs_someone_to_answer;
use crate::caps::ui::Ui;
use crate::session::{CallCancel, Session};
use crate::toolset::{Arguments, CallPlan, Failure, Presentation, Ran, ToolResult, Toolset};
use std::sync::Arc;

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
    /// The background job the call became, if it became one.
    pub job: Option<String>,
    /// Why it failed; none when it did not.
    pub failure: Option<Failure>,
}

impl Outcome {
    /// The outcome of calling a tool nobody offers.
    pub fn unknown_tool(tool: &str) -> Outcome {
        Outcome::not_run(tool, Failure::UnknownTool, format!("unknown tool: {tool}"))
    }

    /// The outcome of a call that never reached its tool: why, and the
    /// text the model reads.
    pub fn not_run(tool: &str, failure: Failure, why: String) -> Outcome {
        Outcome {
            tool: tool.to_string(),
            set: None,
            presentation: Presentation::Group,
            decision: Decision::NotNeeded,
            result: ToolResult::failure(tool, why),
            job: None,
            failure: Some(failure),
        }
    }
}

/// One call of a round: planned by its set, or already over (a tool nobody
/// offers, arguments that make no call).
enum Planned {
    Ready {
        set: Arc<dyn Toolset>,
        plan: CallPlan,
    },
    /// The outcome, and the arguments (for the audit).
    Over(Outcome, Arguments),
}

/// The calls a model issued together, each planned once, and whether they
/// may run in parallel.
pub struct Round {
    calls: Vec<Planned>,
    parallel: bool,
}

impl Round {
    /// Plans each call of `calls` (tool name, arguments) with the set that
    /// offers it, and decides the round rule for `session`.
    pub fn plan(tools: &AgentTools, session: &Session, calls: Vec<(&str, Arguments)>) -> Round {
        let calls: Vec<Planned> = calls
            .into_iter()
            .map(|(tool, args)| match tools.find(tool) {
                None => Planned::Over(Outcome::unknown_tool(tool), args),
                Some((set, spec)) => match set.plan(spec, args.clone()) {
                    Ok(plan) => Planned::Ready { set: set.clone(), plan },
                    Err(why) => Planned::Over(
                        Outcome {
                            set: Some(set.name().to_string()),
                            presentation: spec.presentation,
                            ..Outcome::not_run(tool, Failure::InvalidArguments, why)
                        },
                        args,
                    ),
                },
            })
            .collect();
        let parallel = calls.iter().all(|call| match call {
            // A call that may ask runs alone unless it was allowed for the
            // session already: questions are never asked side by side.
            Planned::Ready { set, plan } => {
                plan.parallel && (!plan.may_ask || session.is_approved(set.name(), &plan.scope))
            }
            Planned::Over(..) => true,
        });
        Round { calls, parallel }
    }

    /// Whether the round may run beside other parallel calls, and its calls
    /// side by side: every call may run in parallel and needs no question.
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// Runs the round, its turn come: concurrently when [`Self::parallel`]
    /// and there is more than one call, otherwise one after another (each
    /// resolved and gated just before it runs). Outcomes are in call order
    /// either way; each call is audited. `cancel` stops the round's calls.
    pub fn run(
        self,
        tools: &AgentTools,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        cancel: &Arc<CallCancel>,
    ) -> Vec<Outcome> {
        let run = |call: Planned| {
            let started = std::time::Instant::now();
            let (outcome, args) = match call {
                Planned::Over(outcome, args) => (outcome, args),
                Planned::Ready { set, plan } => (run_one(&set, &plan, session, ui, cancel), plan.args),
            };
            if let Some(log) = tools.audit() {
                log.record(&audit::Record {
                    set: outcome.set.as_deref(),
                    tool: &outcome.tool,
                    arguments: args.value(),
                    approval: outcome.decision.audit_word(),
                    duration: started.elapsed(),
                    is_error: outcome.result.is_error,
                    output_bytes: outcome.result.text.len(),
                });
            }
            outcome
        };
        if !(self.parallel && self.calls.len() > 1) {
            return self.calls.into_iter().map(run).collect();
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .calls
                .into_iter()
                .map(|call| scope.spawn(move || run(call)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a call thread panicked"))
                .collect()
        })
    }
}

/// One call at its turn: resolved by its set, through the gate, run if
/// cleared.
fn run_one(
    set: &Arc<dyn Toolset>,
    plan: &CallPlan,
    session: &Arc<Session>,
    ui: &Arc<dyn Ui>,
    cancel: &Arc<CallCancel>,
) -> Outcome {
    // Where nobody can answer, a set that only exists for somebody who can
    // (`ask`) offers nothing.
    if !ui.interactive() && needs_someone_to_answer(set.name()) {
        return Outcome::unknown_tool(&plan.tool);
    }
    let resolved = set.resolve(plan);
    let gated = approval::gate(set.as_ref(), plan, resolved, session, ui, cancel);
    let ran = match (&gated.decision, &gated.cleared) {
        (_, Some(cleared)) => set.invoke(session, ui, plan, cleared),
        (Decision::Awaiting, None) => Ran::failed(
            Failure::AwaitingAnswer,
            ToolResult::failure(&gated.header, approval::awaiting(&plan.tool)),
        ),
        (Decision::Refused(failure, text), None) => {
            Ran::failed(*failure, ToolResult::failure(&gated.header, text.clone()))
        }
        (_, None) => unreachable!("the gate clears every call it lets run"),
    };
    let job = gated.cleared.and_then(|cleared| cleared.job.into_inner());
    // A call that may have written: the session's warm tree starts again
    // rather than trusting inotify alone.
    if plan.may_write {
        crate::caps::fs::WarmTree::clear_in(session);
    }
    Outcome {
        tool: plan.tool.clone(),
        set: Some(set.name().to_string()),
        presentation: plan.presentation,
        decision: gated.decision,
        result: ran.result,
        job,
        failure: ran.failure,
    }
}
