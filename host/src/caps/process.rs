//! The `process` capability: sandboxed commands for toolsets granted it.
//!
//! Every command goes through the shell set's sandbox and approval rules
//! (`ShellToolset::run_for_component`): the agent's own `shell:` settings when
//! it has the set, the defaults (sandboxed, network blocked) otherwise.

use super::CallState;
use super::bindings::iota::toolset::process::{Command, Host, Output};
use std::time::Duration;

impl Host for CallState {
    fn run(&mut self, cmd: Command) -> Result<Output, String> {
        let Some(shell) = self.process.clone() else {
            return Err(format!("toolset {:?} is not granted the process capability", self.set));
        };
        let timeout = cmd
            .timeout_seconds
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(u64::from(s)));
        shell
            .run_for_component(&self.session, &self.ui, &cmd.line, cmd.cwd.as_deref(), timeout)
            .map(|(text, exit_code)| Output { text, exit_code })
    }
}
