//! The per-call approval gate, run by the host before a gated call reaches
//! its toolset.
//!
//! Spec: "Approval is a per-call question. Interactively the answer is allow
//! once / allow for this session / deny; a denied call does not run and the
//! model is told so. A non-interactive -m run has nobody to ask and refuses
//! every gated call with: <tool> was not executed: it requires interactive
//! approval, which is unavailable in this non-interactive run. Set the
//! toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run)
//! to permit it here."

use crate::caps::ui::{Approval as Answer, ApprovalRequest, Ui};
use crate::session::Session;
use crate::toolset::{Approval, ToolSpec, Toolset};
use std::sync::Arc;

/// What the model reads when nobody can approve a gated call.
pub fn non_interactive_refusal(tool: &str) -> String {
    format!(
        "{tool} was not executed: it requires interactive approval, which is unavailable in this non-interactive run. Set the toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run) to permit it here."
    )
}

/// What the model reads when the user denies a call.
pub fn denied(tool: &str) -> String {
    format!("{tool} was not executed: the user denied it.")
}

/// How the gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The tool needs no approval.
    NotNeeded,
    /// Allowed earlier for the rest of the session.
    SessionAllowed,
    /// The user allowed this call (`true`: and the rest of the session).
    Allowed {
        /// Whether the answer was "allow for this session".
        for_session: bool,
    },
    /// Not run; the text is what the model reads.
    Refused(String),
}

impl Decision {
    /// Whether the call may run.
    pub fn runs(&self) -> bool {
        !matches!(self, Decision::Refused(_))
    }
}

/// Decides whether one call runs. `header` is shown in the question; the
/// writer's diff comes from the toolset's `preview`, computed read-only.
pub fn gate(
    set: &Arc<dyn Toolset>,
    spec: &ToolSpec,
    session: &Arc<Session>,
    ui: &Arc<dyn Ui>,
    args: &str,
    header: &str,
) -> Decision {
    if set.approval(&spec.name, args) == Approval::Never {
        return Decision::NotNeeded;
    }
    let scope = set.session_scope(&spec.name, args);
    if session.is_approved(set.name(), &scope) {
        return Decision::SessionAllowed;
    }
    if !ui.interactive() {
        return Decision::Refused(non_interactive_refusal(&spec.name));
    }
    let diff = set.preview(session, &spec.name, args);
    let request = ApprovalRequest {
        tool: &spec.name,
        header,
        diff: diff.as_deref(),
    };
    match ui.approve(&request) {
        Answer::Once => Decision::Allowed { for_session: false },
        Answer::Session => {
            session.approve(set.name(), &scope);
            Decision::Allowed { for_session: true }
        }
        Answer::Deny => Decision::Refused(denied(&spec.name)),
    }
}
