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

/// Paths under the root whose contents change what runs outside any
/// sandbox: git runs hooks and `core.fsmonitor` from `.git` (and finds a
/// bare repository at the root by its `HEAD`), and iota-host reads its
/// project config from `.iota`. The same list the sandbox keeps read-only.
pub const PROTECTED_DIRS: &[&str] = crate::shell::sandbox::PROTECTED_AT_ROOT;

/// Decides whether one call runs. `header` is shown in the question; the
/// writer's diff comes from the toolset's `preview`, computed read-only. A
/// call of a tool that may write, whose `path` lands in a [`PROTECTED_DIRS`]
/// directory of `root`, is asked about every time: no auto-approve option
/// and no "allow for this session" covers it.
pub fn gate(
    set: &Arc<dyn Toolset>,
    spec: &ToolSpec,
    session: &Arc<Session>,
    ui: &Arc<dyn Ui>,
    args: &str,
    header: &str,
    root: &Path,
) -> Decision {
    let target = (!spec.read_only).then(|| WriteTarget::of(root, args)).flatten();
    let protected = target.as_ref().is_some_and(|t| t.protected);
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
    let diff = set.preview(session, &spec.name, args);
    // The question names where the write really lands, so the answer (and,
    // over MCP's multi round-trip requests, its digest) covers that too: a
    // link swapped in before the call or before its retry is seen.
    let header = target.map_or_else(|| header.to_string(), |t| t.annotate(header));
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

/// Where a writer's `path` argument really lands: resolved as the file tools
/// resolve it (relative to the root), `..` folded, and every link in the
/// part that exists followed, so neither `a/../.git/hooks/x` nor a link to
/// `.git` gets past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTarget {
    /// The `path` argument as given.
    given: String,
    /// Where it lands, relative to the root (absolute when outside it).
    lands: PathBuf,
    /// Whether that is in a [`PROTECTED_DIRS`] directory of the root.
    pub protected: bool,
}

impl WriteTarget {
    /// The target of the call's `path` argument, or else of its `cwd` (a
    /// shell command's directory: named when a link moves it, never
    /// protected — a sandboxed command cannot write there anyway).
    pub fn of(root: &Path, args: &str) -> Option<WriteTarget> {
        let args = serde_json::from_str::<serde_json::Value>(args).ok()?;
        let (given, is_path) = match (args.get("path"), args.get("cwd")) {
            (Some(path), _) => (path.as_str()?.to_string(), true),
            (None, Some(cwd)) => (cwd.as_str()?.to_string(), false),
            (None, None) => return None,
        };
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let resolved = resolve(&root.join(&given));
        let protected = is_path && PROTECTED_DIRS.iter().any(|dir| resolved.starts_with(root.join(dir)));
        let lands = resolved.strip_prefix(&root).map_or(resolved.clone(), Path::to_path_buf);
        Some(WriteTarget {
            given,
            lands,
            protected,
        })
    }

    /// `header` with where the write lands when that is not the path as
    /// given (`→ .git/config`), and a warning when it is protected.
    pub fn annotate(&self, header: &str) -> String {
        let mut text = header.to_string();
        if fold(Path::new(&self.given)) != self.lands {
            text.push_str(&format!(" → {}", self.lands.display()));
        }
        if self.protected {
            text.push_str(" (protected: it changes what runs outside the sandbox)");
        }
        text
    }
}

/// Whether the call's `path` argument lands in a protected directory of
/// `root` (see [`WriteTarget`]).
#[cfg(test)]
fn writes_protected(root: &Path, args: &str) -> bool {
    WriteTarget::of(root, args).is_some_and(|t| t.protected)
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
/// prefix followed.
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
    fn writes_into_git_or_iota_are_found_however_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::os::unix::fs::symlink(root.join(".git"), root.join("g")).unwrap();
        let args = |path: &str| serde_json::json!({ "path": path }).to_string();
        for protected in [
            ".git/hooks/pre-commit",
            "./.git/config",
            "src/../.git/hooks/x",
            "g/hooks/pre-commit",
            ".iota/config.yaml",
            ".iota",
            &format!("{}/.iota/config.yaml", root.display()),
        ] {
            assert!(writes_protected(&root, &args(protected)), "{protected}");
        }
        for plain in ["src/a.rs", ".gitignore", ".iotarc", "git/x", "src/.git-notes"] {
            assert!(!writes_protected(&root, &args(plain)), "{plain}");
        }
        assert!(!writes_protected(&root, "{}"));
    }

    #[test]
    fn the_question_names_where_a_write_lands() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        std::os::unix::fs::symlink(root.join(".git/config"), root.join("a.txt")).unwrap();
        std::os::unix::fs::symlink("b.txt", root.join("c.txt")).unwrap();
        let shown = |path: &str| {
            let args = serde_json::json!({ "path": path }).to_string();
            WriteTarget::of(&root, &args)
                .unwrap()
                .annotate(&format!("write_file {path}"))
        };
        assert_eq!(
            shown("a.txt"),
            "write_file a.txt → .git/config (protected: it changes what runs outside the sandbox)"
        );
        assert_eq!(shown("c.txt"), "write_file c.txt → b.txt");
        assert_eq!(shown("b.txt"), "write_file b.txt");
        assert_eq!(shown("new/d.txt"), "write_file new/d.txt");
        assert_eq!(shown("./b.txt"), "write_file ./b.txt");
        std::os::unix::fs::symlink(root.join(".git"), root.join("d")).unwrap();
        let cwd = |cwd: &str| {
            let args = serde_json::json!({ "command": "make", "cwd": cwd }).to_string();
            WriteTarget::of(&root, &args).unwrap().annotate("shell make")
        };
        assert_eq!(cwd("d"), "shell make → .git", "a linked cwd is named, not protected");
        assert_eq!(cwd("."), "shell make");
        assert_eq!(
            shown(".git/config"),
            "write_file .git/config (protected: it changes what runs outside the sandbox)"
        );
    }
}
