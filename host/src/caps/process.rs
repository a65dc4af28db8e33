//! The `process` capability: sandboxed commands for toolsets granted it.
//!
//! Commands must go through the shell set's sandbox and approval rules; until
//! that sandbox is part of this build, every request is refused with a reason
//! rather than run unsandboxed.

use super::CallState;
use super::bindings::iota::toolset::process::{Command, Host, Output};

impl Host for CallState {
    fn run(&mut self, cmd: Command) -> Result<Output, String> {
        Err(format!(
            "failed to run: {}: the shell sandbox is not available in this build of iota-host, so toolset {:?} cannot run commands",
            cmd.line, self.set
        ))
    }
}
