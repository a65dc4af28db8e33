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
use crate::caps::writes::{CallWrite, HeldWrite};
use crate::session::Session;
use crate::toolset::{ApprovalRule, ToolSpec, Toolset};
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
    /// Not run; the text is what the model reads.
    Refused(String),
    /// Not run yet: the question goes to the client, whose retry of the
    /// call carries the answer (MCP 2026-07-28). Nothing reaches the model.
    Awaiting,
}

impl Decision {
    /// Whether the call may run.
    pub fn runs(&self) -> bool {
        !matches!(self, Decision::Refused(_) | Decision::Awaiting)
    }

    /// Whether the user allowed this call (now or for the session), as
    /// opposed to it needing no approval.
    pub fn asked(&self) -> bool {
        matches!(self, Decision::Allowed { .. } | Decision::SessionAllowed)
    }
}

/// Decides whether one call runs. `header` is shown in the question; the
/// writer's diff comes from the toolset's `preview`, computed read-only on
/// `write`, the file the call would write, resolved and held before anything
/// is asked. A write that lands where it changes what runs outside the
/// sandbox ([`crate::protected`]: a repository's `.git`, the root's `.iota`
/// or `HEAD`) is asked about every time: no auto-approve option and no
/// "allow for this session" covers it.
#[allow(clippy::too_many_arguments)]
pub fn gate(
    set: &Arc<dyn Toolset>,
    spec: &ToolSpec,
    session: &Arc<Session>,
    ui: &Arc<dyn Ui>,
    args: &str,
    header: &str,
    write: &CallWrite,
    root: &Path,
) -> Decision {
    let protected = write.held().is_some_and(HeldWrite::protected);
    if !protected && set.approval(&spec.name, args) == ApprovalRule::Never {
        return Decision::NotNeeded;
    }
    let scope = set.session_scope(&spec.name, args);
    if !protected && session.is_approved(set.name(), &scope) {
        return Decision::SessionAllowed;
    }
    if !ui.interactive() {
        return Decision::Refused(non_interactive_refusal(&spec.name));
    }
    let diff = set.preview(session, &spec.name, args, write);
    // The question names where the write really lands, so the answer (and,
    // over MCP's multi round-trip requests, its digest) covers that too: a
    // link swapped in before the call or before its retry is seen. The write
    // then goes through the directory resolved here, held open.
    let header = match (write.held(), given(args, "path")) {
        (Some(held), Some(path)) => annotate(header, &path, held.lands(), protected),
        _ if spec.read_only => header.to_string(),
        _ => given(args, "cwd").map_or_else(|| header.to_string(), |cwd| annotate_cwd(header, root, &cwd)),
    };
    let request = ApprovalRequest {
        tool: &spec.name,
        header: &header,
        diff: diff.as_deref(),
    };
    // A protected write is asked about every time: "for this session" is once.
    let remember = (!protected).then_some((set.name(), scope.as_str()));
    ask(session, ui, &request, remember)
}

/// Decides whether a command a component runs (`process.run`) starts. Like
/// the shell's own calls it is asked about only when `unsandboxed_unasked`
/// (it would run outside the sandbox with `auto_run` off), and "allow for
/// this session" covers every later one. `header` is `shell LINE`.
pub fn gate_component_command(
    session: &Session,
    ui: &Arc<dyn Ui>,
    header: &str,
    unsandboxed_unasked: bool,
) -> Result<(), String> {
    let shell = crate::shell::NAME;
    if !unsandboxed_unasked || session.is_approved(shell, shell) {
        return Ok(());
    }
    if !ui.interactive() {
        return Err(non_interactive_refusal(shell));
    }
    let request = ApprovalRequest {
        tool: shell,
        header,
        diff: None,
    };
    match ask(session, ui, &request, Some((shell, shell))) {
        Decision::Refused(why) => Err(why),
        Decision::Awaiting => Err(awaiting(shell)),
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
        (Answer::Deny, _) => Decision::Refused(denied(request.tool)),
    }
}

/// The string argument `key` of a call's arguments.
fn given(args: &str, key: &str) -> Option<String> {
    let args = serde_json::from_str::<serde_json::Value>(args).ok()?;
    args.get(key)?.as_str().map(str::to_string)
}

/// `header` with where a write lands when that is not the path as given
/// (`→ .git/config`), and a warning when it is protected.
fn annotate(header: &str, given: &str, lands: &Path, protected: bool) -> String {
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
fn annotate_cwd(header: &str, root: &Path, cwd: &str) -> String {
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
