//! The `process` capability: sandboxed commands for toolsets granted it.
//!
//! Every command goes through the shell set's sandbox and approval rules
//! (`ShellToolset::run_for_component`): the agent's own `shell:` settings when
//! it has the set, the defaults (sandboxed, network blocked) otherwise.

use super::CallState;
use super::ui::Ui;
use crate::session::{CallCancel, Session};
use crate::wit::iota::toolset::process::{Command, Host, Output};
use std::sync::Arc;
use std::time::Duration;

/// What runs a component's commands: the shell set, with its sandbox and
/// approval rules (`ShellToolset` implements it; the capability never names
/// the shell).
pub trait CommandRunner: Send + Sync {
    /// Runs `line` in `cwd` (relative to the root) for a component, waited
    /// for to the end within `timeout`; `cancel`, the calling tool call's own
    /// cancellation, stops it too. Returns the capped output and the exit
    /// code (none when it was killed), or why it did not run.
    fn run_for_component(
        &self,
        session: &Arc<Session>,
        ui: &Arc<dyn Ui>,
        line: &str,
        cwd: Option<&str>,
        timeout: Option<Duration>,
        cancel: Option<&CallCancel>,
    ) -> Result<(String, Option<i32>), String>;
}

impl Host for CallState {
    fn run(&mut self, cmd: Command) -> wasmtime::Result<Result<Output, String>> {
        let ran = self.run_command(cmd);
        // An approval the command needed was the user's time.
        self.answered();
        // A command may have written anywhere it can: nothing the session
        // kept of the tree is taken on trust afterwards.
        super::fs::WarmTree::clear_in(&self.session);
        // The command's approval was left for a retry of the call: nothing
        // after it may run on the refusal it got.
        if self.ui.suspended() {
            return Err(super::ui::suspension());
        }
        Ok(ran)
    }
}

impl CallState {
    fn run_command(&mut self, cmd: Command) -> Result<Output, String> {
        let Some(shell) = self.process.clone() else {
            return Err(format!("toolset {:?} is not granted the process capability", self.set));
        };
        // The command ends with the call at the latest: the component's own
        // deadline stops only its instance, not a process the host started.
        let left = self.stop.deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(format!("toolset {:?}: the call's time limit was reached", self.set));
        }
        let asked = cmd
            .timeout_seconds
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(u64::from(s)));
        let timeout = Some(asked.map_or(left, |asked| asked.min(left)));
        let ui: Arc<dyn Ui> = self.ui.clone();
        let cancel = self.stop.cancel().cloned();
        shell
            .run_for_component(
                &self.session,
                &ui,
                &cmd.line,
                cmd.cwd.as_deref(),
                timeout,
                cancel.as_deref(),
            )
            .map(|(text, exit_code)| Output { text, exit_code })
    }
}
