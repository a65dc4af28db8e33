//! The per-call approval gate, run by the host before a gated call reaches
//! its toolset.
//!
//! Spec: "Approval is a per-call question. Interactively the answer is allow
//! once / allow for this session / deny; a denied call does not run and the
//! model is told so. A non-interactive -m run has nobody to ask and refuses
//! every gated call with: `<tool> was not executed: it requires interactive
//! approval, which is unavailable in this non-interactive run. Set the
//! toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run)
//! to permit it here.`"

use crate::caps::ui::{Approval as Answer, ApprovalRequest, Ui};
use crate::caps::writes::HeldWrite;
use crate::session::{CallCancel, Session};
use crate::toolset::{ApprovalRule, CallPlan, Cleared, Failure, Resolved, Toolset};
use std::path::{Component, Path, PathBuf};
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

/// What the model reads when the question waits for a retry of the call
/// (MCP 2026-07-28; the front end answers the client instead).
pub fn awaiting(tool: &str) -> String {
    format!("{tool} was not executed: it waits for the user's answer.")
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
    /// Not run (nobody to ask, or denied); the text is what the model reads.
    Refused(Failure, String),
    /// Not run yet: the question goes to the client, whose retry of the
    /// call carries the answer (MCP 2026-07-28). Nothing reaches the model.
    Awaiting,
}

impl Decision {
    /// Whether the call may run.
    pub fn runs(&self) -> bool {
        !matches!(self, Decision::Refused(..) | Decision::Awaiting)
    }

    /// The decision in the audit log's words.
    pub fn audit_word(&self) -> &'static str {
        match self {
            Decision::NotNeeded => "not needed",
            Decision::SessionAllowed => "allowed for this session",
            Decision::Allowed { for_session: false } => "allowed once",
            Decision::Allowed { for_session: true } => "allowed for this session (asked)",
            Decision::Refused(..) => "refused",
            Decision::Awaiting => "awaiting the user's answer",
        }
    }

    /// Whether the user allowed this call (now or for the session), as
    /// opposed to it needing no approval.
    pub fn asked(&self) -> bool {
        matches!(self, Decision::Allowed { .. } | Decision::SessionAllowed)
    }
}

/// What the gate made of one call: its decision, its header, and the call
/// itself when it may run.
pub struct Gated {
    /// How the gate decided.
    pub decision: Decision,
    /// The call's header (for a refusal's result).
    pub header: String,
    /// The call, cleared to run; none when it was refused or waits.
    pub cleared: Option<Cleared>,
}

/// Decides whether one call runs, on what its set resolved for it; the
/// writer's diff comes from the set's `preview`, computed read-only on the
/// held file. A write that lands where it changes what runs outside the
/// sandbox ([`crate::protected`]: a repository's `.git`, the root's `.iota`
/// or `HEAD`) is asked about every time: no auto-approve option and no
/// "allow for this session" covers it. The question shows
/// `resolved.question`, which names where the write really lands, so the
/// answer (and, over MCP's multi round-trip requests, its digest) covers
/// that too; the write then goes through the directory resolved, held open.
pub fn gate(
    set: &dyn Toolset,
    plan: &CallPlan,
    resolved: Resolved,
    session: &Arc<Session>,
    ui: &Arc<dyn Ui>,
    cancel: &Arc<CallCancel>,
) -> Gated {
    let protected = resolved.write.held().is_some_and(HeldWrite::protected);
    let decision = if !protected && resolved.approval == ApprovalRule::Never {
        Decision::NotNeeded
    } else if !protected && session.is_approved(set.name(), &plan.scope) {
        Decision::SessionAllowed
    } else if !ui.interactive() {
        Decision::Refused(Failure::NobodyToApprove, non_interactive_refusal(&plan.tool))
    } else {
        let diff = set.preview(session, plan, &resolved);
        let request = ApprovalRequest {
            tool: &plan.tool,
            header: &resolved.question,
            diff: diff.as_deref(),
        };
        // A protected write is asked about every time: "for this session" is once.
        let remember = (!protected).then_some((set.name(), plan.scope.as_str()));
        ask(session, ui, &request, remember)
    };
    let header = resolved.header.clone();
    let cleared = decision.runs().then(|| Cleared {
        resolved: Resolved {
            write: resolved.write.decided(),
            ..resolved
        },
        cancel: cancel.clone(),
        job: Default::default(),
    });
    Gated {
        decision,
        header,
        cleared,
    }
}

/// Decides whether a command a component runs (`process.run`) starts. Like
/// the shell's own calls it is asked about only when `unsandboxed_unasked`
/// (it would run outside the sandbox with `auto_run` off), and "allow for
/// this session" covers every later one. `set` is the shell set's name,
/// `header` is `shell LINE`.
pub fn gate_component_command(
    session: &Session,
    ui: &Arc<dyn Ui>,
    set: &str,
    header: &str,
    unsandboxed_unasked: bool,
) -> Result<(), String> {
    if !unsandboxed_unasked || session.is_approved(set, set) {
        return Ok(());
    }
    if !ui.interactive() {
        return Err(non_interactive_refusal(set));
    }
    let request = ApprovalRequest {
        tool: set,
        header,
        diff: None,
    };
    match ask(session, ui, &request, Some((set, set))) {
        Decision::Refused(_, why) => Err(why),
        Decision::Awaiting => Err(awaiting(set)),
        _ => Ok(()),
    }
}

/// Asks `request` and records "allow for this session" under `remember`
/// (set and scope) when given: the one place an approval question is put,
/// for the gate and for the commands a component runs.
pub fn ask(
    session: &Session,
    ui: &Arc<dyn Ui>,
    request: &ApprovalRequest<'_>,
    remember: Option<(&str, &str)>,
) -> Decision {
    let answer = ui.approve(request);
    if ui.suspended() {
        return Decision::Awaiting;
    }
    match (answer, remember) {
        (Answer::Once, _) | (Answer::Session, None) => Decision::Allowed { for_session: false },
        (Answer::Session, Some((set, scope))) => {
            session.approve(set, scope);
            Decision::Allowed { for_session: true }
        }
        (Answer::Deny, _) => Decision::Refused(Failure::Denied, denied(request.tool)),
    }
}

/// `header` with where a write lands when that is not the path as given
/// (`→ .git/config`), and a warning when it is protected.
pub fn annotate(header: &str, given: &str, lands: &Path, protected: bool) -> String {
    let mut text = header.to_string();
    if fold(Path::new(given)) != lands {
        text.push_str(&format!(" → {}", lands.display()));
    }
    if protected {
        text.push_str(" (protected: it changes what runs outside the sandbox)");
    }
    text
}

/// `header` of a shell command with where its `cwd` really is when a link
/// moves it (`→ .git`): shown, not protected — a sandboxed command cannot
/// write there anyway.
pub fn annotate_cwd(header: &str, root: &Path, cwd: &str) -> String {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let resolved = resolve(&root.join(cwd));
    let lands = resolved.strip_prefix(&root).map_or(resolved.clone(), Path::to_path_buf);
    annotate(header, cwd, &lands, false)
}

/// `path` with `.` and `..` folded, by the text alone.
fn fold(path: &Path) -> PathBuf {
    let mut folded = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    folded
}

/// `path` with `.` and `..` folded and the links of its longest existing
/// prefix followed: for showing where a command's directory is.
fn resolve(path: &Path) -> PathBuf {
    let folded = fold(path);
    let mut existing = folded.as_path();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return folded,
        }
    }
    let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    resolved.extend(rest.iter().rev());
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_names_where_a_write_lands() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        std::os::unix::fs::symlink(".git/config", root.join("a.txt")).unwrap();
        std::os::unix::fs::symlink("b.txt", root.join("c.txt")).unwrap();
        let shown = |path: &str| {
            let held =
                crate::caps::writes::HeldWrite::resolve(&crate::project::ProjectRoot::open(&root).unwrap(), path)
                    .unwrap();
            annotate(&format!("write_file {path}"), path, held.lands(), held.protected())
        };
        assert_eq!(
            shown("a.txt"),
            "write_file a.txt → .git/config (protected: it changes what runs outside the sandbox)"
        );
        assert_eq!(shown("c.txt"), "write_file c.txt → b.txt");
        assert_eq!(shown("b.txt"), "write_file b.txt");
        assert_eq!(shown("new/d.txt"), "write_file new/d.txt");
        assert_eq!(shown("./b.txt"), "write_file ./b.txt");
        assert_eq!(
            shown(".git/config"),
            "write_file .git/config (protected: it changes what runs outside the sandbox)"
        );
        std::os::unix::fs::symlink(root.join(".git"), root.join("d")).unwrap();
        assert_eq!(
            annotate_cwd("shell make", &root, "d"),
            "shell make → .git",
            "a linked cwd is named, not protected"
        );
        assert_eq!(annotate_cwd("shell make", &root, "."), "shell make");
    }
}
