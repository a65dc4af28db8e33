//! What the shell sandbox costs: one `true` through the shell tool,
//! sandboxed and not, against `bash -c true` and bare bubblewrap, side by side.

use crate::report::Report;
use crate::timing::{median, median_command, paired, run_timed};
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

/// Paired runs of this sandbox start, end to end.
const START_RUNS: usize = 30;

/// What a sandbox start costs, end to end as a user calls it (`iota-host
/// call shell`, a new process and session each, so every run pays the
/// home directory's search, the repository walk, the placeholders and the
/// scratch directory): each part against the same call without it, and
/// the cache overlay against a plain bind, by bubblewrap alone.
pub fn run_start(report: &mut Report, iota_host: &Path) {
    if !Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(base.path()).unwrap();
    // A home with toolchains and 60,000 dot-files, and two projects: a small
    // one, and one of 3,000 directories with 30 nested repositories and a
    // repository recording 30 submodules, none checked out.
    let home = base.join("home");
    for (i, dir) in [
        ".cargo/bin",
        ".rustup/toolchains/x/lib",
        ".config/app",
        ".local/share/app",
    ]
    .iter()
    .enumerate()
    {
        std::fs::create_dir_all(home.join(dir)).unwrap();
        for j in 0..15_000 {
            std::fs::write(home.join(dir).join(format!("f{i}-{j}")), "").unwrap();
        }
    }
    let small = base.join("small");
    std::fs::create_dir_all(&small).unwrap();
    git(&["init", "-q"], &small);
    let large = base.join("large");
    for d in 0..3000 {
        std::fs::create_dir_all(large.join(format!("d{}/e{}", d % 100, d))).unwrap();
    }
    git(&["init", "-q"], &large);
    for n in 0..30 {
        git(&["init", "-q"], &large.join(format!("d{n}/e{n}")));
    }
    let sub = base.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&["init", "-q"], &sub);
    git(&["commit", "-q", "--allow-empty", "-m", "s"], &sub);
    let head = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&sub)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for n in 0..30 {
        let cacheinfo = format!("160000,{},mod/m{n}", head.trim());
        git(&["update-index", "--add", "--cacheinfo", &cacheinfo], &large);
    }
    let config = |shell: &str| {
        let path = base.join(format!("config-{}.yaml", shell.len()));
        std::fs::write(&path, format!("agents:\n  a:\n    tools:\n      shell: {shell}\n")).unwrap();
        path
    };
    let call = |root: &Path, config: &Path| {
        let mut cmd = Command::new(iota_host);
        cmd.env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("XDG_STATE_HOME", base.join("state"))
            .arg("--root")
            .arg(root)
            .arg("--config")
            .arg(config)
            .args(["--non-interactive", "call", "shell", r#"{"command":"true"}"#]);
        cmd
    };
    let pair = |ours: (&Path, &Path), peer: (&Path, &Path)| {
        paired(
            START_RUNS,
            || {
                run_timed(&mut call(ours.0, ours.1));
            },
            || {
                run_timed(&mut call(peer.0, peer.1));
            },
        )
    };
    report.table(&format!(
        "sandbox start: `iota-host call shell true` end to end, a new session each, paired medians of {START_RUNS}"
    ));
    let (default, hidden, visible, off) = (
        config("{}"),
        config("{home: hidden}"),
        config("{home: visible}"),
        config("{sandbox: off, auto_run: true}"),
    );
    let (ours, peer) = pair((&small, &default), (&small, &off));
    report.row("sandboxed, small project", ours, "the same, `sandbox: off`", Some(peer));
    let (ours, peer) = pair((&small, &default), (&small, &hidden));
    report.row(
        "home: toolchains (default; their install trees searched)",
        ours,
        "home: hidden (nothing shown, nothing searched)",
        Some(peer),
    );
    let (ours, peer) = pair((&small, &visible), (&small, &hidden));
    report.row(
        "home: visible (a home of 60,000 entries; 45,000 searched)",
        ours,
        "home: hidden",
        Some(peer),
    );
    let (ours, peer) = pair((&large, &default), (&small, &default));
    report.row(
        "3,000 directories, 30 nested repositories, 30 submodules (walk, index, 90 pinned mounts)",
        ours,
        "small project",
        Some(peer),
    );
    // The cache as an overlay (bubblewrap 0.9+) against the project's own
    // directory bound in its place, by bubblewrap alone.
    let Some(overlay_bwrap) = std::env::var_os("IOTA_TEST_OVERLAY_BWRAP") else {
        report.line(
            "\n(no bubblewrap that mounts overlays: set IOTA_TEST_OVERLAY_BWRAP, as .ci/run does, for the overlay row)",
        );
        return;
    };
    let [lower, upper, work, own] = ["lower", "upper", "work", "own"].map(|d| {
        let dir = base.join("cache").join(d);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    });
    let bare = ["--unshare-user", "--ro-bind", "/", "/", "--dev", "/dev"];
    let (ours, peer) = paired(
        START_RUNS,
        || {
            run_timed(
                Command::new(&overlay_bwrap)
                    .args(bare)
                    .arg("--overlay-src")
                    .arg(&lower)
                    .arg("--overlay")
                    .args([&upper, &work, &lower])
                    .arg("true"),
            );
        },
        || {
            run_timed(
                Command::new(&overlay_bwrap)
                    .args(bare)
                    .arg("--bind")
                    .args([&own, &lower])
                    .arg("true"),
            );
        },
    );
    report.row(
        "bwrap 0.11, the cache as an overlay",
        ours,
        "the same, a directory bound in its place",
        Some(peer),
    );
}

fn git(args: &[&str], dir: &Path) {
    let status = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}
