//! What the shell sandbox costs: one `true` through the shell tool,
//! sandboxed and not, against `bash -c true` and bare bubblewrap, side by side.

use crate::report::Report;
use crate::timing::{median, median_command};
use iota_host::agent::AgentTools;
use iota_host::caps::ui::{NoUi, Ui};
use iota_host::config::Config;
use iota_host::engine::Engine;
use iota_host::round::Call;
use iota_host::session::Session;
use iota_host::shell::sandbox::{Policy, bwrap_args};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const RUNS: usize = 40;

fn shell_call(yaml: &str, root: &Path) -> Duration {
    let config = Config::parse(yaml, "bench", Path::new(".")).unwrap();
    let ui: Arc<dyn Ui> = Arc::new(NoUi);
    let (tools, _) =
        AgentTools::load(&Engine::new().unwrap(), &config, config.agent(None).unwrap(), root, &ui).unwrap();
    let session = Arc::new(Session::new());
    let call = Call {
        tool: "shell".into(),
        args: r#"{"command":"true"}"#.into(),
    };
    median(RUNS, || {
        let outcome = tools.call(&session, &ui, &call);
        assert!(!outcome.result.is_error, "{}", outcome.result.text);
    })
}

fn spawn(program: &str, args: &[&str]) -> Duration {
    median_command(RUNS, || {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    })
    .0
}

/// Runs the shell measurements into `report`.
pub fn run(report: &mut Report) {
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    report.table(&format!("shell: one `true`, medians of {RUNS}"));
    let bash = spawn("bash", &["-c", "true"]);
    let unsandboxed = shell_call(
        "agents:\n  b:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n",
        &root,
    );
    report.row("shell tool, unsandboxed", unsandboxed, "bash -c true", Some(bash));
    let bwrap_works = Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !bwrap_works {
        report.line("\n(bubblewrap missing or not permitted here: the sandboxed rows are left out)");
        return;
    }
    let sandboxed = shell_call("agents:\n  b:\n    tools:\n      shell:\n", &root);
    let bare = spawn("bwrap", &["--ro-bind", "/", "/", "bash", "-c", "true"]);
    // The exact command line the tool runs, without the tool: what the flags cost.
    let private_tmp = tempfile::tempdir().unwrap();
    let policy = Policy {
        root: root.clone(),
        private_tmp: private_tmp.path().to_path_buf(),
        cache: None,
        extra_writable: Vec::new(),
        visible: Vec::new(),
        network: false,
        protected: Vec::new(),
        hidden: Vec::new(),
    };
    let argv: Vec<OsString> = ["bash", "-c", "true"].map(OsString::from).to_vec();
    // Without the seccomp filter (its descriptors need the tool's spawn), so
    // the row against it is what the filter, the process bound and the tool
    // add together.
    let flags: Vec<String> = bwrap_args(&policy, &root, &[], &argv)
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let hardened = spawn("bwrap", &flags.iter().map(String::as_str).collect::<Vec<_>>());
    report.row(
        "shell tool, sandboxed",
        sandboxed,
        "bare bwrap --ro-bind / / bash -c true",
        Some(bare),
    );
    report.row(
        "shell tool, sandboxed",
        sandboxed,
        "bwrap with the tool's flags, no seccomp filter",
        Some(hardened),
    );
    report.row("shell tool, sandboxed", sandboxed, "bash -c true", Some(bash));
}
