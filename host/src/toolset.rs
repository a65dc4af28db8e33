//! What the host knows of a toolset, whatever runs it: its tools, and how one
//! call of them is planned, resolved, gated and run. Wasm components
//! ([`crate::wasm_toolset`]) and the native shell set implement it.
//!
//! A call goes through three steps, each done once and carried to the next:
//! [`Toolset::plan`] reads its arguments (nothing on the machine is looked
//! at: a plan can be made as the call arrives, before its turn);
//! [`Toolset::resolve`], at its turn, looks at the machine once and holds
//! what it found (the file a write lands in, the directory an iota line runs
//! in); the gate ([`crate::approval`]) turns the resolution into a
//! [`Cleared`] call or a refusal, and only a cleared call reaches
//! [`Toolset::invoke`].

use crate::caps::ui::Ui;
use crate::caps::writes::CallWrite;
use crate::description::Tool;
use crate::session::{CallCancel, Session};
use std::any::Any;
use std::sync::Arc;

pub use crate::wit::{ApprovalRule, Presentation, ToolResult, ToolSpec};

/// A loaded, configured toolset.
pub trait Toolset: Send + Sync {
    /// The set's name under `tools:`.
    fn name(&self) -> &str;
    /// The tools it offers with this configuration, checked and parsed
    /// when it was loaded.
    fn tools(&self) -> &[Tool];
    /// What it adds to the system prompt.
    fn prompt(&self) -> Option<String>;
    /// Reads one call of its tool `spec` from its arguments alone, touching
    /// nothing on the machine. `Err` is what the model reads when the
    /// arguments cannot make a call (the call then fails without running).
    fn plan(&self, spec: &Tool, args: Arguments) -> Result<CallPlan, String>;
    /// Looks at the machine for `plan`, once, just before the call is gated:
    /// what it finds is held and carried to the run, which decides nothing
    /// anew.
    fn resolve(&self, plan: &CallPlan) -> Resolved;
    /// What a call would change, computed without changing anything (the
    /// held file read only).
    fn preview(&self, session: &Arc<Session>, plan: &CallPlan, resolved: &Resolved) -> Option<String>;
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
    /// Runs one call the gate cleared.
    fn invoke(&self, session: &Arc<Session>, ui: &Arc<dyn Ui>, plan: &CallPlan, call: &Cleared) -> Ran;
}

/// Why a call failed, as data; the text the model reads is rendered where
/// the failure is found and does not depend on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// No enabled set offers the tool.
    UnknownTool,
    /// The host had too many calls in flight.
    Busy,
    /// The arguments make no call of the tool.
    InvalidArguments,
    /// It needs approval and nobody can be asked here.
    NobodyToApprove,
    /// The user denied it.
    Denied,
    /// It waits for the user's answer, which comes with a retry of the call.
    AwaitingAnswer,
    /// It was cancelled (the client, Esc).
    Cancelled,
    /// It ran past its time limit.
    TimeLimit,
    /// It ran past its memory limit.
    MemoryLimit,
    /// What it returned or printed was past its limit.
    OutputLimit,
    /// The component trapped (a panic) or was stopped at another of its
    /// bounds (handles, state, questions).
    Trapped,
    /// The host could not run it (the component cannot be instantiated, the
    /// command cannot be started).
    Host,
    /// The tool ran and reported its own error.
    Tool,
}

/// What running a call gave: its result and, when it failed, why.
#[derive(Debug, Clone)]
pub struct Ran {
    /// The result the model reads.
    pub result: ToolResult,
    /// Why it failed; none when it did not.
    pub failure: Option<Failure>,
}

impl Ran {
    /// A result as the tool gave it: an error result is the tool's own.
    pub fn from_tool(result: ToolResult) -> Ran {
        let failure = result.is_error.then_some(Failure::Tool);
        Ran { result, failure }
    }

    /// A call that failed for `failure`, with `result` as the model reads it.
    pub fn failed(failure: Failure, result: ToolResult) -> Ran {
        Ran {
            result: ToolResult {
                is_error: true,
                ..result
            },
            failure: Some(failure),
        }
    }
}

/// A call's arguments: the JSON text as the model wrote it (what a component
/// decodes, with its own texts for what is wrong) and the value it parses to,
/// parsed once. Shared, not copied: the round keeps them for the audit
/// while the set's plan holds them too, and a writer's content is in both.
#[derive(Debug, Clone)]
pub struct Arguments {
    text: Arc<str>,
    value: Option<Arc<serde_json::Value>>,
}

impl Arguments {
    /// `text`, parsed now (a text that is not JSON has no value).
    pub fn new(text: String) -> Arguments {
        let value = serde_json::from_str(&text).ok().map(Arc::new);
        Arguments {
            text: text.into(),
            value,
        }
    }

    /// `value` as an object (what an MCP client sends), its text made from it.
    pub fn from_value(value: serde_json::Value) -> Arguments {
        Arguments {
            text: value.to_string().into(),
            value: Some(Arc::new(value)),
        }
    }

    /// The text as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed value, when the text is JSON.
    pub fn value(&self) -> Option<&serde_json::Value> {
        self.value.as_deref()
    }
}

/// One call as its set read it from the arguments: what the round rule, the
/// gate, the audit and the run need, decided once.
pub struct CallPlan {
    /// The tool called.
    pub tool: String,
    /// Its arguments.
    pub args: Arguments,
    /// How a front end shows it.
    pub presentation: Presentation,
    /// Whether it may change files (a writer, any shell command): the
    /// session's warm tree starts again after it rather than trusting
    /// inotify alone.
    pub may_write: bool,
    /// Whether the tool may run beside the round's other calls.
    pub parallel: bool,
    /// Whether it may ask before it runs, as far as the arguments tell (its
    /// resolution asks no more than this, a protected write aside): with
    /// `parallel`, the round rule's input.
    pub may_ask: bool,
    /// What "allow for this session" of it covers: the tool, or for an iota
    /// line that exact line in that directory.
    pub scope: String,
    /// The set's own reading of the arguments, for its `resolve` and `invoke`.
    pub detail: Box<dyn Any + Send + Sync>,
}

impl CallPlan {
    /// The plan of a call whose set needs nothing of its own: the spec's
    /// rules, the tool as the scope.
    pub fn of(spec: &Tool, args: Arguments) -> CallPlan {
        CallPlan {
            tool: spec.name.clone(),
            args,
            presentation: spec.presentation,
            may_write: !spec.read_only,
            parallel: spec.parallel,
            may_ask: spec.approval == ApprovalRule::Required,
            scope: spec.name.clone(),
            detail: Box::new(()),
        }
    }

    /// The set's own reading, as the set stored it.
    pub fn detail<T: 'static>(&self) -> Option<&T> {
        self.detail.downcast_ref()
    }

    /// A call the host itself makes of a set's internal entry point (the
    /// Skills extension's `skills/list`): no model's tool call, so nothing
    /// to ask and nothing it may write ([`Cleared::host_entry`]).
    pub fn host_entry(entry: &str, args: Arguments) -> CallPlan {
        CallPlan {
            tool: entry.to_string(),
            args,
            presentation: Presentation::Group,
            may_write: false,
            parallel: false,
            may_ask: false,
            scope: entry.to_string(),
            detail: Box::new(()),
        }
    }
}

/// What a set found on the machine for one plan, at the call's turn, held
/// until the call has run.
pub struct Resolved {
    /// The call's header: `write_file a.txt`, `shell make (outside the sandbox)`.
    pub header: String,
    /// The header as the approval question shows it: where a write lands (or
    /// a command's directory is) when a link moves it, a protected
    /// destination marked.
    pub question: String,
    /// Whether it asks before it runs.
    pub approval: ApprovalRule,
    /// The file the call may write, held since it was resolved.
    pub write: CallWrite,
    /// The set's own findings (the shell's regime with its directory held).
    pub detail: Box<dyn Any + Send + Sync>,
}

impl Resolved {
    /// The set's own findings, as the set stored them.
    pub fn detail<T: 'static>(&self) -> Option<&T> {
        self.detail.downcast_ref()
    }
}

/// A call the gate let run: its resolution, the write made writable, and
/// the call's own cancellation. Only [`crate::approval::gate`] makes one, so
/// a run always acts on what was decided.
pub struct Cleared {
    pub(crate) resolved: Resolved,
    pub(crate) cancel: Arc<CallCancel>,
    /// The background job the call became, once it became one.
    pub(crate) job: std::sync::OnceLock<String>,
}

impl Cleared {
    /// The clearance of a [`CallPlan::host_entry`]: no write, no question.
    /// The host's own (the Skills extension's entry points), never a model's
    /// call's.
    pub(crate) fn host_entry() -> Cleared {
        Cleared {
            resolved: Resolved {
                header: String::new(),
                question: String::new(),
                approval: ApprovalRule::Never,
                write: CallWrite::Nothing,
                detail: Box::new(()),
            },
            cancel: Arc::default(),
            job: Default::default(),
        }
    }

    /// Notes that the call became the background job `id` (it goes on
    /// running after its result: a front end may follow it).
    pub fn became_job(&self, id: &str) {
        let _ = self.job.set(id.to_string());
    }

    /// What was resolved and decided.
    pub fn resolved(&self) -> &Resolved {
        &self.resolved
    }

    /// The file the call may write, now writable.
    pub fn write(&self) -> &CallWrite {
        &self.resolved.write
    }

    /// The call's own cancellation.
    pub fn cancel(&self) -> &Arc<CallCancel> {
        &self.cancel
    }
}
