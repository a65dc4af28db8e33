//! What the shell sandbox costs: one `true` through the shell tool,
//! sandboxed and not, against `bash -c true` and bare bubblewrap, measured
//! side by side in one run. Prints medians and ratios; asserts nothing.

mod common;

use common::{median, ms};
use iota_host::agent::AgentTools;
use iota_host::caps::ui::{NoUi, Ui};
use iota_host::config::Config;
use iota_host::engine::Engine;
use iota_host::round::Call;
use iota_host::session::Session;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const RUNS: usize = 40;

fn shell_call(yaml: &str, root: &Path) -> Duration {
    let config = Config::parse(yaml, "bench", Path::new(".")).unwrap();
    let (tools, _) = AgentTools::load(
        &Engine::new().unwrap(),
        &config,
        config.agent(None).unwrap(),
        root,
        &(Arc::new(NoUi) as Arc<dyn Ui>),
    )
    .unwrap();
    let session = Arc::new(Session::new());
    let ui: Arc<dyn Ui> = Arc::new(NoUi);
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
    median(RUNS, || {
        let status = Command::new(program).args(args).status().unwrap();
        assert!(status.success());
    })
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let bash = spawn("bash", &["-c", "true"]);
    let unsandboxed = shell_call(
        "agents:\n  b:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n",
        &root,
    );
    println!("# iota-host shell sandbox benchmark\n");
    println!("medians of {RUNS} runs of `true`; ratio = ours / peer\n");
    println!("| what | time | peer | peer time | ratio |");
    println!("|---|---|---|---|---|");
    println!(
        "| shell tool, unsandboxed | {} | bash -c true | {} | {:.2}x |",
        ms(unsandboxed),
        ms(bash),
        unsandboxed.as_secs_f64() / bash.as_secs_f64()
    );
    let bwrap_works = Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !bwrap_works {
        println!("\n(bubblewrap missing or not permitted here: sandboxed rows skipped)");
        return;
    }
    let bare = spawn("bwrap", &["--ro-bind", "/", "/", "bash", "-c", "true"]);
    let sandboxed = shell_call("agents:\n  b:\n    tools:\n      shell:\n", &root);
    println!(
        "| shell tool, sandboxed | {} | bare bwrap --ro-bind / / bash -c true | {} | {:.2}x |",
        ms(sandboxed),
        ms(bare),
        sandboxed.as_secs_f64() / bare.as_secs_f64()
    );
    println!(
        "| shell tool, sandboxed | {} | bash -c true | {} | {:.2}x |",
        ms(sandboxed),
        ms(bash),
        sandboxed.as_secs_f64() / bash.as_secs_f64()
    );
}
