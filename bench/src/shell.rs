//! What the shell sandbox costs: one `true` through the shell tool,
//! sandboxed and not, against `bash -c true` and bare bubblewrap, side by side.

use crate::report::Report;
use crate::timing::{median, median_command};
use iota_host::Host;
use iota_host::internals::{Policy, bwrap_args};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const RUNS: usize = 40;

fn shell_call(yaml: &str, root: &Path) -> Duration {
    let host = Host::builder().config_yaml(yaml).root(root).build().unwrap();
    let session = host.session();
    median(RUNS, || {
        let result = session.call_json("shell", r#"{"command":"true"}"#);
        assert!(!result.is_error, "{}", result.text);
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
    // The tool's command line without the tool, with the same mounts (the
    // root's protected paths, the hidden state), with and without the
    // seccomp filter: the first pair is what the filter costs, the tool
    // against the filtered line what the tool adds (spawn, output threads,
    // the pids cgroup it joins).
    let private_tmp = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let protected: Vec<std::path::PathBuf> = iota_host::internals::PROTECTED_AT_ROOT
        .iter()
        .map(|name| root.join(name))
        .collect();
    for path in &protected {
        std::fs::create_dir_all(path).unwrap();
    }
    let policy = Policy {
        root: root.clone(),
        pinned: None,
        private_tmp: private_tmp.path().to_path_buf(),
        cache: None,
        home_only: None,
        extra_writable: Vec::new(),
        visible: Vec::new(),
        network: false,
        protected,
        repositories: Vec::new(),
        hidden: vec![state.path().to_path_buf()],
    };
    let argv: Vec<OsString> = ["bash", "-c", "true"].map(OsString::from).to_vec();
    let flags = |fds: &[i32]| -> Vec<String> {
        bwrap_args(&policy, &root, fds, &argv)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    };
    let unfiltered = spawn("bwrap", &flags(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    let filtered = median_command(RUNS, || {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let fds = iota_host::internals::filter_fds(false).unwrap();
        let raw: Vec<i32> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
        let mut cmd = Command::new("bwrap");
        cmd.args(flags(&raw));
        // SAFETY: only fcntl on descriptors made before the fork; the
        // descriptors themselves live in the closure until the exec.
        unsafe {
            cmd.pre_exec(move || {
                for fd in &fds {
                    nix::libc::fcntl(fd.as_raw_fd(), nix::libc::F_SETFD, 0);
                }
                Ok(())
            });
        }
        cmd
    })
    .0;
    report.row(
        "bwrap, the tool's flags, with the seccomp filter",
        filtered,
        "the same without the filter",
        Some(unfiltered),
    );
    report.row(
        "shell tool, sandboxed",
        sandboxed,
        "bwrap with the tool's flags and filter",
        Some(filtered),
    );
    report.row(
        "shell tool, sandboxed",
        sandboxed,
        "bwrap with the tool's flags, no filter",
        Some(unfiltered),
    );
    report.row(
        "shell tool, sandboxed",
        sandboxed,
        "bare bwrap --ro-bind / / bash -c true",
        Some(bare),
    );
    report.row("shell tool, sandboxed", sandboxed, "bash -c true", Some(bash));
}
